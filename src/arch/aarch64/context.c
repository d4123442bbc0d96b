/* SPDX-License-Identifier: MIT */
/* aarch64: redirecting an interrupted context. */
#include "arch/arch.h"

/*
 * A function's entry as AAPCS64 has it: the stack pointer 16-byte aligned
 * (no return address on the stack), x29 = x30 = 0 so that backtraces end
 * here.
 */
static void redirect(ucontext_t *uc, uintptr_t top, uintptr_t fn, uint64_t arg)
{
    uc->uc_mcontext.sp = top & ~(uintptr_t)15;
    uc->uc_mcontext.regs[0] = arg;
    uc->uc_mcontext.regs[29] = 0;
    uc->uc_mcontext.regs[30] = 0;
    uc->uc_mcontext.pc = fn;
}

void vms__uc_redirect(ucontext_t *uc, uintptr_t top, void (*fn)(int), int arg)
{
    redirect(uc, top, (uintptr_t)fn, (uint64_t)(int64_t)arg);
}

void vms__uc_redirect_ptr(ucontext_t *uc, uintptr_t top, void (*fn)(void *), void *arg)
{
    redirect(uc, top, (uintptr_t)fn, (uint64_t)(uintptr_t)arg);
}
