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
 * fiber.c builds the same frame on a new stack, with vms__fiber_entry as
 * the return address and the descriptor in r12.
 */
#if defined(__x86_64__)

    .text

/* void vms__switch(void **save_sp, void *to_sp) */
    .globl  vms__switch
    .hidden vms__switch
    .type   vms__switch, @function
    .p2align 4
vms__switch:
    .cfi_startproc
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

    movq    %rsp, (%rdi)
    movq    %rsi, %rsp
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
    .cfi_endproc
    .size   vms__switch, .-vms__switch

/*
 * The first code a fiber runs, "returned to" by its first switch with the
 * stack pointer 16-byte aligned, so that the call below enters C as the ABI
 * wants (rsp + 8 aligned).  The return address is undefined: unwinders and
 * gdb stop here, at the base of the fiber.  vms__fiber_main never returns.
 */
    .globl  vms__fiber_entry
    .hidden vms__fiber_entry
    .type   vms__fiber_entry, @function
    .p2align 4
vms__fiber_entry:
    .cfi_startproc
    .cfi_undefined rip
    xorl    %ebp, %ebp
    movq    %r12, %rdi
    call    vms__fiber_main
    ud2
    .cfi_endproc
    .size   vms__fiber_entry, .-vms__fiber_entry

#endif

    .section .note.GNU-stack, "", @progbits
