/* SPDX-License-Identifier: MIT */
/*
 * Overflows of stacks vmstack does not manage: a PHP Fiber's, Boost's
 * protected stacks, a makecontext stack below an mprotect'd page, any
 * runtime's own mmap'd stacks.  A fault at an address just below the
 * stack pointer (or in the stack pointer's own page) is the thread
 * running off its stack, whoever made it: reported in the same form, with
 * the mapping the stack pointer was in, and passed on as it would have
 * been (the process dies by SIGSEGV, or the program's handler takes it).
 * 'vmstack run' turns this on (vms__fault_report_unmanaged); a program
 * linked with the library reports only its own stacks.
 *
 * Async-signal-safe: open, read and close of /proc/self/maps.
 */
#include "fault/fault.h"

#include <stdatomic.h>
#include <unistd.h>

/* A frame may leave its stack pointer this far above what it writes first (probed frames: a page at a time). */
#define BELOW_SP ((uintptr_t)64 << 10)

static _Atomic bool on;

void vms__fault_report_unmanaged(void)
{
    atomic_store_explicit(&on, true, memory_order_relaxed);
}

static uintptr_t hex_at(const char **p)
{
    uintptr_t v = 0;

    for (;; (*p)++) {
        char c = **p;
        if (c >= '0' && c <= '9')
            v = v << 4 | (uintptr_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v << 4 | (uintptr_t)(c - 'a' + 10);
        else
            return v;
    }
}

/* What find_mapping looks for, and has found so far. */
struct mapping_search {
    uintptr_t addr;
    struct vms_fault *f;
};

/* One line of /proc/self/maps: the mapping's range and whether it can be written. */
static void mapping_line(const char *l, void *ctx)
{
    const struct mapping_search *s = ctx;
    struct vms_fault *f = s->f;
    uintptr_t addr = s->addr, lo = hex_at(&l), hi;

    if (*l++ != '-')
        return;
    hi = hex_at(&l);
    if (*l == ' ' && l[2] == 'w' && lo > addr && (!f->stack.hi || lo < f->stack.lo)) {
        f->stack.lo = lo; /* the nearest writable mapping above the access: the stack that ran out */
        f->stack.hi = hi;
    }
    if (lo <= addr && addr < hi)
        f->stack.guard_lo = lo; /* the access was in a mapping of its own (a guard): where it starts */
}

/* The stack mapping above addr (f->stack.lo, f->stack.hi), from /proc/self/maps; none when it cannot be read. */
static void find_mapping(uintptr_t addr, struct vms_fault *f)
{
    char buf[512];
    struct mapping_search s = { addr, f };

    vms__os_maps_each(buf, sizeof buf, mapping_line, &s);
}

bool vms__classify_unmanaged(const siginfo_t *si, struct vms_fault *f)
{
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);

    if (!atomic_load_explicit(&on, memory_order_relaxed) || f->signo != SIGSEGV ||
        (si->si_code != SEGV_MAPERR && si->si_code != SEGV_ACCERR))
        return false;
    /* Below the stack pointer, or in its own page. */
    if (!(f->addr < f->sp ? f->sp - f->addr <= BELOW_SP : (f->addr & ~(page - 1)) == (f->sp & ~(page - 1))))
        return false;
    f->cls = VMS_FAULT_UNMANAGED;
    find_mapping(f->addr, f);
    return true;
}
