/* SPDX-License-Identifier: MIT */
/*
 * bench peers: vmstack against Boost.Context, the allocator a C++ runtime
 * author would otherwise pick, in one run.  Spawn: callcc + run + exit on
 * Boost's fixedsize (malloc), pooled (boost::pool) and protected (mmap +
 * guard page) stacks, against vms_fiber_spawn + join on a cached guarded
 * stack; every body writes the same 256 bytes of a 64 KiB stack.  Switch:
 * jump_fcontext ping-pong against vms_yield ping-pong.  Boost's side is
 * built -O2 -DNDEBUG in peers_boost.cpp; without Boost.Context the
 * benchmark says so and adds no keys.
 *
 * Boost's side is a module of its own (vmstack-peers.so), opened here:
 * linked into the tool, Boost and the C++ runtime would be loaded by every
 * 'vmstack run', for a benchmark.
 */
#include "bench.h"
#include "vmstack.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef VMS_HAVE_BOOST_CONTEXT
#include "bench/peers_boost.h"
#include "cmd.h"

#include <dlfcn.h>
#include <limits.h>

_Static_assert(PEERS_TOUCH == BENCH_TOUCH, "the peers' bodies write what bench_body does");

#define PEERS_MODULE "vmstack-peers.so"

static double (*boost_spawn)(enum peers_boost_stack kind, long iters);
static double (*boost_switch)(long iters);

const char *bench_peers_open(void **m)
{
    char path[PATH_MAX];

    if (!cmd_find_lib(PEERS_MODULE, path, sizeof path))
        return "is neither next to the vmstack binary nor in its install directory";
    if (!(*m = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        return dlerror();
    return NULL;
}

static const char *open_module(void)
{
    const char *why;
    void *m;

    if ((why = bench_peers_open(&m)))
        return why;
    boost_spawn = (double (*)(enum peers_boost_stack, long))dlsym(m, "peers_boost_spawn");
    boost_switch = (double (*)(long))dlsym(m, "peers_boost_switch");
    return boost_spawn && boost_switch ? NULL : "lacks peers_boost_spawn or peers_boost_switch";
}

static double run_vmstack_spawn(void *arg, long iters)
{
    (void)arg;
    return bench_spawn_join(PEERS_STACK, iters);
}

static double run_boost_spawn(void *arg, long iters)
{
    return boost_spawn((enum peers_boost_stack)(intptr_t)arg, iters);
}

static void *yielder(void *arg)
{
    for (long n = (long)(intptr_t)arg; n > 0; n--)
        vms_yield();
    return NULL;
}

static double run_vmstack_yield(void *arg, long iters)
{
    const vms_fiber_opts opts = { .stack_size = PEERS_STACK };
    vms_fiber a, b;
    double t0;

    (void)arg;
    if (vms_fiber_spawn(&a, yielder, (void *)(intptr_t)(iters / 2), &opts) ||
        vms_fiber_spawn(&b, yielder, (void *)(intptr_t)(iters / 2), &opts))
        abort();
    t0 = bench_now_ns();
    if (vms_run())
        abort();
    t0 = bench_now_ns() - t0;
    vms_fiber_join(a, NULL);
    vms_fiber_join(b, NULL);
    return t0;
}

static double run_boost_switch(void *arg, long iters)
{
    (void)arg;
    return boost_switch(iters);
}

/* {"key": {"name": ns, ...}} inside "peers", and bars of the peers plot. */
static void json_and_plot(const char *key, const char *prefix, const struct bench_variant *v, int n)
{
    char label[64];

    bench_json_open(key);
    for (int i = 0; i < n; i++) {
        bench_json_num(v[i].name, v[i].median_ns);
        snprintf(label, sizeof label, "%s%s", prefix, v[i].name);
        bench_plot_bar("peers", label, v[i].median_ns, v[i].spread);
    }
    bench_json_close();
}

int bench_peers(void)
{
    struct bench_variant sp[] = {
        { .name = "boost_fixedsize", .run = run_boost_spawn, .arg = (void *)(intptr_t)PEERS_FIXEDSIZE },
        { .name = "boost_pooled", .run = run_boost_spawn, .arg = (void *)(intptr_t)PEERS_POOLED },
        { .name = "boost_protected", .run = run_boost_spawn, .arg = (void *)(intptr_t)PEERS_PROTECTED, .div = 20 },
        { .name = "vmstack", .run = run_vmstack_spawn },
    };
    struct bench_variant sw[] = {
        { .name = "boost_fcontext", .run = run_boost_switch },
        { .name = "vmstack_yield", .run = run_vmstack_yield },
    };
    const char *why = open_module();

    if (why) {
        bench_title("peers: skipped, " PEERS_MODULE " %s: reinstall vmstack", why);
        return 0;
    }

    bench_compare(sp, 4, 15, 200000);
    bench_compare(sw, 2, 15, 2000000);
    bench_title("peers: spawn + run + exit, %d bytes written of a %d KiB stack (ns, median of 15)", PEERS_TOUCH,
                PEERS_STACK >> 10);
    for (int i = 0; i < 4; i++)
        bench_row(sp[i].name, sp[i].median_ns, "ns", sp[i].spread, "");
    bench_note("vmstack (guarded) / Boost pooled (unguarded) = %.2fx (goal <= 0.8); "
               "/ Boost protected = %.3fx", sp[3].median_ns / sp[1].median_ns, sp[3].median_ns / sp[2].median_ns);
    bench_title("peers: one switch in a ping-pong (ns, median of 15)");
    for (int i = 0; i < 2; i++)
        bench_row(sw[i].name, sw[i].median_ns, "ns", sw[i].spread, "");
    bench_note("vms_yield / jump_fcontext = %.2fx (goal <= 1.0)", sw[1].median_ns / sw[0].median_ns);
    bench_json_open("peers");
    json_and_plot("spawn_ns", "spawn ", sp, 4);
    json_and_plot("switch_ns", "switch ", sw, 2);
    bench_json_close();
    return 0;
}

#else

int bench_peers(void)
{
    bench_title("peers: skipped, no vmstack-peers.so: vmstack was built without Boost.Context (libboost-context-dev), or its Debian package vmstack-bench-boost is not installed");
    return 0;
}

#endif
