/* SPDX-License-Identifier: MIT */
/*
 * bench ring: one turn in a ring of N fibers (each writes 256 bytes of its
 * stack, one byte per cache line, and yields), with stack colouring and
 * without.  Every stack top has the same address modulo the page size, so
 * without colour the fibers' first frames all fall into one set of the L1
 * cache and evict one another as the ring turns; colour spreads them.
 * Both variants run on guarded vmstack stacks through the same scheduler:
 * coloured ones from vms_fiber_spawn (64 KiB asked, 2 KiB more for the
 * colour: an 80 KiB size class), plain ones as fibers were without
 * colouring: 64 KiB stacks from vms_stack_alloc, started at their very top
 * (vms__fiber_start).  The size class also changes the distance between
 * stacks (96 instead of 80 KiB with 16 KiB guards), which spreads their
 * tops over other sets of the larger caches, indexed by higher address
 * bits: part of what colour buys.
 * Timed in CPU time of the thread, in interleaved rounds.
 */
#include "bench.h"
#include "task/task.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define STACK (64 << 10)
#define TOUCH 256
#define LINE 64

static const long ring_sizes[] = { 2, 16, 64, 512, 4096 };
#define NSIZES (sizeof ring_sizes / sizeof ring_sizes[0])

struct ring {
    long n;
    int plain;
};

static void *turn(void *arg)
{
    char buf[TOUCH];

    for (long t = (long)(intptr_t)arg; t > 0; t--) {
        for (int i = 0; i < TOUCH; i += LINE)
            buf[i] = (char)t;
        BENCH_KEEP(buf);
        vms_yield();
    }
    return NULL;
}

/* n fibers on plain (uncoloured) stacks, each turning turns times. */
static int run_plain(long n, long turns, vms_stack *st)
{
    for (long i = 0; i < n; i++) {
        struct vms_slot *slot;
        if (vms_stack_alloc(&st[i], STACK))
            return -1;
        slot = vms__slot_of_id(st[i].id);
        vms__fiber_start(vms__slot_fiber(slot), &slot->task, st[i].base, st[i].size, turn, (void *)(intptr_t)turns);
    }
    if (vms_run())
        return -1;
    for (long i = 0; i < n; i++) {
        vms__fiber_wait(vms__slot_fiber(vms__slot_of_id(st[i].id)), NULL);
        vms_stack_free(&st[i]);
    }
    return 0;
}

static int run_coloured(long n, long turns, vms_fiber *f)
{
    const vms_fiber_opts opts = { .stack_size = STACK };

    for (long i = 0; i < n; i++)
        if (vms_fiber_spawn(&f[i], turn, (void *)(intptr_t)turns, &opts))
            return -1;
    if (vms_run())
        return -1;
    for (long i = 0; i < n; i++)
        vms_fiber_join(f[i], NULL);
    return 0;
}

/* iters fiber turns in all: n fibers, iters / n turns each (at least 8). */
static double run_ring(void *arg, long iters)
{
    const struct ring *r = arg;
    long turns = iters / r->n > 8 ? iters / r->n : 8;
    void *mem = calloc((size_t)r->n, r->plain ? sizeof(vms_stack) : sizeof(vms_fiber));
    double t0 = bench_thread_cpu_ns();
    int rc;

    if (!mem)
        abort();
    rc = r->plain ? run_plain(r->n, turns, mem) : run_coloured(r->n, turns, mem);
    t0 = bench_thread_cpu_ns() - t0;
    free(mem);
    if (rc) {
        fprintf(stderr, "vmstack bench ring: %s\n", vms_last_error());
        exit(1);
    }
    /* Per fiber turn; bench_compare divides by iters. */
    return t0 * (double)iters / ((double)turns * (double)r->n);
}

int bench_ring(void)
{
    struct ring rings[NSIZES][2];
    struct bench_variant v[2 * NSIZES];
    char names[2 * NSIZES][32];
    size_t nv = bench_quick() ? NSIZES - 1 : NSIZES;
    char key[32];

    for (size_t i = 0; i < nv; i++)
        for (int k = 0; k < 2; k++) {
            rings[i][k] = (struct ring){ ring_sizes[i], k };
            snprintf(names[2 * i + k], sizeof names[0], "ring %s %ld", k ? "plain" : "coloured", ring_sizes[i]);
            v[2 * i + k] = (struct bench_variant){ .name = names[2 * i + k], .run = run_ring, .arg = &rings[i][k] };
        }
    bench_compare(v, (int)(2 * nv), 15, 200000);
    bench_title("ring: one turn (256 bytes written, then yield) in a ring of N fibers, 64 KiB stacks "
                "(CPU ns, median of 15)");
    for (size_t i = 0; i < nv; i++) {
        char note[64];
        snprintf(note, sizeof note, "coloured / plain = %.2fx", v[2 * i].median_ns / v[2 * i + 1].median_ns);
        bench_row(names[2 * i], v[2 * i].median_ns, "ns", v[2 * i].spread, note);
        bench_row(names[2 * i + 1], v[2 * i + 1].median_ns, "ns", v[2 * i + 1].spread, "");
    }
    bench_note("goal: coloured / plain <= 0.75 at 512 fibers");
    bench_json_open("ring_ns");
    for (int k = 0; k < 2; k++) {
        bench_json_open(k ? "plain" : "coloured");
        for (size_t i = 0; i < nv; i++) {
            snprintf(key, sizeof key, "%ld", ring_sizes[i]);
            bench_json_num(key, v[2 * i + k].median_ns);
            bench_plot_point("ring", k ? "plain: every top at the same page offset" : "coloured tops", (double)ring_sizes[i],
                             v[2 * i + k].median_ns);
        }
        bench_json_close();
    }
    bench_json_close();
    return 0;
}
