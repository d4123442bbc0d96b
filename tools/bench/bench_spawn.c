/* SPDX-License-Identifier: MIT */
/*
 * bench spawn: spawn + run to completion + join of a fiber that writes 256
 * bytes of its 64 KiB stack -- the article's clone() question, for fibers.
 * All three variants run the same scheduler and switch code; only the
 * stack differs: malloc'd without guard, a fresh mmap + guard + munmap per
 * fiber, or a cached guarded vmstack stack.
 */
#include "bench.h"
#include "task/task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define STACK (64 << 10)

/* A fiber on a stack the caller made, through the same scheduler. */
static void run_on(char *base, long i)
{
    struct vms_fiber_desc f;
    struct vms_task task;

    if (vms__fiber_start(&f, &task, base, STACK, bench_body, (void *)(intptr_t)i) ||
        vms__fiber_wait(&f, NULL))
        bench_fail("starting a fiber on a stack of its own");
}

static double run_heap(void *arg, long iters)
{
    double t0 = bench_now_ns();

    (void)arg;
    for (long i = 0; i < iters; i++) {
        char *p = malloc(STACK);
        run_on(p, i);
        free(p);
    }
    return bench_now_ns() - t0;
}

static double run_mmap_guard(void *arg, long iters)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    double t0 = bench_now_ns();

    (void)arg;
    for (long i = 0; i < iters; i++) {
        char *p = mmap(NULL, STACK + pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (p == MAP_FAILED || mprotect(p, pg, PROT_NONE))
            bench_fail("mmap+mprotect of a fiber stack");
        run_on(p + pg, i);
        munmap(p, STACK + pg);
    }
    return bench_now_ns() - t0;
}

double bench_spawn_join(size_t stack, long iters)
{
    const vms_fiber_opts opts = { .stack_size = stack };
    double t0 = bench_now_ns();
    vms_fiber f;

    for (long i = 0; i < iters; i++)
        if (vms_fiber_spawn(&f, bench_body, (void *)(intptr_t)i, &opts) || vms_fiber_join(f, NULL))
            bench_fail("vms_fiber_spawn and join");
    return bench_now_ns() - t0;
}

static double run_vmstack(void *arg, long iters)
{
    (void)arg;
    return bench_spawn_join(STACK, iters);
}

int bench_spawn(void)
{
    struct bench_variant v[] = {
        { .name = "heap", .run = run_heap },
        { .name = "mmap_guard", .run = run_mmap_guard, .div = 50 },
        { .name = "vmstack", .run = run_vmstack },
    };
    const vms_fiber_opts opts = { .stack_size = STACK };
    vms_fiber probe;

    if (vms_fiber_spawn(&probe, bench_body, NULL, &opts) || vms_fiber_join(probe, NULL)) {
        fprintf(stderr, "vmstack bench spawn: %s\n", vms_last_error());
        return 1;
    }
    bench_compare(v, 3, 15, 200000);
    bench_title("spawn: spawn + run + join of a fiber writing %d bytes of its %d KiB stack (ns, median of 15)",
                BENCH_TOUCH, STACK >> 10);
    for (int i = 0; i < 3; i++)
        bench_row(v[i].name, v[i].median_ns, "ns", v[i].spread, "");
    bench_note("vmstack / heap = %.2fx (goal <= 1.1); mmap_guard / vmstack = %.0fx (goal >= 50)",
               v[2].median_ns / v[0].median_ns, v[1].median_ns / v[2].median_ns);
    bench_json_variants("spawn_ns", v, 3);
    return 0;
}
