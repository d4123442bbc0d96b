/* SPDX-License-Identifier: MIT */
/*
 * Fibers on several threads at once: each thread's scheduler runs only its
 * own fibers, handles do not cross threads (-EPERM), and the stacks move
 * between threads through the shared caches.  Labelled "threads" for the
 * ThreadSanitizer build, which checks the fiber annotations too.
 */
#include "check.h"
#include "vmstack.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#define THREADS 4
#define FIBERS 64
#define YIELDS 200

static pthread_barrier_t bar;
static vms_fiber first[THREADS];       /* one fiber of each thread, for the others to try */
static _Atomic long total;

static void *pingpong(void *arg)
{
    long *mine = arg;                   /* this thread's counter: shared by its fibers only */

    for (int i = 0; i < YIELDS; i++) {
        (*mine)++;
        CHECK_EQ(vms_yield(), 0);
    }
    atomic_fetch_add(&total, YIELDS);
    return mine;
}

static void *thread(void *arg)
{
    int me = (int)(intptr_t)arg;
    vms_fiber f[FIBERS];
    long count = 0;
    vms_sched_stats s;

    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < FIBERS; i++)
            CHECK_EQ(vms_fiber_spawn(&f[i], pingpong, &count, NULL), 0);
        for (int i = 0; i < 8; i++)
            CHECK_EQ(vms_fiber_spawn(NULL, pingpong, &count, &(vms_fiber_opts){ .detached = 1 }), 0);
        if (round == 0) {
            first[me] = f[0];
            pthread_barrier_wait(&bar);
            /* Another thread's fiber: not ours to join, name or yield in. */
            vms_fiber other = first[(me + 1) % THREADS];
            CHECK_EQ(vms_fiber_join(other, NULL), -EPERM);
            CHECK(strstr(vms_last_error(), "belongs to another thread"));
            CHECK(vms_fiber_name(other) == NULL && errno == EPERM);
            CHECK_EQ(vms_yield(), -EPERM);
            pthread_barrier_wait(&bar);
        }
        CHECK_EQ(vms_run(), 0);
        for (int i = 0; i < FIBERS; i++) {
            vms_fiber_status st;
            CHECK_EQ(vms_fiber_join(f[i], &st), 0);
            CHECK(st.result == &count);
        }
    }
    CHECK_EQ(count, 5L * (FIBERS + 8) * YIELDS);
    vms_sched_stats_get(&s);
    CHECK_EQ(s.spawned, 5 * (FIBERS + 8));
    CHECK_EQ(s.live, 0);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];
    vms_stats before, after;

    vms_stats_get(&before);
    pthread_barrier_init(&bar, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, thread, (void *)(intptr_t)i), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(atomic_load(&total), (long)THREADS * 5 * (FIBERS + 8) * YIELDS);
    vms_stats_get(&after);
    CHECK_EQ(after.live, before.live);
    printf("ok\n");
    return 0;
}
