/* SPDX-License-Identifier: MIT */
/*
 * Fiber context switch for AAPCS64: the callee-saved state is stored on the
 * stack being left, its stack pointer saved, the other stack loaded and its
 * state loaded back.  Callee-saved are x19-x28, the frame record x29/x30,
 * the low 64 bits of v8-v15 (d8-d15), and FPCR's control bits (rounding,
 * flush-to-zero); FPSR holds only flags and is not saved.  No syscall.
 *
 * Saved frame, from the saved stack pointer up (176 bytes, 16-aligned):
 *     0   d8 ... d15
 *    64   x19 ... x28
 *   144   x29, x30 (the return address, signed under pac-ret)
 *   160   FPCR, padding
 * vms__fiber_launch saves and resumes the same frame.
 *
 * Every global entry starts with "bti c" (a no-op before Armv8.5), and the
 * object carries the GNU property note saying so: without it, linking with
 * BTI would turn BTI off for the whole library.
 *
 * Built with pac-ret (-mbranch-protection=standard defines
 * __ARM_FEATURE_PAC_DEFAULT), each entry signs its return address with the
 * stack pointer it was called with (paciasp) before saving it, and the
 * resume authenticates the saved one with the stack pointer it returns
 * with (autiasp), which is the same: a saved return address overwritten
 * while the context is suspended faults instead of being jumped to.  A
 * fiber's first entry (vms__fiber_launch) calls its main and resumes no
 * saved frame of its own, so no return address is made up in C.  What
 * reads a saved return address removes the code: vms__arch_strip (the
 * dead-stack scan), libunwind (told the mask by fault/unwind.c), the gdb
 * extension.  The hint-space forms run as no-ops before Armv8.3, where
 * nothing is signed.
 */
#if defined(__aarch64__)

#define FRAME 176

#if defined(__ARM_FEATURE_PAC_DEFAULT)
/* paciasp, then the call-frame information's note that x30 is signed from here. */
#define SIGN_RA hint 25; .cfi_negate_ra_state
/* autiasp, the stack pointer back at its value on entry. */
#define AUTH_RA hint 29; .cfi_negate_ra_state
#define FEATURE_PAC 2           /* GNU_PROPERTY_AARCH64_FEATURE_1_PAC */
#else
#define SIGN_RA
#define AUTH_RA
#define FEATURE_PAC 0
#endif

    .text

.macro SAVE_FRAME
    sub     sp, sp, #FRAME
    .cfi_adjust_cfa_offset FRAME
    stp     d8, d9, [sp, #0]
    stp     d10, d11, [sp, #16]
    stp     d12, d13, [sp, #32]
    stp     d14, d15, [sp, #48]
    stp     x19, x20, [sp, #64]
    stp     x21, x22, [sp, #80]
    stp     x23, x24, [sp, #96]
    stp     x25, x26, [sp, #112]
    stp     x27, x28, [sp, #128]
    stp     x29, x30, [sp, #144]
    .cfi_rel_offset x19, 64
    .cfi_rel_offset x20, 72
    .cfi_rel_offset x21, 80
    .cfi_rel_offset x22, 88
    .cfi_rel_offset x23, 96
    .cfi_rel_offset x24, 104
    .cfi_rel_offset x25, 112
    .cfi_rel_offset x26, 120
    .cfi_rel_offset x27, 128
    .cfi_rel_offset x28, 136
    .cfi_rel_offset x29, 144
    .cfi_rel_offset x30, 152
    mrs     x9, fpcr
    str     x9, [sp, #160]
.endm

/* Loads the saved frame at the stack pointer and returns into its context. */
.macro RESUME_FRAME
    ldr     x9, [sp, #160]
    msr     fpcr, x9
    ldp     d8, d9, [sp, #0]
    ldp     d10, d11, [sp, #16]
    ldp     d12, d13, [sp, #32]
    ldp     d14, d15, [sp, #48]
    ldp     x19, x20, [sp, #64]
    ldp     x21, x22, [sp, #80]
    ldp     x23, x24, [sp, #96]
    ldp     x25, x26, [sp, #112]
    ldp     x27, x28, [sp, #128]
    ldp     x29, x30, [sp, #144]
    add     sp, sp, #FRAME
    .cfi_adjust_cfa_offset -FRAME
    .cfi_restore x19
    .cfi_restore x20
    .cfi_restore x21
    .cfi_restore x22
    .cfi_restore x23
    .cfi_restore x24
    .cfi_restore x25
    .cfi_restore x26
    .cfi_restore x27
    .cfi_restore x28
    .cfi_restore x29
    .cfi_restore x30
    AUTH_RA
    ret
.endm

/* void vms__switch(void **save_sp, void *to_sp) */
    .globl  vms__switch
    .hidden vms__switch
    .type   vms__switch, %function
    .p2align 4
vms__switch:
    .cfi_startproc
    hint    34                  /* bti c */
    SIGN_RA
    SAVE_FRAME
    mov     x9, sp
    str     x9, [x0]
    mov     sp, x1
    RESUME_FRAME
    .cfi_endproc
    .size   vms__switch, .-vms__switch

/*
 * void vms__fiber_launch(void **save_sp, struct vms_fiber_desc *f, void *top,
 *                        const uint64_t *fpenv, void *(*main)(struct vms_fiber_desc *))
 * The first switch into a fiber: saves the current context as vms__switch
 * does, loads the fiber's initial FPCR from *fpenv, and calls main(f) with
 * the stack pointer at top; when main returns the saved stack pointer of
 * the context to resume, that context is resumed as vms__switch would.
 * On the fiber's stack this stub is the outermost frame: the return
 * address is undefined (CFI) and x29 = x30 = 0, so unwinders stop here.
 */
    .globl  vms__fiber_launch
    .hidden vms__fiber_launch
    .type   vms__fiber_launch, %function
    .p2align 4
vms__fiber_launch:
    .cfi_startproc
    hint    34                  /* bti c */
    SIGN_RA
    SAVE_FRAME
    .cfi_remember_state
    mov     x9, sp
    str     x9, [x0]
    mov     sp, x2
    .cfi_def_cfa sp, 0
    .cfi_undefined x30
    .cfi_undefined x29
    ldr     x9, [x3]
    msr     fpcr, x9
    mov     x29, #0
    mov     x30, #0
    mov     x0, x1
    blr     x4
    mov     sp, x0
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
    .type   vms__call_on_stack, %function
    .p2align 4
vms__call_on_stack:
    .cfi_startproc
    hint    34                  /* bti c */
    SIGN_RA
    stp     x29, x30, [sp, #-16]!
    .cfi_def_cfa_offset 16
    .cfi_offset x29, -16
    .cfi_offset x30, -8
    mov     x29, sp
    .cfi_def_cfa x29, 16
    mov     sp, x0
    mov     x9, x1
    mov     x0, x2
    mov     x1, x29
    blr     x9
    mov     sp, x29
    .cfi_def_cfa sp, 16
    ldp     x29, x30, [sp], #16
    .cfi_def_cfa_offset 0
    .cfi_restore x29
    .cfi_restore x30
    AUTH_RA
    ret
    .cfi_endproc
    .size   vms__call_on_stack, .-vms__call_on_stack

/*
 * GNU_PROPERTY_AARCH64_FEATURE_1_AND: BTI (every entry above has its
 * landing pad), and PAC when the return addresses are signed.
 */
    .pushsection .note.gnu.property, "a"
    .balign 8
    .long   4
    .long   16
    .long   5                   /* NT_GNU_PROPERTY_TYPE_0 */
    .asciz  "GNU"
    .long   0xc0000000
    .long   4
    .long   1 | FEATURE_PAC     /* GNU_PROPERTY_AARCH64_FEATURE_1_BTI, _PAC */
    .long   0
    .popsection

#endif

    .section .note.GNU-stack, "", %progbits
