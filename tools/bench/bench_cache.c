/* SPDX-License-Identifier: MIT */
/*
 * bench cache: what the per-CPU cache of stacks buys back -- the direct
 * analogue of Linus's answer to the clone() cost of vmalloc'd stacks.
 *
 * Fibers are spawned in bursts of 64 and then joined.  A single spawn+join
 * loop would never get past the per-thread cache of two stacks in front of
 * the per-CPU caches (src/core/cache.c), which stays on whatever VMSTACK_CACHE
 * says; and stacks beyond the pool go back to the kernel only in batches of
 * 32, so a burst must exceed 2 + 32 for that to happen at all.  Three
 * settings, each in a child process (settings are process-wide), measured
 * in interleaved rounds:
 *   on           the defaults: 2 per thread, 16 per CPU, 256 warm in the
 *                pool (so 18 of a burst come from caches, 46 from the pool)
 *   off          VMSTACK_CACHE=0: all but 2 go through the pool's lock, warm
 *   off_no_pool  VMSTACK_CACHE=0 VMSTACK_POOL=0: freed stacks also go back
 *                to the kernel (MADV_DONTNEED, batched) and fault in again
 *                when reused -- what the kernel paid before Linus's cache
 * The per-CPU level earns its keep against other threads on the pool's
 * lock, so on and off are measured again with two threads spawning at once
 * (on_2threads, off_2threads).  Timed in CPU time of the child process,
 * user and kernel, all threads: waiting for a CPU on a shared machine is no
 * cost of the cache, contention on a lock or a cache line is.
 *
 * cache_burst_ns: the allocator alone, where the per-CPU level must never
 * lose: two threads at once each allocate W stacks (one page written),
 * then free them, for W = 8, 32 and 128, per-CPU caches on and off.
 */
#include "bench.h"
#include "vmstack.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK (64 << 10)
#define BURST 64

/* Spawn + join of n fibers, BURST at a time; 0, or -1 after printing why. */
static int bursts(long n)
{
    const vms_fiber_opts opts = { .stack_size = STACK };
    vms_fiber f[BURST];

    for (long done = 0; done < n; done += BURST) {
        for (int i = 0; i < BURST; i++)
            if (vms_fiber_spawn(&f[i], bench_body, (void *)(intptr_t)i, &opts)) {
                fprintf(stderr, "vmstack bench cache: %s\n", vms_last_error());
                return -1;
            }
        for (int i = 0; i < BURST; i++)
            vms_fiber_join(f[i], NULL);
    }
    return 0;
}

/* In the child: one thread; CPU ns of the process. */
double bench_cache_worker(long n)
{
    double t0 = bench_cpu_ns();

    return bursts(n) ? -1 : bench_cpu_ns() - t0;
}

static void *half(void *arg)
{
    return bursts(*(long *)arg) ? arg : NULL;
}

/* In the child: two threads at once, n / 2 fibers each; CPU ns of both. */
double bench_cache2_worker(long n)
{
    long each = n / 2;
    double t0 = bench_cpu_ns();
    pthread_t t[2];
    void *failed[2] = { NULL, NULL };

    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, half, &each))
            return -1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], &failed[i]);
    return failed[0] || failed[1] ? -1 : bench_cpu_ns() - t0;
}

/* W stack allocations, then their frees, until n; 0 or -1. */
static int alloc_bursts(long n, long w)
{
    vms_stack st[128];

    for (long done = 0; done < n; done += w) {
        for (long i = 0; i < w; i++) {
            if (vms_stack_alloc(&st[i], STACK)) {
                fprintf(stderr, "vmstack bench cache: %s\n", vms_last_error());
                return -1;
            }
            ((char *)st[i].base)[st[i].size - 1] = 1;
        }
        for (long i = 0; i < w; i++)
            vms_stack_free(&st[i]);
    }
    return 0;
}

struct burst_job {
    long n, w;
};

static void *burst_thread(void *arg)
{
    struct burst_job *j = arg;

    return alloc_bursts(j->n, j->w) ? arg : NULL;
}

#define BURST_W(arg) ((arg) % 1024)
#define BURST_N(arg) ((arg) / 1024)

/* In the child: two threads, bursts of BURST_W(arg), BURST_N(arg) stacks in all; CPU ns of both. */
double bench_burst_worker(long arg)
{
    struct burst_job j = { BURST_N(arg) / 2, BURST_W(arg) };
    double t0 = bench_cpu_ns();
    pthread_t t[2];
    void *failed[2] = { NULL, NULL };

    if (j.w < 1 || j.w > 128)
        return -1;
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, burst_thread, &j))
            return -1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], &failed[i]);
    return failed[0] || failed[1] ? -1 : bench_cpu_ns() - t0;
}

struct burst_variant {
    struct bench_child *child;
    long w;
};

static double ask_burst(void *arg, long iters)
{
    struct burst_variant *b = arg;
    double ns = bench_child_ask(b->child, iters * 1024 + b->w);

    if (ns < 0)
        exit(1);
    return ns;
}

/* cache_burst_ns: {"on": {W: ns}, "off": {W: ns}}, per stack allocated and freed. */
static void bursts_on_off(struct bench_child *on, struct bench_child *off)
{
    static const long ws[] = { 8, 32, 128 };
    struct burst_variant bv[6];
    struct bench_variant v[6];
    char names[6][24], key[16];

    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++) {
            bv[2 * i + k] = (struct burst_variant){ k ? off : on, ws[i] };
            snprintf(names[2 * i + k], sizeof names[0], "burst %s W=%ld", k ? "off" : "on", ws[i]);
            v[2 * i + k] = (struct bench_variant){ .name = names[2 * i + k], .run = ask_burst, .arg = &bv[2 * i + k] };
        }
    bench_compare(v, 6, 15, 200000);
    bench_title("cache: two threads each allocating bursts of W stacks, then freeing them, per stack (CPU ns, median of 15)");
    for (int i = 0; i < 3; i++) {
        char note[64];
        snprintf(note, sizeof note, "on / off = %.2fx (goal <= 1.0)", v[2 * i].median_ns / v[2 * i + 1].median_ns);
        bench_row(names[2 * i], v[2 * i].median_ns, "ns", v[2 * i].spread, note);
        bench_row(names[2 * i + 1], v[2 * i + 1].median_ns, "ns", v[2 * i + 1].spread, "");
    }
    bench_json_open("cache_burst_ns");
    for (int k = 0; k < 2; k++) {
        bench_json_open(k ? "off" : "on");
        for (int i = 0; i < 3; i++) {
            snprintf(key, sizeof key, "%ld", ws[i]);
            bench_json_num(key, v[2 * i + k].median_ns);
            bench_plot_point("burst", k ? "per-CPU caches off" : "per-CPU caches on", (double)ws[i], v[2 * i + k].median_ns);
        }
        bench_json_close();
    }
    bench_json_close();
}

static double ask(void *arg, long iters)
{
    double ns = bench_child_ask(arg, iters);

    if (ns < 0)
        exit(1);
    return ns;
}

int bench_cache(void)
{
    static const char *const on[] = { "VMSTACK_CACHE=", "VMSTACK_POOL=", NULL };
    static const char *const off[] = { "VMSTACK_CACHE=0", "VMSTACK_POOL=", NULL };
    static const char *const off_no_pool[] = { "VMSTACK_CACHE=0", "VMSTACK_POOL=0", NULL };
    static const struct {
        const char *worker;
        const char *const *env;
    } setup[] = { { "cache", on }, { "cache", off }, { "cache", off_no_pool }, { "cache2", on }, { "cache2", off },
                  { "burst", on }, { "burst", off } };
    struct bench_child child[7] = { 0 };
    struct bench_variant v[] = {
        { .name = "on", .run = ask, .arg = &child[0] },
        { .name = "off", .run = ask, .arg = &child[1] },
        { .name = "off_no_pool", .run = ask, .arg = &child[2], .div = 10 },
        { .name = "on_2threads", .run = ask, .arg = &child[3] },
        { .name = "off_2threads", .run = ask, .arg = &child[4] },
    };
    int rc = 0;

    for (int i = 0; i < 7 && !rc; i++)
        rc = bench_child_start(&child[i], setup[i].worker, setup[i].env);
    if (!rc) {
        bench_compare(v, 3, 15, 160000);
        bench_compare(v + 3, 2, 15, 160000);
        bench_title("cache: spawn + join of fibers (64 KiB stacks) in bursts of %d, per fiber (CPU ns, median of 15)",
                    BURST);
        for (int i = 0; i < 5; i++)
            bench_row(v[i].name, v[i].median_ns, "ns", v[i].spread, "");
        bench_note("off: VMSTACK_CACHE=0 (per-CPU caches off; the per-thread 2 and the warm pool stay): %.2fx on",
                   v[1].median_ns / v[0].median_ns);
        bench_note("off_no_pool: also VMSTACK_POOL=0 (stacks return to the kernel and fault in again): %.2fx on",
                   v[2].median_ns / v[0].median_ns);
        bench_note("two threads at once: off / on = %.2fx", v[4].median_ns / v[3].median_ns);
        bench_json_variants("cache_effect", v, 5);
        bursts_on_off(&child[5], &child[6]);
    }
    for (int i = 0; i < 7; i++)
        bench_child_stop(&child[i]);
    return rc ? 1 : 0;
}
