/* SPDX-License-Identifier: MIT */
/*
 * Eight threads allocate and free stacks of two sizes for a few seconds.
 * Every stack is marked with its owner, in a shared table and in the stack
 * itself: a stack handed out twice at once is caught.  Run under
 * ThreadSanitizer as well.
 */
#include "check.h"
#include "core/internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#define THREADS 8
#define HELD 64
#define SECONDS 3
#define TABLE (1u << 22)

static _Atomic uint64_t owner[TABLE];      /* by id hash: thread + 1, or 0 */
static _Atomic long rounds;
static time_t deadline;

/* A part of the table per region, an entry per slot (stack ids are region << VMS_SLOT_BITS | slot). */
static uint32_t key(const vms_stack *st)
{
    uint32_t part = TABLE / VMS_MAX_REGIONS, slot = st->id & ((1u << VMS_SLOT_BITS) - 1);

    CHECK(slot < part);
    return (st->id >> VMS_SLOT_BITS) * part + slot;
}

static void claim(const vms_stack *st, uint64_t me)
{
    uint64_t none = 0;

    if (!atomic_compare_exchange_strong(&owner[key(st)], &none, me)) {
        fprintf(stderr, "stack id %u handed out to thread %lu while thread %lu holds it\n", st->id,
                (unsigned long)me, (unsigned long)none);
        exit(1);
    }
    *(volatile uint64_t *)((char *)vms_stack_top(st) - 8) = me;
}

static void release(vms_stack *st, uint64_t me)
{
    CHECK_EQ(*(volatile uint64_t *)((char *)vms_stack_top(st) - 8), me);
    atomic_store(&owner[key(st)], 0);
    CHECK_EQ(vms_stack_free(st), 0);
}

static void *worker(void *arg)
{
    uint64_t me = (uint64_t)(uintptr_t)arg + 1, seed = me;
    vms_stack held[HELD] = { 0 };
    int n = 0;

    while (time(NULL) < deadline) {
        for (int k = 0; k < 1000; k++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            if (n < HELD && (n == 0 || (seed >> 33) % 3)) {
                CHECK_EQ(vms_stack_alloc(&held[n], (seed >> 40) & 1 ? 64 << 10 : 128 << 10), 0);
                claim(&held[n++], me);
            } else {
                int i = (int)((seed >> 20) % (uint64_t)n);
                release(&held[i], me);
                held[i] = held[--n];
            }
        }
        atomic_fetch_add(&rounds, 1000);
    }
    while (n)
        release(&held[--n], me);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    vms_stats s;

    deadline = time(NULL) + SECONDS;
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)i), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    vms_stats_get(&s);
    printf("%ld allocs and frees from %d threads; live at the end: %zu\n", atomic_load(&rounds), THREADS, s.live);
    CHECK_EQ(s.live, 0);
    CHECK(atomic_load(&rounds) >= THREADS * 1000);
    return 0;
}
