/* SPDX-License-Identifier: MIT */
/*
 * The program the gdb extension is tested on (test_gdb.sh): 1,000 fibers
 * (or WAITERS, fewer) that wait, each in one of three known functions, and
 * one more fiber that is running when gdb looks.
 *   gdb_fibers live [WAITERS]      the last fiber calls gdb_fibers_stop(),
 *                                  where the test's breakpoint stops the live
 *                                  process; then all fibers end and the
 *                                  program exits 0
 *   gdb_fibers overflow [WAITERS]  the last fiber recurses until it hits its
 *                                  guard, under the abort policy: report,
 *                                  then death by SIGSEGV with a core dump
 * The waiting fibers wait until the last fiber wakes them.  Fiber i (from 0)
 * is named "waiter-i" and waits in wait_{a,b,c}[i % 3]: wait_a and wait_b
 * park, wait_c receives from a channel (inside the library's static
 * functions).  Each counts its rounds in a local, for `info locals`.
 */
#include "vmstack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone))
#define WAITERS 1000

static volatile int done;
static vms_fiber f[WAITERS + 1];
static vms_chan chan;

/* Three distinct functions, so that each fiber's backtrace says where it waits. */
#define WAITER(fn, wait)                                                                           \
    NOINLINE void *fn(void *arg)                                                                   \
    {                                                                                              \
        volatile int rounds = 0;                                                                   \
        int item;                                                                                  \
                                                                                                   \
        while (!done) {                                                                            \
            wait;                                                                                  \
            rounds++;                                                                              \
        }                                                                                          \
        (void)item;                                                                                \
        return arg;                                                                                \
    }
WAITER(wait_a, vms_fiber_park())
WAITER(wait_b, vms_fiber_park())
WAITER(wait_c, vms_chan_recv(&chan, &item, -1))

/* Where the live test's breakpoint stops the process. */
NOINLINE void gdb_fibers_stop(void)
{
    __asm__ volatile("");
}

/* Never reached: keeps the recursion one the compiler cannot call infinite. */
static volatile long bottom = -1;

NOINLINE long overflow_here(long n)
{
    volatile char pad[256];

    pad[n & 255] = (char)n;
    if (n == bottom)
        return 0;
    return overflow_here(n + 1) + pad[n & 255];
}

static int waiters = WAITERS;

static void *last(void *mode)
{
    if (strcmp(mode, "overflow") == 0)
        return (void *)overflow_here(0);
    gdb_fibers_stop();
    done = 1;
    vms_chan_close(&chan);
    for (int i = 0; i < waiters; i++)
        vms_fiber_wake(f[i]);
    return NULL;
}

int main(int argc, char **argv)
{
    void *(*const fns[3])(void *) = {wait_a, wait_b, wait_c};
    char name[32];

    if (argc < 2 || argc > 3 || (strcmp(argv[1], "live") && strcmp(argv[1], "overflow")) ||
        (argc == 3 && ((waiters = atoi(argv[2])) < 1 || waiters > WAITERS))) {
        fprintf(stderr, "usage: gdb_fibers live|overflow [WAITERS, at most %d]\n", WAITERS);
        return 2;
    }
    vms_set_overflow_policy(VMS_OVERFLOW_FIBER, VMS_OVERFLOW_ABORT);
    if (vms_chan_init(&chan, sizeof(int), 0)) {
        fprintf(stderr, "gdb_fibers: %s\n", vms_last_error());
        return 1;
    }
    for (int i = 0; i < waiters; i++) {
        snprintf(name, sizeof name, "waiter-%d", i);
        if (vms_fiber_spawn(&f[i], fns[i % 3], NULL, &(vms_fiber_opts){.name = name})) {
            fprintf(stderr, "gdb_fibers: %s\n", vms_last_error());
            return 1;
        }
    }
    if (vms_fiber_spawn(&f[waiters], last, argv[1], &(vms_fiber_opts){.name = argv[1]})) {
        fprintf(stderr, "gdb_fibers: %s\n", vms_last_error());
        return 1;
    }
    if (vms_run()) {
        fprintf(stderr, "gdb_fibers: %s\n", vms_last_error());
        return 1;
    }
    for (int i = 0; i <= waiters; i++)
        vms_fiber_join(f[i], NULL);
    vms_chan_destroy(&chan);
    puts("gdb_fibers: all fibers ended");
    return 0;
}
