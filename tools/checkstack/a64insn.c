/* SPDX-License-Identifier: MIT */
/* checkstack's aarch64 matcher (a64insn.h). */
#include "a64insn.h"

#include <string.h>

static uint32_t word(const uint8_t *p)
{
    uint32_t w;

    memcpy(&w, p, sizeof w);
    return w;
}

static int64_t sext(uint64_t v, unsigned bits)
{
    return (int64_t)(v << (64 - bits)) >> (64 - bits);
}

int64_t a64_prologue_frame(const uint8_t *code, size_t size)
{
    size_t i = 0;
    int64_t frame;
    uint32_t w;

    if (!code)
        return 0;
    /* paciasp, bti c */
    while (i + 4 <= size && ((w = word(code + i)) == 0xd503233f || w == 0xd503245f))
        i += 4;
    if (i + 12 > size || ((w = word(code + i)) & 0xffc07fff) != 0xa9807bfd) /* stp x29, x30, [sp, #-N]! */
        return 0;
    frame = -sext((w >> 15) & 0x7f, 7) * 8;
    if (word(code + i + 4) != 0x910003fd) /* mov x29, sp */
        return frame;
    w = word(code + i + 8);
    if ((w & 0xff8003ff) == 0xd10003ff) /* sub sp, sp, #imm{, lsl 12} */
        frame += (int64_t)((w >> 10) & 0xfff) << ((w >> 22) & 1 ? 12 : 0);
    return frame;
}

/* Whether one of the few instructions before at loaded register r with a constant (movz/movn/movk). */
static bool constant_in(const uint8_t *code, size_t at, unsigned r)
{
    for (size_t back = 1; back <= 4 && back * 4 <= at; back++) {
        uint32_t w = word(code + at - back * 4);
        if ((w & 0x1f) != r)
            continue;
        return (w & 0x1f800000) == 0x12800000; /* move wide immediate, 32 or 64 bits */
    }
    return false;
}

void a64_sweep(const uint8_t *code, size_t size, bool *dynamic, bool *probes)
{
    bool copy[32] = {false};

    if (!code)
        return;
    for (size_t i = 0; i + 4 <= size; i += 4) {
        uint32_t w = word(code + i);
        unsigned rd = w & 0x1f, rn = (w >> 5) & 0x1f;

        if ((w & 0xffe003ff) == 0xcb2003ff) { /* sub sp, sp, xM (extended register) */
            *dynamic |= !constant_in(code, i, (w >> 16) & 0x1f);
        } else if ((w & 0xfffffc1f) == 0x9100001f) { /* mov sp, xN */
            *dynamic |= rn != 29 && !copy[rn];
        } else if ((w & 0xffc003ff) == 0xf90003ff) { /* str xzr, [sp, #N] */
            *probes = true;
        } else if ((w & 0xffffffe0) == 0x910003e0) { /* mov xN, sp */
            copy[rd] = true;
        } else if (rd != 31) {
            /*
             * Any other instruction may write its Rd: the copy is lost.  Stores
             * and branches have no Rd there, and losing a copy only
             * makes checkstack call a restore dynamic, never the other way.
             */
            bool store = ((w & 0x3a000000) == 0x28000000 || (w & 0x3b000000) == 0x39000000) && !((w >> 22) & 1);
            bool branch = (w & 0x7c000000) == 0x14000000 || (w & 0xfe000000) == 0xd6000000;
            if (!store && !branch)
                copy[rd] = false;
        }
    }
}
