/* SPDX-License-Identifier: MIT */
/*
 * checkstack's matcher for aarch64 code: instructions are 32 bits, and a
 * frame's stack-pointer arithmetic has few forms, so a handful of masks
 * stand in for a decoder.
 */
#ifndef VMS_A64INSN_H
#define VMS_A64INSN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* DWARF register numbers of aarch64: the frame pointer x29 and sp. */
enum { A64_DWARF_FP = 29, A64_DWARF_SP = 31 };

/*
 * The fixed frame set up by a prologue "stp x29, x30, [sp, #-N]!; mov x29,
 * sp; sub sp, sp, #M" at code (N + M), for rows where the CFA follows x29;
 * 0 when the prologue is not of that form.
 */
int64_t a64_prologue_frame(const uint8_t *code, size_t size);

/*
 * Sweeps a function: dynamic when it moves sp by a run-time amount ("sub
 * sp, sp, xN" from a register not just loaded with a constant, "mov sp, xN"
 * from anything but x29 or a copy of sp), probes when it stores zero at sp
 * (GCC's -fstack-clash-protection: "str xzr, [sp, #N]").
 */
void a64_sweep(const uint8_t *code, size_t size, bool *dynamic, bool *probes);

#endif
