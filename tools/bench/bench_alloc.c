/* SPDX-License-Identifier: MIT */
/*
 * bench alloc: one alloc + free of a 64 KiB stack that is written on one
 * page, as a task would.  Baselines: a malloc'd stack without guard, and
 * a fresh mmap + guard + munmap per stack (Boost's protected_fixedsize_stack,
 * folly's GuardPageAllocator without its cache).
 */
#include "bench.h"
#include "vmstack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define STACK (64 << 10)
#define TOUCH 256

static void touch(char *top, long i)
{
    memset(top - TOUCH, (int)i, TOUCH);
    BENCH_KEEP(top);
}

static double run_malloc(void *arg, long iters)
{
    double t0 = bench_now_ns();

    (void)arg;
    for (long i = 0; i < iters; i++) {
        char *p = malloc(STACK);
        touch(p + STACK, i);
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
        if (p == MAP_FAILED)
            bench_fail("mmap of a stack");
        mprotect(p, pg, PROT_NONE);
        touch(p + pg + STACK, i);
        munmap(p, STACK + pg);
    }
    return bench_now_ns() - t0;
}

static double run_vmstack(void *arg, long iters)
{
    double t0 = bench_now_ns();
    vms_stack st;

    (void)arg;
    for (long i = 0; i < iters; i++) {
        if (vms_stack_alloc(&st, STACK))
            bench_fail("vms_stack_alloc");
        touch(vms_stack_top(&st), i);
        vms_stack_free(&st);
    }
    return bench_now_ns() - t0;
}

static double run_vmstack_scrub(void *arg, long iters)
{
    double ns;

    vms_set_scrub(1);
    ns = run_vmstack(arg, iters);
    vms_set_scrub(0);
    return ns;
}

int bench_alloc(void)
{
    struct bench_variant v[] = {
        { .name = "malloc", .run = run_malloc },
        { .name = "mmap_guard", .run = run_mmap_guard, .div = 50 },
        { .name = "vmstack", .run = run_vmstack },
    };
    struct bench_variant scrub[] = {
        { .name = "vmstack", .run = run_vmstack },
        { .name = "vmstack_scrub", .run = run_vmstack_scrub },
    };
    vms_stack probe;

    if (vms_stack_alloc(&probe, STACK)) {
        fprintf(stderr, "vmstack bench alloc: %s\n", vms_last_error());
        return 1;
    }
    vms_stack_free(&probe);
    bench_compare(v, 3, 15, 200000);
    bench_title("alloc: one alloc+free of a %d KiB stack written on one page (ns, median of 15)", STACK >> 10);
    for (int i = 0; i < 3; i++)
        bench_row(v[i].name, v[i].median_ns, "ns", v[i].spread, "");
    bench_note("vmstack / malloc = %.2fx (goal <= 1.5); mmap_guard / vmstack = %.0fx (goal >= 50)",
               v[2].median_ns / v[0].median_ns, v[1].median_ns / v[2].median_ns);
    bench_json_variants("alloc_free_ns", v, 3);

    bench_compare(scrub, 2, 15, 200000);
    bench_row("scrub on", scrub[1].median_ns, "ns", scrub[1].spread, "");
    bench_note("scrub (zero the used %d bytes on free, found with mincore) adds %.0f ns", TOUCH,
               scrub[1].median_ns - scrub[0].median_ns);
    bench_json_num("scrub_cost_ns", scrub[1].median_ns - scrub[0].median_ns);
    return 0;
}
