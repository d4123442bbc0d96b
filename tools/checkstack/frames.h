/* SPDX-License-Identifier: MIT */
/*
 * Static stack frame sizes of the functions of an x86-64 or aarch64 ELF executable or
 * shared library, from its call-frame information (CFI) and its code: what
 * 'vmstack checkstack' prints, reusable by other tools.
 */
#ifndef VMS_FRAMES_H
#define VMS_FRAMES_H

#include "elffuncs.h"

#include <elfutils/libdw.h>
#include <stdbool.h>

struct frame_fn {
    const struct elf_func *fn;
    /*
     * Bytes between the caller's stack pointer before the call (the CFA)
     * and the lowest stack pointer of the function's fixed frame: return
     * address, saved registers, locals, outgoing arguments.  This is what
     * GCC's -fstack-usage reports.
     */
    unsigned long frame;
    bool dynamic; /* moves the stack pointer by run-time amounts (alloca, VLA); frame is the fixed part */
    bool probes;  /* touches new stack memory page by page (-fstack-clash-protection) */
};

struct frames {
    struct elf_funcs elf;
    Dwarf_CFI *eh, *dbg;  /* from .eh_frame, .debug_frame; either may be NULL */
    Dwarf *dw;
    const char *cfi;      /* ".eh_frame", ".debug_frame" or ".eh_frame+.debug_frame" */
    struct frame_fn *v;   /* the functions that have CFI, by address */
    size_t n;
    size_t nocfi;         /* functions without CFI (mostly hand-written assembly), left out */
    bool a64;             /* aarch64 code (else x86-64) */
};

/*
 * Analyses the executable or shared library at path.  Returns 0, or -1 with
 * err set to a reason that fits after "PATH: ".
 */
int frames_read(struct frames *fr, const char *path, char *err, size_t errlen);

void frames_free(struct frames *fr);

#endif
