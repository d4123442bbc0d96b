/* SPDX-License-Identifier: MIT */
/*
 * bench thread: pthread_create + join of a thread that writes 256 bytes of
 * its stack -- the article's clone() question itself: what do guarded,
 * virtually mapped stacks add to creating a thread?  Both variants ask for
 * the same 64 KiB stack with pthread_attr_setstacksize: glibc maps it (and
 * keeps it in its own stack cache for the next thread), vmstack takes a
 * guarded stack from its caches and adds the thread's guarded alternate
 * signal stack and its task record.  Timed in CPU time of the process (both
 * threads, user and kernel): on a shared machine the wall time of a
 * create + join is mostly waiting for a CPU, which no stack allocator causes.
 */
#include "bench.h"
#include "vmstack.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK (64 << 10)

static pthread_attr_t attr;

static double run_glibc(void *arg, long iters)
{
    double t0 = bench_cpu_ns();
    pthread_t t;

    (void)arg;
    for (long i = 0; i < iters; i++)
        if (pthread_create(&t, &attr, bench_body, (void *)(intptr_t)i) || pthread_join(t, NULL))
            bench_fail("pthread_create and join");
    return bench_cpu_ns() - t0;
}

static double run_vmstack(void *arg, long iters)
{
    double t0 = bench_cpu_ns();
    pthread_t t;

    (void)arg;
    for (long i = 0; i < iters; i++)
        if (vms_thread_create(&t, &attr, bench_body, (void *)(intptr_t)i, NULL) || vms_thread_join(t, NULL))
            bench_fail("vms_thread_create and join");
    return bench_cpu_ns() - t0;
}

int bench_thread(void)
{
    struct bench_variant v[] = {
        { .name = "glibc", .run = run_glibc },
        { .name = "vmstack", .run = run_vmstack },
    };
    pthread_t probe;
    int rc;

    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, STACK);
    if ((rc = vms_thread_create(&probe, &attr, bench_body, NULL, "bench")) || (rc = vms_thread_join(probe, NULL))) {
        fprintf(stderr, "vmstack bench thread: %s\n", vms_last_error());
        pthread_attr_destroy(&attr);
        return 1;
    }
    bench_compare(v, 2, 15, 5000);
    bench_title("thread: pthread_create + join, %d KiB stacks (attr stacksize for both) (CPU ns, median of 15)",
                STACK >> 10);
    for (int i = 0; i < 2; i++)
        bench_row(v[i].name, v[i].median_ns, "ns", v[i].spread, "");
    bench_note("vmstack / glibc = %.3fx (goal <= 1.05): %+.0f ns per thread, against the kernel's +1500 ns",
               v[1].median_ns / v[0].median_ns, v[1].median_ns - v[0].median_ns);
    bench_json_variants("thread_ns", v, 2);
    pthread_attr_destroy(&attr);
    return 0;
}
