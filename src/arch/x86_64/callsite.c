/* SPDX-License-Identifier: MIT */
/* x86-64: the dead-stack scan's rules for call sites and frame-pointer prologues. */
#include "arch/arch.h"

#include <string.h>

/* The length of the "call *r/m" (FF /2) whose ModRM byte is at p, or 0 if it is not one. */
static unsigned indirect_call_len(const uint8_t *p)
{
    unsigned mod = p[0] >> 6, rm = p[0] & 7, len = 2;

    if (((p[0] >> 3) & 7) != 2)
        return 0;
    if (mod == 3)
        return len;
    if (rm == 4) {
        len++;
        if (mod == 0 && (p[1] & 7) == 5)
            len += 4;
    }
    if (mod == 1)
        len += 1;
    else if (mod == 2 || (mod == 0 && rm == 5))
        len += 4;
    return len;
}

bool vms__arch_after_call(uintptr_t ret)
{
    return ((const uint8_t *)ret)[-5] == 0xe8 || vms__arch_after_indirect_call(ret);
}

bool vms__arch_after_indirect_call(uintptr_t ret)
{
    const uint8_t *c = (const uint8_t *)ret;

    for (unsigned k = 2; k <= 7; k++) {
        if (c[-(int)k] == 0xff && indirect_call_len(c - k + 1) == k)
            return true;
        if (k >= 3 && c[-(int)k] >= 0x40 && c[-(int)k] <= 0x4f && c[-(int)k + 1] == 0xff &&
            indirect_call_len(c - k + 2) == k - 1)
            return true;
    }
    return false;
}

uintptr_t vms__arch_call_target(uintptr_t ret, bool (*is_code)(const void *ctx, uintptr_t, size_t), const void *ctx,
                                bool *plt)
{
    const uint8_t *c = (const uint8_t *)ret;
    uintptr_t t;
    int32_t rel;

    *plt = false;
    if (c[-5] != 0xe8)
        return 0;
    memcpy(&rel, c - 4, sizeof rel);
    t = ret + (uintptr_t)(intptr_t)rel;
    if (!is_code(ctx, t, 16))
        return t;
    c = (const uint8_t *)t;
    if (c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa) /* endbr64 */
        c += 4;
    if (c[0] == 0xf2) /* bnd */
        c++;
    if (c[0] == 0xff && c[1] == 0x25) { /* jmp *GOT(%rip): a PLT stub */
        uintptr_t slot, to;
        memcpy(&rel, c + 2, sizeof rel);
        slot = (uintptr_t)(c + 6) + (uintptr_t)(intptr_t)rel;
        memcpy(&to, (const void *)slot, sizeof to);
        *plt = true;
        if (is_code(ctx, to, 1))
            return to;
    }
    return t;
}

/* "jmp rel32" (e9) or "jcc rel32" (0f 8x) to entry, anywhere in [fn, fn + size). */
bool vms__arch_jumps_to(uintptr_t fn, size_t size, uintptr_t entry)
{
    const uint8_t *c = (const uint8_t *)fn;
    int32_t rel;

    for (uintptr_t i = 0; i + 5 <= size; i++) {
        uintptr_t end = i + (c[i] == 0x0f && (c[i + 1] & 0xf0) == 0x80 ? 6 : 5);
        if ((c[i] != 0xe9 && end != i + 6) || end > size)
            continue;
        memcpy(&rel, c + end - 4, sizeof rel);
        if (fn + end + (uintptr_t)(intptr_t)rel == entry)
            return true;
    }
    return false;
}

/* "push %rbp; mov %rsp,%rbp", then pushes and "sub $N,%rsp": the CFA is rbp + 16 from the mov on. */
uintptr_t vms__arch_fp_prologue_frame(uintptr_t entry)
{
    const uint8_t *c = (const uint8_t *)entry;
    uintptr_t size = 16;
    int32_t imm;

    if (c[0] == 0xf3 && c[1] == 0x0f && c[2] == 0x1e && c[3] == 0xfa)
        c += 4;
    if (c[0] != 0x55 || c[1] != 0x48 || c[2] != 0x89 || c[3] != 0xe5)
        return 0;
    for (c += 4; c < (const uint8_t *)entry + 24;) {
        if (c[0] >= 0x50 && c[0] <= 0x57) {
            size += 8, c++;
        } else if (c[0] == 0x41 && c[1] >= 0x50 && c[1] <= 0x57) {
            size += 8, c += 2;
        } else if (c[0] == 0x48 && c[1] == 0x83 && c[2] == 0xec) {
            return size + c[3];
        } else if (c[0] == 0x48 && c[1] == 0x81 && c[2] == 0xec) {
            memcpy(&imm, c + 3, sizeof imm);
            return imm > 0 ? size + (uintptr_t)imm : size;
        } else {
            break;
        }
    }
    return size;
}

/* Every call pushes its return address: the scan never looks for a call site. */
uintptr_t vms__arch_next_call(uintptr_t from, uintptr_t end)
{
    (void)from, (void)end;
    return 0;
}
