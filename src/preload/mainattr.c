/* SPDX-License-Identifier: MIT */
/*
 * The main thread's stack as pthread_getattr_np reports it plain, while
 * 'vmstack trace' has a tripwire on it in mprotect mode.
 *
 * glibc finds the main thread's stack in /proc/self/maps: from the top of
 * the mapping that holds __libc_stack_end down to the rlimit, but never
 * below the end of the mapping right under it.  A PROT_NONE tripwire
 * splits the stack's mapping, so glibc would stop at the tripwire (and a
 * part of the stack the program reached before lies below it): the
 * program would see a smaller stack than plain, and a frame below the
 * tripwire's old place outside its own stack.  Here glibc's walk is done
 * again with the tripwire, and the stack pieces it cut off, taken as the
 * stack they are.  MADV_GUARD_INSTALL splits nothing: there the answer is
 * glibc's.
 */
#include "preload/preload.h"
#include "trace/trace.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

extern void *__libc_stack_end;

#define BELOW 8 /* mappings kept below the stack: windows (two while one moves) and the pieces between */

struct range {
    uintptr_t lo, hi;
    bool stack_like; /* anonymous, read-write, private: a piece of the stack a window cut off */
};

/* One line of /proc/self/maps; false at its end. */
static bool next_range(FILE *f, struct range *r)
{
    char line[512], perms[8];
    unsigned long lo, hi, off, inode;
    int name = 0;

    if (!fgets(line, sizeof line, f) ||
        sscanf(line, "%lx-%lx %7s %lx %*x:%*x %lu %n", &lo, &hi, perms, &off, &inode, &name) < 5)
        return false;
    r->lo = lo;
    r->hi = hi;
    r->stack_like = !strcmp(perms, "rw-p") && inode == 0 && (!name || line[name] == '\n' || line[name] == '\0');
    return true;
}

/*
 * The end of the mapping under the stack whose top mapping starts at
 * start, with tripwires and the stack pieces right under them skipped;
 * 0 when there is none.  below[] holds the mappings under start, the
 * last one highest.
 */
static uintptr_t last_to(const struct range *below, int n, uintptr_t start)
{
    bool after_wire = false;

    for (int i = n - 1; i >= 0; i--) {
        const struct range *m = &below[i];
        bool wire = vms__trace_holds(m->lo);

        if (m->hi != start || !(wire || (after_wire && m->stack_like)))
            return m->hi;
        after_wire = wire;
        start = m->lo;
    }
    return 0;
}

void vms__main_attr_untrace(pthread_attr_t *attr)
{
    struct range below[BELOW], r;
    uintptr_t end = (uintptr_t)__libc_stack_end, page = vms__g.page, to = 0, floor, top;
    struct rlimit rl;
    size_t size, want;
    void *addr;
    FILE *f;
    int n = 0;

    if (pthread_attr_getstack(attr, &addr, &size) || !vms__trace_holds((uintptr_t)addr - 1) ||
        getrlimit(RLIMIT_STACK, &rl) || !(f = fopen("/proc/self/maps", "re")))
        return; /* glibc's answer was not cut by a tripwire */
    while (next_range(f, &r)) {
        if (r.lo <= end && end < r.hi) {
            to = r.hi;
            break;
        }
        if (n == BELOW)
            memmove(below, below + 1, sizeof below - sizeof *below), n--;
        below[n++] = r;
    }
    fclose(f);
    if (!to)
        return;
    /* glibc's own arithmetic (nptl/pthread_getattr_np.c), with the lower end found again. */
    top = (end & -page) + page;
    want = (rl.rlim_cur - (to - top)) & -page;
    floor = last_to(below, n, r.lo);
    if (want > top - floor)
        want = top - floor;
    pthread_attr_setstack(attr, (void *)(top - want), want);
}
