/* SPDX-License-Identifier: MIT */
/* x86-64: the registers of an interrupted context, and small register-level helpers (included by arch/arch.h). */
#ifndef VMS_ARCH_X86_64_REGS_H
#define VMS_ARCH_X86_64_REGS_H

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

/* What a leaf function may use below its stack pointer (System V ABI). */
#define VMS_ARCH_RED_ZONE 128
/* DWARF register numbers: the frame pointer, the stack pointer, the return address column. */
#define VMS_DW_FP 6
#define VMS_DW_SP 7
#define VMS_DW_RA 16
/*
 * The call pushes the return address right below the caller's stack
 * pointer, whatever the callee: a return address read at a on a stack is
 * the callee's, whose CFA (the caller's stack pointer) is a + 8.
 */
#define VMS_ARCH_RA_PUSHED 1
/* Bytes before a return address that the call-site rules read; bytes of a prologue they decode. */
#define VMS_CALL_BEFORE 8
#define VMS_PROLOGUE_BYTES 32

static inline uintptr_t vms__uc_pc(const ucontext_t *uc)
{
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
}

static inline uintptr_t vms__uc_sp(const ucontext_t *uc)
{
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
}

static inline uintptr_t vms__uc_fp(const ucontext_t *uc)
{
    return (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
}

/* The return address when it is in a register (not on x86-64: the call pushed it). */
/*
 * The vector state a signal frame holds outside the ucontext (the xsave
 * area uc_mcontext.fpregs points to) and its size: the extended size the
 * kernel writes in its software-reserved bytes, or the legacy 512.
 */
static inline void *vms__uc_fpstate(const ucontext_t *uc, size_t *size)
{
    const unsigned char *fp = (const unsigned char *)uc->uc_mcontext.fpregs;
    uint32_t magic, extended;

    *size = 0;
    if (!fp)
        return NULL;
    __builtin_memcpy(&magic, fp + 464, sizeof magic);
    __builtin_memcpy(&extended, fp + 468, sizeof extended);
    *size = magic == 0x46505853u && extended >= 512 ? extended : 512;
    return (void *)fp;
}

static inline void vms__uc_set_fpstate(ucontext_t *uc, void *fp)
{
    uc->uc_mcontext.fpregs = (fpregset_t)fp;
}

static inline uintptr_t vms__uc_ra(const ucontext_t *uc)
{
    (void)uc;
    return 0;
}

/* The current stack pointer. */
static inline uintptr_t vms__arch_sp(void)
{
    uintptr_t sp;

    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
    return sp;
}

/* A load the compiler cannot see (under ASan the word may lie in a dead frame's redzone). */
static inline uint64_t vms__arch_load_word(const void *p)
{
    uint64_t v;

    __asm__("movq %1, %0" : "=r"(v) : "m"(*(const uint64_t *)p));
    return v;
}

/* Touches the stack n bytes below the stack pointer (moved there, so valgrind sees no bad read). */
#define vms__arch_probe_below(n)                                                                                     \
    __asm__ volatile("subq %0, %%rsp\n\t"                                                                            \
                     "movq (%%rsp), %%rax\n\t"                                                                       \
                     "addq %0, %%rsp"                                                                                \
                     :                                                                                               \
                     : "i"(n)                                                                                        \
                     : "rax")

/* The floating-point control state a new fiber starts with: this thread's MXCSR | x87 control word << 32. */
static inline uint64_t vms__arch_fpenv(void)
{
    uint32_t mxcsr;
    uint16_t fpucw;

    __asm__("stmxcsr %0\n\tfnstcw %1" : "=m"(mxcsr), "=m"(fpucw));
    return mxcsr | (uint64_t)fpucw << 32;
}

/* A code address as read from a stack: x86-64 stores it as it is. */
static inline uintptr_t vms__arch_strip(uintptr_t v)
{
    return v;
}

/* The bits of a code address that hold a pointer-authentication code: none. */
static inline uintptr_t vms__arch_pac_mask(void)
{
    return 0;
}

/*
 * The switch's saved frame (switch.S), for debuggers (task/debugtable.c):
 * its size, gdb's names of the stack pointer, the program counter and the
 * thread pointer, and { name, offset from the saved stack pointer, size }
 * of each register saved in it, the program counter's being the return
 * address.
 */
#define VMS_SWITCH_FRAME_SIZE 64
#define VMS_SWITCH_FRAME_SP "rsp"
#define VMS_SWITCH_FRAME_PC "rip"
#define VMS_THREAD_POINTER "fs_base"
#define VMS_SWITCH_FRAME_REGS                                                                          \
    { "r12", 8, 8 }, { "r13", 16, 8 }, { "r14", 24, 8 }, { "r15", 32, 8 }, { "rbx", 40, 8 }, { "rbp", 48, 8 }, \
        { "rip", 56, 8 }

/* libunwind's x86-64 register numbers (RAX, RDX, RCX, RBX, RSI, RDI, RBP, RSP, R8-R15, RIP): reg's value in uc. */
static inline bool vms__uc_unw_reg(const ucontext_t *uc, int reg, uintptr_t *val)
{
    static const int greg_of[17] = {REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP, REG_R8,
                                    REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP};

    if (reg < 0 || reg >= (int)(sizeof greg_of / sizeof greg_of[0]))
        return false;
    *val = (uintptr_t)uc->uc_mcontext.gregs[greg_of[reg]];
    return true;
}

/* A spinning thread's hint to the core: another hardware thread may run. */
static inline void vms__arch_cpu_relax(void)
{
    __builtin_ia32_pause();
}

/*
 * A system call that touches no memory of the calling thread's but its
 * arguments: no errno (the answer is -errno), no TLS.  For a task that
 * shares the address space and the TLS pointer of a running thread
 * (src/preload/keeper.c), where errno would be that thread's.
 */
static inline long vms__arch_syscall4(long nr, long a, long b, long c, long d)
{
    register long r10 __asm__("r10") = d;
    long ret;

    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}

#endif
