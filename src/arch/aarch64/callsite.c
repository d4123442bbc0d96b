/* SPDX-License-Identifier: MIT */
/*
 * aarch64: the dead-stack scan's rules.  Instructions are 32 bits, so the
 * call before a return address is the one word at ret - 4: bl, blr, or the
 * pointer-authenticating blraa/blrab (and their zero-modifier forms).
 * Return addresses read from a stack may carry a PAC: stripped first.
 */
#include "arch/arch.h"

#include <string.h>

static uint32_t insn(uintptr_t a)
{
    uint32_t w;

    memcpy(&w, (const void *)a, sizeof w);
    return w;
}

static bool is_bl(uint32_t w)
{
    return (w & 0xfc000000) == 0x94000000;
}

static intptr_t sext(uint64_t v, unsigned bits)
{
    return (intptr_t)(v << (64 - bits)) >> (64 - bits);
}

bool vms__arch_after_call(uintptr_t ret)
{
    return is_bl(insn(vms__arch_strip(ret) - 4)) || vms__arch_after_indirect_call(ret);
}

bool vms__arch_after_indirect_call(uintptr_t ret)
{
    uint32_t w = insn(vms__arch_strip(ret) - 4);

    return (w & 0xfffffc1f) == 0xd63f0000 /* blr */ || (w & 0xfffff800) == 0xd73f0800 /* blraa, blrab */ ||
           (w & 0xfffff81f) == 0xd63f081f /* blraaz, blrabz */;
}

/* The GOT slot a PLT stub "adrp x16, P; ldr x17, [x16, #O]; ..." loads, or 0. */
static uintptr_t plt_slot(uintptr_t stub)
{
    uint32_t adrp = insn(stub), ldr = insn(stub + 4);
    uint64_t imm;

    if ((adrp & 0x9f00001f) != 0x90000010 || (ldr & 0xffc003ff) != 0xf9400211)
        return 0;
    imm = (uint64_t)((adrp >> 5) & 0x7ffff) << 2 | ((adrp >> 29) & 3);
    return (stub & ~(uintptr_t)0xfff) + (uintptr_t)sext(imm << 12, 33) + (((ldr >> 10) & 0xfff) << 3);
}

uintptr_t vms__arch_call_target(uintptr_t ret, bool (*is_code)(const void *ctx, uintptr_t, size_t), const void *ctx,
                                bool *plt)
{
    uintptr_t at = vms__arch_strip(ret) - 4, t, slot, to;
    uint32_t w = insn(at);

    *plt = false;
    if (!is_bl(w))
        return 0;
    t = at + (uintptr_t)(sext(w & 0x3ffffff, 26) * 4);
    if (!is_code(ctx, t, 12))
        return t;
    if (insn(t) == 0xd503245f) /* bti c: a BTI PLT */
        t += 4;
    if ((slot = plt_slot(t))) {
        *plt = true;
        memcpy(&to, (const void *)slot, sizeof to);
        if (is_code(ctx, to, 1))
            return to;
    }
    return t;
}

uintptr_t vms__arch_next_call(uintptr_t from, uintptr_t end)
{
    for (uintptr_t a = (from + 3) & ~(uintptr_t)3; a + 4 <= end; a += 4)
        if (is_bl(insn(a)))
            return a + 4;
    return 0;
}

/* "b" (imm26) or "b.cond" (imm19) to entry, anywhere in [fn, fn + size). */
bool vms__arch_jumps_to(uintptr_t fn, size_t size, uintptr_t entry)
{
    for (uintptr_t a = fn; a + 4 <= fn + size; a += 4) {
        uint32_t w = insn(a);
        if ((w & 0xfc000000) == 0x14000000 && a + (uintptr_t)(sext(w & 0x3ffffff, 26) * 4) == entry)
            return true;
        if ((w & 0xff000010) == 0x54000000 && a + (uintptr_t)(sext((w >> 5) & 0x7ffff, 19) * 4) == entry)
            return true;
    }
    return false;
}

/*
 * "stp x29, x30, [sp, #-N]!; mov x29, sp", then "sub sp, sp, #M": the
 * fixed frame is N + M.  paciasp or bti c may come first.
 */
uintptr_t vms__arch_fp_prologue_frame(uintptr_t entry)
{
    uintptr_t a = entry, size;
    uint32_t w = insn(a);

    while (w == 0xd503233f /* paciasp */ || w == 0xd503245f /* bti c */)
        w = insn(a += 4);
    if ((w & 0xffc07fff) != 0xa9807bfd)
        return 0;
    size = (uintptr_t)-sext((w >> 15) & 0x7f, 7) * 8;
    if (insn(a + 4) != 0x910003fd)
        return size;
    w = insn(a + 8);
    if ((w & 0xff8003ff) == 0xd10003ff)
        size += (uintptr_t)((w >> 10) & 0xfff) << ((w >> 22) & 1 ? 12 : 0);
    return size;
}
