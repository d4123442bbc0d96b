/* SPDX-License-Identifier: MIT */
/* The stack pointer, for the test programs that measure their own depth. */
#ifndef VMS_TEST_SP_H
#define VMS_TEST_SP_H

#include <stdint.h>

static inline uintptr_t stack_pointer(void)
{
    uintptr_t sp;

#if defined(__aarch64__)
    __asm__ volatile("mov %0, sp" : "=r"(sp));
#else
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
#endif
    return sp;
}

#endif
