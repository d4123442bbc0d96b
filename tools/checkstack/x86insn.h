/* SPDX-License-Identifier: MIT */
/*
 * A small x86-64 instruction decoder: lengths and operands, no mnemonics.
 * checkstack sweeps functions instruction by instruction with it, so that
 * it matches whole instructions (never byte patterns inside immediates) when
 * it looks for stack-pointer arithmetic and stack probes.
 */
#ifndef VMS_X86INSN_H
#define VMS_X86INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Register numbers as the hardware encodes them (REX bits included). */
enum { X86_RAX = 0, X86_RCX, X86_RDX, X86_RBX, X86_RSP, X86_RBP, X86_RSI, X86_RDI, X86_R11 = 11 };
enum { X86_NOREG = 0xff };

struct x86_insn {
    unsigned len;
    unsigned map;        /* 0: one-byte opcodes, 1: 0F, 2: 0F 38, 3: 0F 3A (VEX/EVEX: their map) */
    uint8_t op;
    bool vex;            /* VEX or EVEX encoded */
    bool rex_w;          /* 64-bit operand size */
    bool has_modrm;
    uint8_t mod, reg, rm; /* ModRM fields; reg and rm include REX.R and REX.B */
    uint8_t base, index; /* memory operand registers, X86_NOREG if absent or RIP-relative */
    int64_t disp;
    int64_t imm;         /* sign-extended immediate (first one for ENTER) */
};

/*
 * Decodes the instruction at p, of which n bytes are readable.  Returns its
 * length, or 0 for bytes that are not a valid 64-bit-mode instruction or
 * an instruction cut off by the end of the buffer.
 */
unsigned x86_decode(const uint8_t *p, size_t n, struct x86_insn *in);

/* True if the operand rm is the register r (ModRM mod == 3). */
static inline bool x86_rm_is_reg(const struct x86_insn *in, unsigned r)
{
    return in->has_modrm && in->mod == 3 && in->rm == r;
}

/* True if the instruction has a memory operand addressed from register r. */
static inline bool x86_mem_base(const struct x86_insn *in, unsigned r)
{
    return in->has_modrm && in->mod != 3 && in->base == r;
}

#endif
