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
 */
#include "bench.h"
#include "vmstack.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STACK (64 << 10)
#define TOUCH 256
#define BURST 64

static void *body(void *arg)
{
    char buf[TOUCH];

    memset(buf, (int)(intptr_t)arg, sizeof buf);
    BENCH_KEEP(buf);
    return NULL;
}

/* Spawn + join of n fibers, BURST at a time; 0, or -1 after printing why. */
static int bursts(long n)
{
    const vms_fiber_opts opts = { .stack_size = STACK };
    vms_fiber f[BURST];

    for (long done = 0; done < n; done += BURST) {
        for (int i = 0; i < BURST; i++)
            if (vms_fiber_spawn(&f[i], body, (void *)(intptr_t)i, &opts)) {
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
    } setup[] = { { "cache", on }, { "cache", off }, { "cache", off_no_pool }, { "cache2", on }, { "cache2", off } };
    struct bench_child child[5] = { 0 };
    struct bench_variant v[] = {
        { .name = "on", .run = ask, .arg = &child[0] },
        { .name = "off", .run = ask, .arg = &child[1] },
        { .name = "off_no_pool", .run = ask, .arg = &child[2], .div = 10 },
        { .name = "on_2threads", .run = ask, .arg = &child[3] },
        { .name = "off_2threads", .run = ask, .arg = &child[4] },
    };
    int rc = 0;

    for (int i = 0; i < 5 && !rc; i++)
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
    }
    for (int i = 0; i < 5; i++)
        bench_child_stop(&child[i]);
    return rc ? 1 : 0;
}
