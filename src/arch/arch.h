/* SPDX-License-Identifier: MIT */
/*
 * The architecture layer, below core: the only code that names a register
 * or decodes an instruction.  One folder per architecture holds the
 * context switch and the fiber launch (switch.S), the interrupted
 * context's registers and the kill redirect (context.c, regs.h), and the
 * rules the dead-stack scan needs to recognise a call site (callsite.c).
 * The layers above see only the functions declared here and the inline
 * accessors of regs.h.
 */
#ifndef VMS_ARCH_H
#define VMS_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>

#if defined(__x86_64__)
#include "arch/x86_64/regs.h"
#elif defined(__aarch64__)
#include "arch/aarch64/regs.h"
#else
#error "vmstack supports x86-64 and aarch64"
#endif

struct vms_fiber_desc;

/*
 * switch.S: vms__switch saves the callee-saved state on the current stack,
 * stores the stack pointer in *save_sp, and resumes the context saved at
 * to_sp.  vms__fiber_launch saves the same way, then calls main(f) on the
 * fresh stack below top (16-byte aligned) with the floating-point control
 * state *fpenv (vms__arch_fpenv), and when main returns, resumes the
 * context saved at the stack pointer it returned.  On the fiber's stack
 * the launch is the outermost frame: backtraces stop there cleanly.
 */
void vms__switch(void **save_sp, void *to_sp);
void vms__fiber_launch(void **save_sp, struct vms_fiber_desc *f, void *top, const uint64_t *fpenv,
                       void *(*main)(struct vms_fiber_desc *));

/*
 * switch.S: calls fn(arg, left) with the stack pointer at top (16-byte
 * aligned), and comes back.  left is the lowest address it wrote on the
 * stack it left (the saved frame pointer and return address): the caller
 * writes nothing below it.
 */
void vms__call_on_stack(void *top, void (*fn)(void *, uintptr_t), void *arg);

/*
 * context.c: makes the interrupted context uc resume in fn(arg) on a fresh
 * frame right below top, as the outermost frame (no return address, no
 * frame pointer).  Writes to the stack below top.
 */
void vms__uc_redirect(ucontext_t *uc, uintptr_t top, void (*fn)(int), int arg);
void vms__uc_redirect_ptr(ucontext_t *uc, uintptr_t top, void (*fn)(void *), void *arg);

/*
 * callsite.c: the dead-stack scan's rules.  The caller has checked that the
 * VMS_CALL_BEFORE bytes before ret are code.  vms__arch_after_call: ret
 * follows a call instruction; vms__arch_after_indirect_call: an indirect
 * one.  vms__arch_call_target: the function a direct call returning to ret
 * went to (through its PLT stub when is_code(ctx, ...) says the stub is
 * code; *plt then true), 0 for an indirect call.  vms__arch_jumps_to: whether the size
 * bytes of code at fn (checked by the caller) hold a jump to entry, a tail
 * call; searched, not decoded, so a stray match is possible.
 * vms__arch_next_call: the return address of the first direct call in
 * [from, end) (checked to be code by the caller), 0 when none; only where
 * a call leaves its return address in a register (!VMS_ARCH_RA_PUSHED),
 * the one place the scan must find a leaf's call site, else always 0.
 * vms__arch_fp_prologue_frame: the fixed frame of a function at entry that
 * sets up a frame pointer, decoded from its first VMS_PROLOGUE_BYTES
 * (checked to be code by the caller), where its call-frame information
 * stops following the stack pointer; 0 when unknown.
 */
bool vms__arch_after_call(uintptr_t ret);
bool vms__arch_after_indirect_call(uintptr_t ret);
uintptr_t vms__arch_call_target(uintptr_t ret, bool (*is_code)(const void *ctx, uintptr_t, size_t), const void *ctx,
                                bool *plt);
bool vms__arch_jumps_to(uintptr_t fn, size_t size, uintptr_t entry);
uintptr_t vms__arch_next_call(uintptr_t from, uintptr_t end);
uintptr_t vms__arch_fp_prologue_frame(uintptr_t entry);

#endif
