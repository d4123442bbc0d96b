/* SPDX-License-Identifier: MIT */
/*
 * A fault in a tripwire window that was taken away before the handler
 * looked: another thread reads a stack (the usage table at exit, a
 * collector) and faults in its window, and the stack's task ends before
 * the handler runs.  Passed on as a fault of the program's, it killed the
 * process (or, through the default action put back, the next tripwire of
 * any thread did).  The race is made here in order: a fiber's window is
 * taken away when the fiber ends, then the handler's hook is handed the
 * fault at an address that was in it.  It must ask for a retry; the same
 * fault again, with no window taken away since, is a real one and goes
 * on; after another window went, a retry again.
 */
#include "check.h"
#include "trace/trace.h"
#include "vmstack.h"

#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static volatile char *probe;

static void *yields(void *arg)
{
    vms_yield();
    return arg;
}

/* Reads a byte of another fiber's live window: a real tripwire fault, handled, not passed on. */
static void *reads(void *arg)
{
    (void)arg;
    return (void *)(uintptr_t)*probe;
}

static bool fault_at(uintptr_t addr, ucontext_t *uc)
{
    siginfo_t si;

    memset(&si, 0, sizeof si);
    si.si_signo = SIGSEGV;
    si.si_code = SEGV_ACCERR;
    si.si_addr = (void *)addr;
    return vms__trace_fault(&si, uc);
}

/* Runs a fiber that yields once, with a reader of its window in between; returns an address its window held. */
static uintptr_t window_that_went(void)
{
    uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE), top;
    vms_fiber a, r;
    vms_stack st;

    CHECK_EQ(vms_fiber_spawn(&a, yields, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_stack(a, &st), 0);
    top = (uintptr_t)vms_stack_top(&st);
    /* The window ends below the page under the first frame: three pages down is inside it. */
    probe = (volatile char *)(top - 3 * pg);
    CHECK_EQ(vms_fiber_spawn(&r, reads, NULL, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    return top - 3 * pg;
}

int main(void)
{
    ucontext_t uc;
    uintptr_t addr;

    if (vms_guard_mode_active() == VMS_GUARD_NONE) {
        printf("skip: no guards, no tripwires\n");
        return 0;
    }
    CHECK_EQ(vms_trace_enable(0, 0), 0);
    addr = window_that_went();
    CHECK_EQ(getcontext(&uc), 0);
    CHECK(fault_at(addr, &uc));  /* its window went: retried */
    CHECK(!fault_at(addr, &uc)); /* again, nothing went meanwhile: a real fault */
    CHECK(!fault_at(addr, &uc));
    window_that_went();
    CHECK(fault_at(addr, &uc));  /* a window went since: retried once more */
    CHECK(!fault_at(addr, &uc));
    CHECK(fault_at(addr + 8, &uc)); /* another fault: retried once */
    CHECK(!fault_at(addr + 8, &uc));
    printf("ok: a fault in a window gone before the handler looked is retried, a real one passed on (%s)\n",
           vms_guard_mode_name(vms_guard_mode_active()));
    return 0;
}
