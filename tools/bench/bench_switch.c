/* SPDX-License-Identifier: MIT */
/*
 * bench switch: one context switch in a ping-pong between two fibers,
 * vms_yield() against glibc's swapcontext(), which also saves and restores
 * the signal mask with a system call on every switch.
 */
#include "bench.h"
#include "vmstack.h"

#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

#define UC_STACK (64 << 10)

static void *yielder(void *arg)
{
    for (long n = (long)(intptr_t)arg; n > 0; n--)
        vms_yield();
    return NULL;
}

static double run_vmstack(void *arg, long iters)
{
    vms_fiber a, b;
    double t0;

    (void)arg;
    /* Each yield is one switch, to the other fiber. */
    if (vms_fiber_spawn(&a, yielder, (void *)(intptr_t)(iters / 2), NULL) ||
        vms_fiber_spawn(&b, yielder, (void *)(intptr_t)(iters / 2), NULL))
        bench_fail("spawning the two switching fibers");
    t0 = bench_now_ns();
    if (vms_run())
        bench_fail("running the two switching fibers");
    t0 = bench_now_ns() - t0;
    vms_fiber_join(a, NULL);
    vms_fiber_join(b, NULL);
    return t0;
}

struct uc_pair {
    ucontext_t main, ctx[2];
    long n;
};

static struct uc_pair *uc;

static void uc_body(int self)
{
    for (long n = uc->n; n > 0; n--)
        swapcontext(&uc->ctx[self], &uc->ctx[!self]);
}

/* Not in a loop: getcontext returns twice, so nothing may change after it. */
static void uc_make(int self, char *stack)
{
    ucontext_t *c = &uc->ctx[self];

    getcontext(c);
    c->uc_stack.ss_sp = stack;
    c->uc_stack.ss_size = UC_STACK;
    c->uc_link = &uc->main;
    makecontext(c, (void (*)(void))uc_body, 1, self);
}

static double run_ucontext(void *arg, long iters)
{
    char *stacks = malloc(2 * UC_STACK);
    double t0;

    (void)arg;
    uc = calloc(1, sizeof *uc);
    if (!stacks || !uc)
        bench_fail("allocating the ucontext stacks");
    uc->n = iters / 2;
    uc_make(0, stacks);
    uc_make(1, stacks + UC_STACK);
    /* ctx[0] ends first and returns to main; ctx[1] is left suspended. */
    t0 = bench_now_ns();
    swapcontext(&uc->main, &uc->ctx[0]);
    t0 = bench_now_ns() - t0;
    free(uc);
    free(stacks);
    return t0;
}

int bench_switch(void)
{
    struct bench_variant v[] = {
        { .name = "vmstack", .run = run_vmstack },
        { .name = "ucontext", .run = run_ucontext, .div = 20 },
    };

    bench_compare(v, 2, 15, 2000000);
    bench_title("switch: one switch in a ping-pong between two fibers (ns, median of 15)");
    for (int i = 0; i < 2; i++)
        bench_row(v[i].name, v[i].median_ns, "ns", v[i].spread, "");
    bench_note("vmstack: %.1f ns per switch (goal <= 6); swapcontext / vmstack = %.0fx",
               v[0].median_ns, v[1].median_ns / v[0].median_ns);
    bench_json_variants("switch_ns", v, 2);
    return 0;
}
