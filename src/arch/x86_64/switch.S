/* SPDX-License-Identifier: MIT */
/*
 * Fiber context switch for x86-64 System V, after Boost.Context's
 * jump_fcontext: the callee-saved state is pushed on the stack being left,
 * its stack pointer stored, the other stack loaded and its state popped.
 * No syscall: the signal mask is per thread and stays as it is.  Saving
 * MXCSR (stmxcsr) is most of the cost -- about 3 ns on AMD Zen 5, the rest
 * of the switch about 2 -- but its control bits are callee-saved, and a
 * fiber may change its rounding mode; comparing before loading does not
 * pay, as reading back what stmxcsr stored stalls.
 *
 * Saved frame, from the saved stack pointer up:
 *     0   MXCSR (4 bytes), x87 control word (2 bytes)
 *     8   r12, r13, r14, r15, rbx, rbp
 *    56   return address
 * vms__fiber_launch saves and resumes the same frame.
 */
#if defined(__x86_64__)

    .text

/* Pushes the saved frame described above, with its call-frame information. */
.macro SAVE_FRAME
    pushq   %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset rbp, 0
    pushq   %rbx
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset rbx, 0
    pushq   %r15
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r15, 0
    pushq   %r14
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r14, 0
    pushq   %r13
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r13, 0
    pushq   %r12
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset r12, 0
    leaq    -8(%rsp), %rsp
    .cfi_adjust_cfa_offset 8
    stmxcsr (%rsp)
    fnstcw  4(%rsp)
.endm

/* Pops the saved frame at the stack pointer and returns into its context. */
.macro RESUME_FRAME
    ldmxcsr (%rsp)
    fldcw   4(%rsp)
    leaq    8(%rsp), %rsp
    .cfi_adjust_cfa_offset -8
    popq    %r12
    .cfi_adjust_cfa_offset -8
    .cfi_restore r12
    popq    %r13
    .cfi_adjust_cfa_offset -8
    .cfi_restore r13
    popq    %r14
    .cfi_adjust_cfa_offset -8
    .cfi_restore r14
    popq    %r15
    .cfi_adjust_cfa_offset -8
    .cfi_restore r15
    popq    %rbx
    .cfi_adjust_cfa_offset -8
    .cfi_restore rbx
    popq    %rbp
    .cfi_adjust_cfa_offset -8
    .cfi_restore rbp
    ret
.endm

/* void vms__switch(void **save_sp, void *to_sp) */
    .globl  vms__switch
    .hidden vms__switch
    .type   vms__switch, @function
    .p2align 4
vms__switch:
    .cfi_startproc
    SAVE_FRAME

    movq    %rsp, (%rdi)
    movq    %rsi, %rsp
    RESUME_FRAME
    .cfi_endproc
    .size   vms__switch, .-vms__switch

/*
 * void vms__fiber_launch(void **save_sp, struct vms_fiber_desc *f, void *top,
 *                        const uint64_t *fpenv, void *(*main)(struct vms_fiber_desc *))
 * main(f) runs a fiber and returns the saved stack pointer of the context
 * to resume after it.
 * The first switch into a fiber: saves the current context as vms__switch
 * does, loads the fiber's initial MXCSR and x87 control word from *fpenv,
 * and CALLs main on the new stack (top, 16-byte aligned); the
 * fiber ends by RETurning here, and the context main names is
 * resumed as vms__switch would.  A call matched by its ret keeps the
 * processor's return-address predictor aligned, where returning into a
 * fresh stack (and leaving a dead one by a switch) mispredicts both times
 * and every return of the joiner after them.
 *
 * On the fiber's stack this stub is the outermost frame: the return
 * address is undefined (CFI) and the frame pointer zero, so backtrace(),
 * libunwind, gdb and perf stop here cleanly.
 */
    .globl  vms__fiber_launch
    .hidden vms__fiber_launch
    .type   vms__fiber_launch, @function
    .p2align 4
vms__fiber_launch:
    .cfi_startproc
    SAVE_FRAME
    .cfi_remember_state

    movq    %rsp, (%rdi)
    movq    %rdx, %rsp
    .cfi_def_cfa rsp, 0
    .cfi_undefined rip
    .cfi_undefined rbp
    ldmxcsr (%rcx)
    fldcw   4(%rcx)
    xorl    %ebp, %ebp
    movq    %rsi, %rdi
    call    *%r8

    movq    %rax, %rsp
    .cfi_restore_state
    RESUME_FRAME
    .cfi_endproc
    .size   vms__fiber_launch, .-vms__fiber_launch

/*
 * void vms__call_on_stack(void *top, void (*fn)(void *, uintptr_t left), void *arg)
 * The frame pointer keeps the way back (and the CFA) while fn runs on the
 * other stack; it is also the lowest word written on the stack left.
 */
    .globl  vms__call_on_stack
    .hidden vms__call_on_stack
    .type   vms__call_on_stack, @function
    .p2align 4
vms__call_on_stack:
    .cfi_startproc
    pushq   %rbp
    .cfi_adjust_cfa_offset 8
    .cfi_rel_offset rbp, 0
    movq    %rsp, %rbp
    .cfi_def_cfa_register rbp
    movq    %rdi, %rsp
    movq    %rsi, %rax
    movq    %rdx, %rdi
    movq    %rbp, %rsi
    call    *%rax
    movq    %rbp, %rsp
    .cfi_def_cfa_register rsp
    popq    %rbp
    .cfi_adjust_cfa_offset -8
    .cfi_restore rbp
    ret
    .cfi_endproc
    .size   vms__call_on_stack, .-vms__call_on_stack

#endif

    .section .note.GNU-stack, "", @progbits
