/* SPDX-License-Identifier: MIT */
/* x86-64: redirecting an interrupted context. */
#include "arch/arch.h"

/*
 * The call's frame as the ABI has it at a function's entry: the stack
 * pointer 16-byte aligned minus 8, where a zero return address ends
 * backtraces.  Not instrumented: under ASan that memory may still carry the
 * redzones of abandoned frames.
 */
__attribute__((no_sanitize_address)) static void redirect(ucontext_t *uc, uintptr_t top, uintptr_t fn, greg_t arg)
{
    greg_t *g = uc->uc_mcontext.gregs;
    uintptr_t sp = (top & ~(uintptr_t)15) - 8;

    *(uintptr_t *)sp = 0;
    g[REG_RSP] = (greg_t)sp;
    g[REG_RBP] = 0;
    g[REG_RDI] = arg;
    g[REG_RIP] = (greg_t)fn;
}

void vms__uc_redirect(ucontext_t *uc, uintptr_t top, void (*fn)(int), int arg)
{
    redirect(uc, top, (uintptr_t)fn, arg);
}

void vms__uc_redirect_ptr(ucontext_t *uc, uintptr_t top, void (*fn)(void *), void *arg)
{
    redirect(uc, top, (uintptr_t)fn, (greg_t)(uintptr_t)arg);
}
