/* SPDX-License-Identifier: MIT */
/* aarch64: the registers of an interrupted context, and small register-level helpers (included by arch/arch.h). */
#ifndef VMS_ARCH_AARCH64_REGS_H
#define VMS_ARCH_AARCH64_REGS_H

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

/* AAPCS64 has no red zone: nothing below the stack pointer is live. */
#define VMS_ARCH_RED_ZONE 0
/* DWARF register numbers: the frame pointer x29, sp, the return address column x30. */
#define VMS_DW_FP 29
#define VMS_DW_SP 31
#define VMS_DW_RA 30
/*
 * The call leaves the return address in x30: the callee saves it in its
 * frame record (x29, x30), at the bottom of its fixed frame as GCC and
 * clang lay it out, where only its call-frame information says; a leaf
 * does not save it at all.
 */
#define VMS_ARCH_RA_PUSHED 0
/* Bytes before a return address that the call-site rules read; bytes of a prologue they decode. */
#define VMS_CALL_BEFORE 4
#define VMS_PROLOGUE_BYTES 32

static inline uintptr_t vms__uc_pc(const ucontext_t *uc)
{
    return (uintptr_t)uc->uc_mcontext.pc;
}

static inline uintptr_t vms__uc_sp(const ucontext_t *uc)
{
    return (uintptr_t)uc->uc_mcontext.sp;
}

static inline uintptr_t vms__uc_fp(const ucontext_t *uc)
{
    return (uintptr_t)uc->uc_mcontext.regs[29];
}

/* The link register: a leaf function's return address is only there. */
/* The vector state of a signal frame: inside the ucontext (uc_mcontext.__reserved), nothing outside. */
static inline void *vms__uc_fpstate(const ucontext_t *uc, size_t *size)
{
    (void)uc;
    *size = 0;
    return NULL;
}

static inline void vms__uc_set_fpstate(ucontext_t *uc, void *fp)
{
    (void)uc, (void)fp;
}

static inline uintptr_t vms__uc_ra(const ucontext_t *uc)
{
    return (uintptr_t)uc->uc_mcontext.regs[30];
}

/* The current stack pointer. */
static inline uintptr_t vms__arch_sp(void)
{
    uintptr_t sp;

    __asm__ volatile("mov %0, sp" : "=r"(sp));
    return sp;
}

/* A load the compiler cannot see (under ASan the word may lie in a dead frame's redzone). */
static inline uint64_t vms__arch_load_word(const void *p)
{
    uint64_t v;

    __asm__("ldr %0, %1" : "=r"(v) : "m"(*(const uint64_t *)p));
    return v;
}

/* Touches the stack n bytes below the stack pointer (moved there, so valgrind sees no bad read). */
#define vms__arch_probe_below(n)                                                                                     \
    __asm__ volatile("sub sp, sp, %0\n\t"                                                                            \
                     "ldr x16, [sp]\n\t"                                                                             \
                     "add sp, sp, %0"                                                                                \
                     :                                                                                               \
                     : "i"(n)                                                                                        \
                     : "x16", "memory")

/* The floating-point control state a new fiber starts with: this thread's FPCR (rounding, flush-to-zero). */
static inline uint64_t vms__arch_fpenv(void)
{
    uint64_t fpcr;

    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    return fpcr;
}

/* A code address with its pointer-authentication code, if any, removed (xpaclri: a no-op before v8.3). */
static inline uintptr_t vms__arch_strip(uintptr_t v)
{
    register uintptr_t lr __asm__("x30") = v;

    __asm__("hint 7" : "+r"(lr));
    return lr;
}

/*
 * The bits of a code address that hold its pointer-authentication code
 * (0 where there is none): what xpaclri clears in a lower-half address
 * (bit 55 clear) with every other bit set.
 */
static inline uintptr_t vms__arch_pac_mask(void)
{
    uintptr_t v = ~((uintptr_t)1 << 55);

    return v & ~vms__arch_strip(v);
}

/*
 * The switch's saved frame (switch.S), for debuggers (task/debugtable.c):
 * its size, gdb's names of the stack pointer, the program counter and the
 * thread pointer, and { name, offset from the saved stack pointer, size }
 * of each register saved in it, the program counter's being the return
 * address (x30; built with pac-ret, signed: a reader strips it).
 */
#define VMS_SWITCH_FRAME_SIZE 176
#define VMS_SWITCH_FRAME_SP "sp"
#define VMS_SWITCH_FRAME_PC "pc"
#define VMS_THREAD_POINTER "tpidr"
#define VMS_SWITCH_FRAME_REGS                                                                          \
    { "d8", 0, 8 }, { "d9", 8, 8 }, { "d10", 16, 8 }, { "d11", 24, 8 }, { "d12", 32, 8 }, { "d13", 40, 8 },   \
        { "d14", 48, 8 }, { "d15", 56, 8 }, { "x19", 64, 8 }, { "x20", 72, 8 }, { "x21", 80, 8 },            \
        { "x22", 88, 8 }, { "x23", 96, 8 }, { "x24", 104, 8 }, { "x25", 112, 8 }, { "x26", 120, 8 },         \
        { "x27", 128, 8 }, { "x28", 136, 8 }, { "x29", 144, 8 }, { "x30", 152, 8 }, { "pc", 152, 8 }

/* libunwind's aarch64 register numbers (x0-x30, sp, pc, pstate): reg's value in uc. */
static inline bool vms__uc_unw_reg(const ucontext_t *uc, int reg, uintptr_t *val)
{
    if (reg >= 0 && reg <= 30)
        *val = (uintptr_t)uc->uc_mcontext.regs[reg];
    else if (reg == 31)
        *val = (uintptr_t)uc->uc_mcontext.sp;
    else if (reg == 32)
        *val = (uintptr_t)uc->uc_mcontext.pc;
    else if (reg == 33)
        *val = (uintptr_t)uc->uc_mcontext.pstate;
    else
        return false;
    return true;
}

/* A spinning thread's hint to the core: another hardware thread may run. */
static inline void vms__arch_cpu_relax(void)
{
    __asm__ volatile("yield");
}

/*
 * A system call that touches no memory of the calling thread's but its
 * arguments: no errno (the answer is -errno), no TLS.  For a task that
 * shares the address space and the TLS pointer of a running thread
 * (src/preload/keeper.c), where errno would be that thread's.
 */
static inline long vms__arch_syscall4(long nr, long a, long b, long c, long d)
{
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;

    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
    return x0;
}

#endif
