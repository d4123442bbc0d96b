/* SPDX-License-Identifier: MIT */
/*
 * x86-64 instruction length and operand decoding (64-bit mode only), after
 * the opcode maps of the Intel SDM volume 2, appendix A.  It knows which
 * opcodes take a ModRM byte and how long their immediates are; it does not
 * validate every reserved encoding, which a compiler never emits anyway.
 */
#include "x86insn.h"

#include <string.h>

#define MAX_LEN 15

/* Reads bytes of one instruction without running past the buffer or 15 bytes. */
struct cursor {
    const uint8_t *p;
    size_t n, pos;
};

static bool take(struct cursor *c, unsigned k, int64_t *val)
{
    uint64_t v = 0;

    if (c->pos + k > c->n || c->pos + k > MAX_LEN)
        return false;
    for (unsigned i = 0; i < k; i++)
        v |= (uint64_t)c->p[c->pos + i] << (8 * i);
    c->pos += k;
    if (val) /* sign-extend: immediates and displacements are signed */
        *val = k < 8 ? (int64_t)(v << (64 - 8 * k)) >> (64 - 8 * k) : (int64_t)v;
    return true;
}

/* Immediate sizes; IMM_Z is 4 bytes, or 2 with an operand-size prefix. */
enum { IMM_Z = 0x10, IMM_BAD = 0x20 };

static bool onebyte_has_modrm(uint8_t op)
{
    if (op < 0x40)
        return (op & 7) < 4;
    switch (op) {
    case 0x63: case 0x69: case 0x6b: case 0xc0: case 0xc1: case 0xc6: case 0xc7:
    case 0xf6: case 0xf7: case 0xfe: case 0xff:
        return true;
    default:
        return (op >= 0x80 && op <= 0x8f) || (op >= 0xd0 && op <= 0xd3) || (op >= 0xd8 && op <= 0xdf);
    }
}

static unsigned onebyte_imm(uint8_t op, bool rex_w, uint8_t modrm_reg)
{
    if (op < 0x40) {
        switch (op & 7) {
        case 4: return 1;
        case 5: return IMM_Z;
        case 6: case 7: return op == 0x0f ? 0 : IMM_BAD; /* push/pop seg, daa...: not in 64-bit mode */
        default: return 0;
        }
    }
    if ((op >= 0x70 && op <= 0x7f) || (op >= 0xb0 && op <= 0xb7) || (op >= 0xe0 && op <= 0xe7))
        return 1;
    if (op >= 0xb8 && op <= 0xbf)
        return rex_w ? 8 : IMM_Z;
    switch (op) {
    case 0x6a: case 0x6b: case 0x80: case 0x83: case 0xa8: case 0xc0: case 0xc1:
    case 0xc6: case 0xcd: case 0xeb:
        return 1;
    case 0x68: case 0x69: case 0x81: case 0xa9: case 0xc7:
        return IMM_Z;
    case 0xe8: case 0xe9:
        return 4;
    case 0xc2: case 0xca:
        return 2;
    case 0xc8:
        return 3;
    case 0xa0: case 0xa1: case 0xa2: case 0xa3:
        return 8;
    case 0xf6:
        return modrm_reg < 2 ? 1 : 0;
    case 0xf7:
        return modrm_reg < 2 ? IMM_Z : 0;
    case 0x60: case 0x61: case 0x82: case 0x9a: case 0xce: case 0xd4: case 0xd5: case 0xd6: case 0xea:
        return IMM_BAD;
    default:
        return 0;
    }
}

static bool twobyte_has_modrm(uint8_t op)
{
    switch (op) {
    case 0x05: case 0x06: case 0x07: case 0x08: case 0x09: case 0x0b: case 0x0e:
    case 0x77: case 0xa0: case 0xa1: case 0xa2: case 0xa8: case 0xa9: case 0xaa:
        return false;
    default:
        return !(op >= 0x30 && op <= 0x37) && !(op >= 0x80 && op <= 0x8f) && !(op >= 0xc8 && op <= 0xcf);
    }
}

/* Immediates of the 0F map, also used for its VEX/EVEX forms. */
static unsigned twobyte_imm(uint8_t op)
{
    if (op >= 0x80 && op <= 0x8f)
        return 4;
    switch (op) {
    case 0x0f: case 0x70: case 0x71: case 0x72: case 0x73: case 0xa4: case 0xac: case 0xba:
    case 0xc2: case 0xc4: case 0xc5: case 0xc6:
        return 1;
    default:
        return 0;
    }
}

static bool decode_modrm(struct cursor *c, struct x86_insn *in, unsigned rex)
{
    int64_t b, sib;

    if (!take(c, 1, &b))
        return false;
    in->has_modrm = true;
    in->mod = (uint8_t)b >> 6;
    in->reg = (((uint8_t)b >> 3) & 7) | ((rex & 4) << 1);
    in->rm = ((uint8_t)b & 7) | ((rex & 1) << 3);
    if (in->mod == 3)
        return true;
    if ((b & 7) == 4) {
        if (!take(c, 1, &sib))
            return false;
        unsigned idx = (((uint8_t)sib >> 3) & 7) | ((rex & 2) << 2);
        in->index = idx == X86_RSP ? X86_NOREG : (uint8_t)idx;
        in->base = ((uint8_t)sib & 7) | ((rex & 1) << 3);
        if ((sib & 7) == 5 && in->mod == 0) {
            in->base = X86_NOREG;
            return take(c, 4, &in->disp);
        }
    } else if ((b & 7) == 5 && in->mod == 0) {
        return take(c, 4, &in->disp); /* RIP-relative: no base register */
    } else {
        in->base = in->rm;
    }
    return in->mod == 0 || take(c, in->mod == 1 ? 1 : 4, &in->disp);
}

/* VEX (C4, C5) and EVEX (62) prefixes: every such instruction has a ModRM byte. */
static bool decode_vex(struct cursor *c, struct x86_insn *in, uint8_t esc)
{
    int64_t p0, p1, p2, op;
    unsigned rex;

    in->vex = true;
    if (!take(c, 1, &p0))
        return false;
    rex = ((uint8_t)p0 & 0x80) ? 0 : 4;
    if (esc == 0xc5) {
        in->map = 1;
    } else {
        if (!take(c, 1, &p1))
            return false;
        rex |= ((uint8_t)p0 & 0x20) ? 0 : 1;
        in->rex_w = (uint8_t)p1 & 0x80;
        in->map = (uint8_t)p0 & (esc == 0x62 ? 7 : 0x1f);
        if (esc == 0x62 && !take(c, 1, &p2))
            return false;
    }
    if (!take(c, 1, &op))
        return false;
    in->op = (uint8_t)op;
    if (in->map == 1 && in->op == 0x77 && esc != 0x62)
        return true; /* vzeroupper, vzeroall */
    if (!decode_modrm(c, in, rex))
        return false;
    if (in->map == 3 || (in->map == 1 && twobyte_imm(in->op) == 1))
        return take(c, 1, &in->imm);
    return true;
}

static bool decode_legacy(struct cursor *c, struct x86_insn *in, unsigned rex, bool opsize, uint8_t op)
{
    unsigned imm;
    int64_t b;

    in->op = op;
    if (op == 0x0f) {
        if (!take(c, 1, &b))
            return false;
        in->map = 1;
        in->op = (uint8_t)b;
        if (in->op == 0x38 || in->op == 0x3a) {
            in->map = in->op == 0x38 ? 2 : 3;
            if (!take(c, 1, &b))
                return false;
            in->op = (uint8_t)b;
        }
    }
    bool modrm = in->map == 0 ? onebyte_has_modrm(in->op) : in->map > 1 || twobyte_has_modrm(in->op);
    if (modrm && !decode_modrm(c, in, rex))
        return false;
    if (in->map == 0)
        imm = onebyte_imm(in->op, in->rex_w, in->reg & 7);
    else
        imm = in->map == 3 ? 1 : in->map == 2 ? 0 : twobyte_imm(in->op);
    if (imm == IMM_BAD)
        return false;
    if (imm == IMM_Z)
        imm = opsize && !in->rex_w ? 2 : 4;
    if (imm == 3) /* ENTER iw, ib */
        return take(c, 2, &in->imm) && take(c, 1, NULL);
    return imm == 0 || take(c, imm, &in->imm);
}

unsigned x86_decode(const uint8_t *p, size_t n, struct x86_insn *in)
{
    struct cursor c = { p, n, 0 };
    unsigned rex = 0;
    bool opsize = false;
    int64_t b;

    memset(in, 0, sizeof *in);
    in->base = in->index = X86_NOREG;
    for (;;) {
        if (!take(&c, 1, &b))
            return 0;
        uint8_t op = (uint8_t)b;
        if (op == 0x66 || op == 0x67 || op == 0xf0 || op == 0xf2 || op == 0xf3 || op == 0x2e ||
            op == 0x36 || op == 0x3e || op == 0x26 || op == 0x64 || op == 0x65) {
            opsize |= op == 0x66;
            rex = 0; /* a REX prefix counts only right before the opcode */
            continue;
        }
        if ((op & 0xf0) == 0x40) {
            rex = op & 0xf;
            continue;
        }
        in->rex_w = rex & 8;
        bool ok = (op == 0xc4 || op == 0xc5 || op == 0x62) ? decode_vex(&c, in, op)
                                                           : decode_legacy(&c, in, rex, opsize, op);
        if (!ok)
            return 0;
        in->len = (unsigned)c.pos;
        return in->len;
    }
}
