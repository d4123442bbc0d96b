/* SPDX-License-Identifier: MIT */
/*
 * Idle fibers give memory back: fibers that went 32 KiB deep once and then
 * wait hold, after vms_fiber_trim, no more resident stack than fibers that
 * never went deeper than 4 KiB; a fiber that waited less than the
 * threshold keeps its pages; a trimmed fiber goes deep again and finds
 * zeros, and its frames above the stack pointer intact.
 */
#include "check.h"
#include "vmstack.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define FIBERS 64

static vms_fiber fibers[FIBERS];
static int go_on;

/* Touches `bytes` of stack below this frame. */
static __attribute__((noinline)) void go_deep(size_t bytes)
{
    volatile char *p = __builtin_alloca(bytes);

    for (size_t i = 0; i < bytes; i += 64)
        p[i] = 0x5a;
}

static void *conn(void *arg)
{
    size_t deep = (size_t)(uintptr_t)arg;
    volatile uint64_t mine = 0x1234567890abcdefull; /* a live local above the stack pointer */

    go_deep(deep);
    while (!go_on)
        CHECK_EQ(vms_fiber_park(), 0);
    CHECK_EQ(mine, 0x1234567890abcdefull);
    go_deep(deep); /* the released pages fault in again */
    return NULL;
}

/* Resident pages of the fibers' stacks. */
static size_t resident(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), total = 0;
    unsigned char vec[64];

    for (int i = 0; i < FIBERS; i++) {
        vms_stack st;

        CHECK_EQ(vms_fiber_stack(fibers[i], &st), 0);
        CHECK(st.size / page <= sizeof vec);
        CHECK_EQ(mincore(st.base, st.size, vec), 0);
        for (size_t j = 0; j < st.size / page; j++)
            total += vec[j] & 1;
    }
    return total;
}

struct measure {
    uint64_t idle_ns;
    long trimmed;
    size_t pages;
};

/* Runs after every connection fiber went deep and parked: trims, measures, lets them go on. */
static void *controller(void *arg)
{
    struct measure *m = arg;

    if (m->idle_ns)
        CHECK_EQ(vms_sleep_ns(1000000), 0); /* waits, but for less than the threshold */
    m->trimmed = vms_fiber_trim(m->idle_ns);
    m->pages = resident();
    go_on = 1;
    for (int i = 0; i < FIBERS; i++)
        CHECK_EQ(vms_fiber_wake(fibers[i]), 0);
    return NULL;
}

static size_t run(size_t deep, uint64_t idle_ns, long *trimmed)
{
    struct measure m = { .idle_ns = idle_ns };
    vms_fiber c;

    go_on = 0;
    for (int i = 0; i < FIBERS; i++)
        CHECK_EQ(vms_fiber_spawn(&fibers[i], conn, (void *)(uintptr_t)deep, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&c, controller, &m, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(c, NULL), 0);
    for (int i = 0; i < FIBERS; i++)
        CHECK_EQ(vms_fiber_join(fibers[i], NULL), 0);
    *trimmed = m.trimmed;
    return m.pages;
}

int main(void)
{
    long t_shallow, t_deep, t_fresh;
    size_t shallow = run(4096, 0, &t_shallow), deep = run(32768, 0, &t_deep), kept = run(32768, 60000000000ull, &t_fresh);

    printf("resident stack pages of %d fibers: 4 KiB deep %zu, 32 KiB deep and trimmed %zu, 32 KiB deep and not "
           "idle long enough %zu\n", FIBERS, shallow, deep, kept);
    CHECK_EQ(t_shallow, FIBERS);
    CHECK_EQ(t_deep, FIBERS);
    CHECK_EQ(t_fresh, 0);
    CHECK(deep <= shallow + shallow / 5);
    CHECK(kept >= (size_t)FIBERS * 8);
    return 0;
}
