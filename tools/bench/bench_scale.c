/* SPDX-License-Identifier: MIT */
/*
 * bench scale: a million live fibers.  The kernel's guard pages cost only a
 * page-table entry; here, in the default (madvise) mode, a guard is a PTE
 * marker and adds no VMA, so the number of live stacks is bounded by memory,
 * not by vm.max_map_count.  In the mprotect mode every stack costs two VMAs,
 * and the ceiling is measured in a child process (VMSTACK_GUARD=mprotect)
 * by spawning until the first error.
 *
 * One shot, not repeated: the figures are counts (VMAs, bytes) and one
 * elapsed time, and a second million would cost as long again.  Each fiber
 * writes 256 bytes of its stack, then keeps yielding until told to stop, so
 * all are live at once.  Where guards are on, a fiber has no canary at its
 * stack's bottom: it costs its top page and its entry in the slot table.
 */
#include "bench.h"
#include "proc.h"
#include "vmstack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIBERS 1000000L
#define QUICK_FIBERS 10000L

static volatile int stop;

static void *hold(void *arg)
{
    char buf[256];

    memset(buf, 1, sizeof buf);
    BENCH_KEEP(buf);
    (void)arg;
    while (!stop)
        vms_yield();
    return NULL;
}

static void *pass(void *arg)
{
    return arg;
}

/* Spawns up to n holding fibers into h; the number spawned (stops at the first error). */
static long spawn_holders(vms_fiber *h, long n)
{
    long i;

    for (i = 0; i < n; i++)
        if (vms_fiber_spawn(&h[i], hold, NULL, NULL))
            break;
    return i;
}

/*
 * Runs every fiber until it has yielded: joining a fiber spawned last
 * puts the main context behind all the others in the run queue.
 */
static int run_all_once(void)
{
    vms_fiber g;

    return vms_fiber_spawn(&g, pass, NULL, NULL) || vms_fiber_join(g, NULL) ? -1 : 0;
}

static void end_all(vms_fiber *h, long n)
{
    stop = 1;
    vms_run();
    for (long i = 0; i < n; i++)
        vms_fiber_join(h[i], NULL);
    stop = 0;
}

/* In the child (VMSTACK_GUARD=mprotect): how many fibers until the first error. */
double bench_scale_ceiling_worker(long max)
{
    vms_fiber *h = calloc((size_t)max, sizeof *h);
    long n;

    if (!h)
        return -1;
    n = spawn_holders(h, max);
    if (n < max)
        fprintf(stderr, "  mprotect mode stopped at %ld fibers: %s\n", n, vms_last_error());
    end_all(h, n);
    free(h);
    return (double)n;
}

static long max_map_count(void)
{
    long v = -1;
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");

    if (f) {
        if (fscanf(f, "%ld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

static double mprotect_ceiling(long max)
{
    static const char *const env[] = { "VMSTACK_GUARD=mprotect", NULL };
    struct bench_child c = { 0 };
    double n = -1;

    if (bench_child_start(&c, "ceiling", env) == 0)
        n = bench_child_ask(&c, max);
    bench_child_stop(&c);
    return n;
}

int bench_scale(void)
{
    long want = bench_quick() ? QUICK_FIBERS : FIBERS;
    vms_fiber *h = calloc((size_t)want, sizeof *h);
    long vmas0, rss0, vmas, rss, live;
    double t0, cpu0, secs, cpu, ceiling;
    const char *mode;
    char label[64];

    if (!h) {
        fprintf(stderr, "vmstack bench scale: out of memory for %ld handles\n", want);
        return 1;
    }
    memset(h, 0xff, (size_t)want * sizeof *h); /* resident before the baseline */
    mode = vms_guard_mode_name(vms_guard_mode_active());
    bench_title("scale: %ld live fibers on default (64 KiB) stacks, each yielding (one shot, not repeated)", want);
    vmas0 = proc_vmas();
    rss0 = proc_rss();
    t0 = bench_now_ns();
    cpu0 = bench_cpu_ns();
    live = spawn_holders(h, want);
    if (live < want)
        fprintf(stderr, "vmstack bench scale: stopped at %ld fibers: %s\n", live, vms_last_error());
    if (run_all_once()) {
        fprintf(stderr, "vmstack bench scale: %s\n", vms_last_error());
        free(h);
        return 1;
    }
    secs = (bench_now_ns() - t0) / 1e9;
    cpu = (bench_cpu_ns() - cpu0) / 1e9;
    vmas = proc_vmas() - vmas0;
    rss = proc_rss() - rss0;
    end_all(h, live);
    free(h);
    ceiling = mprotect_ceiling(FIBERS);

    bench_note("guard mode %s: %ld live, %ld VMAs added, %.0f bytes RSS per stack", mode, live, vmas,
               (double)rss / (double)(live ? live : 1));
    bench_note("%.2f s to spawn and run them all (%.2f s of CPU)", secs, cpu);
    bench_note("mprotect mode (2 VMAs per stack): %.0f live fibers before the VMA limit (vm.max_map_count %ld)",
               ceiling, max_map_count());
    snprintf(label, sizeof label, "%s guards (default): %ld VMAs added", mode, vmas);
    bench_plot_bar("scale", label, (double)live, -1);
    bench_plot_bar("scale", "mprotect guards: 2 VMAs per stack", ceiling, -1);
    bench_json_open("scale");
    bench_json_str("guard_mode", mode);
    bench_json_num("live_stacks", (double)live);
    bench_json_num("vmas_added", (double)vmas);
    bench_json_num("rss_per_stack_bytes", (double)(rss / (live ? live : 1)));
    bench_json_num("spawn_all_s", secs);
    bench_json_num("spawn_all_cpu_s", cpu);
    bench_json_num("mprotect_ceiling", ceiling);
    bench_json_num("max_map_count", (double)max_map_count());
    bench_json_close();
    return ceiling < 0;
}
