/* SPDX-License-Identifier: MIT */
/*
 * 100,000 fibers alive at once, each on its own guarded stack: all spawned
 * before any runs, all yielding once in between, results joined; then as
 * many detached fibers, whose stacks come back without a join.  In mprotect
 * mode every stack costs two VMAs, so vm.max_map_count bounds the count;
 * under ThreadSanitizer its limit on live fibers does.
 */
#include "check.h"
#include "vmstack.h"

#include <stdlib.h>

static long ran;

static void *work(void *arg)
{
    volatile char buf[256];

    buf[0] = 1;
    ran++;
    vms_yield();
    ran += buf[0];
    return (char *)arg + 1;
}

/* ThreadSanitizer keeps a context per live fiber, at most 8128. */
#if defined(__SANITIZE_THREAD__)
#define MANY 5000
#else
#define MANY 100000
#endif

int main(void)
{
    long n = vms_guard_mode_active() == VMS_GUARD_MPROTECT ? 20000 : MANY;
    vms_fiber *f = malloc((size_t)n * sizeof *f);
    vms_sched_stats s;
    vms_stats before, during, after;

    CHECK(f);
    /* The first spawn also sets up this thread (its alternate signal stack is a vmstack stack). */
    CHECK_EQ(vms_fiber_spawn(&f[0], work, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_join(f[0], NULL), 0);
    vms_stats_get(&before);
    ran = 0;
    for (long i = 0; i < n; i++)
        if (vms_fiber_spawn(&f[i], work, (void *)i, &(vms_fiber_opts){ .stack_size = 16 << 10 })) {
            fprintf(stderr, "spawn %ld: %s\n", i, vms_last_error());
            return 1;
        }
    vms_stats_get(&during);
    CHECK(during.live >= before.live + (size_t)n);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(ran, 2 * n);
    for (long i = 0; i < n; i++) {
        vms_fiber_status st;
        CHECK_EQ(vms_fiber_join(f[i], &st), 0);
        CHECK_EQ((intptr_t)st.result, i + 1);
    }
    for (long i = 0; i < n; i++)
        CHECK_EQ(vms_fiber_spawn(NULL, work, NULL, &(vms_fiber_opts){ .stack_size = 16 << 10, .detached = 1 }), 0);
    CHECK_EQ(vms_run(), 0);
    vms_stats_get(&after);
    CHECK_EQ(after.live, before.live);
    vms_sched_stats_get(&s);
    CHECK_EQ(s.peak_live, (size_t)n);
    CHECK_EQ(s.returned, 2 * (uint64_t)n + 1);
    printf("ok: %ld fibers alive at once, %llu switches\n", n, (unsigned long long)s.switches);
    free(f);
    return 0;
}
