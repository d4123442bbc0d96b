/* SPDX-License-Identifier: MIT */
/*
 * Fiber synchronisation: vms_mutex, vms_cond, vms_chan, vms_waitgroup and
 * fiber-local storage, between fibers of one thread and of two threads; a
 * fiber killed by an overflow while it holds a mutex (the next lock says
 * -EOWNERDEAD, a waiter is handed the mutex, the report names the mutex)
 * and fibers killed while they wait for one.  Labelled "threads": the
 * two-thread cases are the ThreadSanitizer's.
 */
#include "check.h"
#include "room.h"
#include "core/sanitizer.h"
#include "overflow.h"
#include "vmstack.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS 1000000LL
#define FIBERS 50
#define ITERS 200

/* ---- the mutex: exclusion across yields, on one thread and on two ---- */

static vms_mutex mu = VMS_MUTEX_INIT;
static long counter;
static int inside;

static void *incrementer(void *arg)
{
    (void)arg;
    for (int i = 0; i < ITERS; i++) {
        CHECK_EQ(vms_mutex_lock(&mu), 0);
        CHECK_EQ(inside++, 0);
        long c = counter;
        CHECK_EQ(vms_yield(), 0); /* others run, and queue */
        counter = c + 1;
        inside--;
        CHECK_EQ(vms_mutex_unlock(&mu), 0);
    }
    return NULL;
}

static void *run_incrementers(void *arg)
{
    vms_fiber f[FIBERS];

    (void)arg;
    for (int i = 0; i < FIBERS; i++)
        CHECK_EQ(vms_fiber_spawn(&f[i], incrementer, NULL, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    for (int i = 0; i < FIBERS; i++)
        CHECK_EQ(vms_fiber_join(f[i], NULL), 0);
    return NULL;
}

static void *mutex_errors(void *arg)
{
    vms_mutex m = VMS_MUTEX_INIT;

    (void)arg;
    CHECK_EQ(vms_mutex_unlock(&m), -EPERM);
    CHECK_EQ(vms_mutex_trylock(&m), 0);
    CHECK_EQ(vms_mutex_trylock(&m), -EDEADLK);
    CHECK_EQ(vms_mutex_lock(&m), -EDEADLK);
    CHECK(strstr(vms_last_error(), "holds the mutex"));
    CHECK_EQ(vms_mutex_unlock(&m), 0);
    return NULL;
}

static void *try_other(void *arg)
{
    CHECK_EQ(vms_mutex_trylock(arg), -EBUSY);
    CHECK_EQ(vms_mutex_unlock(arg), -EPERM);
    return NULL;
}

static void *takes_free(void *arg)
{
    CHECK_EQ(vms_mutex_trylock(arg), 0);
    CHECK_EQ(vms_mutex_unlock(arg), 0);
    return NULL;
}

/* Another fiber holds the mutex arg. */
static void *holds(void *arg)
{
    vms_fiber f;

    CHECK_EQ(vms_mutex_lock(arg), 0);
    CHECK_EQ(vms_fiber_spawn(&f, try_other, arg, NULL), 0);
    CHECK_EQ(vms_fiber_join(f, NULL), 0);
    CHECK_EQ(vms_mutex_unlock(arg), 0);
    return NULL;
}

static void test_mutex(void)
{
    pthread_t t[2];
    vms_fiber f;

    CHECK_EQ(vms_mutex_lock(&mu), -EPERM); /* the thread's own stack cannot wait */
    CHECK_EQ(vms_fiber_spawn(&f, mutex_errors, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_join(f, NULL), 0);
    run_incrementers(NULL);
    CHECK_EQ(counter, FIBERS * ITERS);
    counter = 0;
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, run_incrementers, NULL), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    CHECK_EQ(counter, 2 * FIBERS * ITERS);
    /* A held mutex, from another fiber. */
    CHECK_EQ(vms_fiber_spawn(&f, holds, &mu, NULL), 0);
    CHECK_EQ(vms_fiber_join(f, NULL), 0);
}

/* ---- the condition variable ---- */

static vms_cond cv = VMS_COND_INIT;
static int ready_flag;

static void *cond_waiter(void *arg)
{
    int rc = 0;

    (void)arg;
    CHECK_EQ(vms_mutex_lock(&mu), 0);
    while (!ready_flag && rc == 0)
        rc = vms_cond_wait(&cv, &mu, 5000 * MS);
    CHECK_EQ(rc, 0);
    CHECK_EQ(vms_mutex_unlock(&mu), 0);
    return NULL;
}

static void *cond_setter(void *arg)
{
    (void)arg;
    CHECK_EQ(vms_sleep_ns(10 * MS), 0);
    CHECK_EQ(vms_mutex_lock(&mu), 0);
    ready_flag = 1;
    CHECK_EQ(vms_cond_broadcast(&cv), 0);
    CHECK_EQ(vms_mutex_unlock(&mu), 0);
    return NULL;
}

static void *cond_timeout(void *arg)
{
    vms_cond c = VMS_COND_INIT;

    (void)arg;
    CHECK_EQ(vms_mutex_lock(&mu), 0);
    CHECK_EQ(vms_cond_wait(&c, &mu, 20 * MS), -ETIMEDOUT);
    CHECK_EQ(vms_mutex_unlock(&mu), 0); /* held again after the timeout */
    CHECK_EQ(vms_cond_wait(&c, &mu, 20 * MS), -EPERM);
    return NULL;
}

static void *cond_thread(void *arg)
{
    vms_fiber f[5];

    (void)arg;
    for (int i = 0; i < 4; i++)
        CHECK_EQ(vms_fiber_spawn(&f[i], cond_waiter, NULL, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(vms_fiber_join(f[i], NULL), 0);
    return NULL;
}

static void test_cond(void)
{
    pthread_t t;
    vms_fiber w, s, to;

    CHECK_EQ(pthread_create(&t, NULL, cond_thread, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&w, cond_waiter, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&s, cond_setter, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&to, cond_timeout, NULL, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(w, NULL), 0);
    CHECK_EQ(vms_fiber_join(s, NULL), 0);
    CHECK_EQ(vms_fiber_join(to, NULL), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
}

/* ---- channels and the wait group, across threads ---- */

#define ITEMS 5000

struct item {
    uint32_t seq, from;
    char pad[24];
};

static vms_chan ch;
static vms_waitgroup wg = VMS_WAITGROUP_INIT;
static atomic_long sum;

static void *producer(void *arg)
{
    uint32_t from = (uint32_t)(uintptr_t)arg;

    for (uint32_t i = 1; i <= ITEMS; i++)
        CHECK_EQ(vms_chan_send(&ch, &(struct item){ .seq = i, .from = from }, -1), 0);
    CHECK_EQ(vms_waitgroup_done(&wg), 0);
    return NULL;
}

static void *consumer(void *arg)
{
    struct item it;
    uint32_t last[4] = { 0 };
    int rc;

    (void)arg;
    while ((rc = vms_chan_recv(&ch, &it, -1)) == 0) {
        CHECK(it.from < 4);
        CHECK(it.seq > last[it.from]); /* in order per producer */
        last[it.from] = it.seq;
        atomic_fetch_add(&sum, it.seq);
    }
    CHECK_EQ(rc, -EPIPE);
    return NULL;
}

static void *chan_thread(void *arg)
{
    vms_fiber f[2];

    CHECK_EQ(vms_fiber_spawn(&f[0], producer, arg, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&f[1], consumer, NULL, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(f[0], NULL), 0);
    CHECK_EQ(vms_fiber_join(f[1], NULL), 0);
    return NULL;
}

static void *closer(void *arg)
{
    (void)arg;
    CHECK_EQ(vms_waitgroup_wait(&wg, -1), 0);
    CHECK_EQ(vms_chan_close(&ch), 0);
    CHECK_EQ(vms_chan_close(&ch), -EALREADY);
    return NULL;
}

static void *chan_edges(void *arg)
{
    vms_chan c;
    vms_waitgroup g = VMS_WAITGROUP_INIT;
    int v = 7, got = 0;

    (void)arg;
    CHECK_EQ(vms_chan_init(&c, sizeof v, 1), 0);
    CHECK_EQ(vms_chan_recv(&c, &got, 0), -EAGAIN);
    CHECK_EQ(vms_chan_recv(&c, &got, 10 * MS), -ETIMEDOUT);
    CHECK_EQ(vms_chan_send(&c, &v, 0), 0);
    CHECK_EQ(vms_chan_send(&c, &v, 0), -EAGAIN);
    CHECK_EQ(vms_chan_send(&c, &v, 10 * MS), -ETIMEDOUT);
    CHECK_EQ(vms_chan_close(&c), 0);
    CHECK_EQ(vms_chan_send(&c, &v, -1), -EPIPE);
    CHECK_EQ(vms_chan_recv(&c, &got, -1), 0); /* what was sent before the close still comes */
    CHECK_EQ(got, 7);
    CHECK_EQ(vms_chan_recv(&c, &got, -1), -EPIPE);
    CHECK_EQ(vms_chan_destroy(&c), 0);
    CHECK_EQ(vms_chan_send(&c, &v, 0), -EINVAL);
    CHECK_EQ(vms_chan_init(&c, 0, 1), -EINVAL);
    CHECK_EQ(vms_waitgroup_add(&g, -1), -EINVAL);
    CHECK_EQ(vms_waitgroup_wait(&g, 0), 0);
    CHECK_EQ(vms_waitgroup_add(&g, 1), 0);
    CHECK_EQ(vms_waitgroup_wait(&g, 0), -ETIMEDOUT);
    CHECK_EQ(vms_waitgroup_wait(&g, 10 * MS), -ETIMEDOUT);
    CHECK_EQ(vms_waitgroup_done(&g), 0);
    CHECK_EQ(vms_waitgroup_wait(&g, -1), 0);
    return NULL;
}

static void test_chan(size_t capacity)
{
    pthread_t t[2];
    vms_fiber c, e;
    long want = 0;

    sum = 0;
    CHECK_EQ(vms_chan_init(&ch, sizeof(struct item), capacity), 0);
    CHECK_EQ(vms_waitgroup_add(&wg, 4), 0);
    for (uintptr_t i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, chan_thread, (void *)i), 0);
    CHECK_EQ(vms_fiber_spawn(NULL, producer, (void *)2, &(vms_fiber_opts){ .detached = 1 }), 0);
    CHECK_EQ(vms_fiber_spawn(NULL, producer, (void *)3, &(vms_fiber_opts){ .detached = 1 }), 0);
    CHECK_EQ(vms_fiber_spawn(NULL, consumer, NULL, &(vms_fiber_opts){ .detached = 1 }), 0);
    CHECK_EQ(vms_fiber_spawn(&c, closer, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&e, chan_edges, NULL, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(c, NULL), 0);
    CHECK_EQ(vms_fiber_join(e, NULL), 0);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    for (long i = 1; i <= ITEMS; i++)
        want += 4 * i;
    CHECK_EQ(sum, want);
    CHECK_EQ(vms_chan_destroy(&ch), 0);
}

/* ---- fiber-local storage ---- */

static vms_fiber_key key;
static int destroyed;

static void dtor(void *v)
{
    destroyed += *(int *)v;
}

static void *fls_user(void *arg)
{
    CHECK(vms_fiber_key_get(key) == NULL);
    CHECK_EQ(vms_fiber_key_set(key, arg), 0);
    CHECK(vms_fiber_key_get(key) == arg);
    CHECK_EQ(vms_yield(), 0);
    CHECK(vms_fiber_key_get(key) == arg);
    if (*(int *)arg == 100)
        recurse(1L << 40); /* killed: the destructor runs all the same */
    return NULL;
}

static void test_fls(void)
{
    int a = 1, b = 10, c = 100;
    vms_fiber f[3];
    vms_fiber_status st;
    vms_fiber_key k2;

    CHECK_EQ(vms_fiber_key_create(&key, dtor), 0);
    CHECK_EQ(vms_fiber_key_set(key, &a), -EPERM);
    CHECK_EQ(vms_fiber_key_set(12345, &a), -EINVAL);
    CHECK_EQ(vms_fiber_spawn(&f[0], fls_user, &a, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&f[1], fls_user, &b, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&f[2], fls_user, &c, &(vms_fiber_opts){ .name = "fls-overflow" }), 0);
    CHECK_EQ(vms_run(), 0);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(vms_fiber_join(f[i], &st), 0);
    CHECK_EQ(st.end, VMS_FIBER_KILLED_OVERFLOW);
    CHECK_EQ(destroyed, 111);
    CHECK_EQ(vms_fiber_key_create(&k2, NULL), 0);
    CHECK(k2 != key);
    CHECK_EQ(vms_fiber_key_delete(k2), 0);
    CHECK_EQ(vms_fiber_key_delete(k2), -EINVAL);
}

/* ---- a fiber killed holding a mutex, and fibers killed waiting for one ---- */

static vms_mutex dm = VMS_MUTEX_INIT;

static void *dies_holding(void *arg)
{
    (void)arg;
    CHECK_EQ(vms_mutex_lock(&dm), 0);
    CHECK_EQ(vms_yield(), 0); /* the waiter queues */
    recurse(1L << 40);
    return NULL;
}

static void *waits_for_dead(void *arg)
{
    (void)arg;
    CHECK_EQ(vms_mutex_lock(&dm), -EOWNERDEAD);
    CHECK(strstr(vms_last_error(), "ended holding the mutex"));
    CHECK_EQ(vms_mutex_unlock(&dm), 0);
    CHECK_EQ(vms_mutex_lock(&dm), 0); /* an ordinary lock again */
    CHECK_EQ(vms_mutex_unlock(&dm), 0);
    return NULL;
}

static void *locks_dead(void *arg)
{
    (void)arg;
    CHECK_EQ(vms_mutex_lock(&dm), -EOWNERDEAD);
    CHECK_EQ(vms_mutex_unlock(&dm), 0);
    return NULL;
}

#define SWEEP 48
/*
 * Under the sanitizers the scheduler's probe reaches 8 KiB down, and the
 * lock's own instrumented frames are larger: an overflow in them (vmstack
 * code that may hold the mutex's spinlock) is rightly aborted, not killed,
 * so there the sweep starts nearer the probe.
 */
#if defined(VMS_SAN_THREAD) || defined(VMS_SAN_ADDRESS)
#define ROOM0 7168
#else
#define ROOM0 0
#endif
static vms_mutex sm = VMS_MUTEX_INIT;
static int sweep_returned;

/* Leaves about room bytes of stack below this frame, then waits for sm: the switch away may overflow. */
static __attribute__((noinline)) int lock_low(size_t room)
{
    LEAVE_ROOM(room);
    return vms_mutex_lock(&sm);
}

static void *low_locker(void *arg)
{
    vms_mutex own = VMS_MUTEX_INIT;

    /* The fiber's lock state is made here, not deep down, where malloc could overflow. */
    CHECK_EQ(vms_mutex_trylock(&own), 0);
    CHECK_EQ(vms_mutex_unlock(&own), 0);
    CHECK_EQ(lock_low(ROOM0 + (size_t)(intptr_t)arg * 64), 0);
    sweep_returned++;
    CHECK_EQ(vms_mutex_unlock(&sm), 0);
    return NULL;
}

static void *sweep_holder(void *arg)
{
    (void)arg;
    CHECK_EQ(vms_mutex_lock(&sm), 0);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(vms_yield(), 0); /* every locker queues (or dies trying) */
    CHECK_EQ(vms_mutex_unlock(&sm), 0);
    return NULL;
}

static void test_dead(void)
{
    char tmpl[] = "/tmp/vms-sync-report-XXXXXX", want[128];
    static char buf[1 << 20];
    int out = mkstemp(tmpl), saved = dup(2), killed = 0;
    vms_fiber d, w, l, f[SWEEP], h;
    vms_fiber_status st;
    ssize_t len;

    CHECK(out >= 0 && saved >= 0);
    unlink(tmpl);
    CHECK_EQ(dup2(out, 2), 2);
    /* fd 2 is another file now: reports go there only when the program says so. */
    CHECK_EQ(vms_set_report_fd(2), 0);
    CHECK_EQ(vms_fiber_spawn(&d, dies_holding, NULL, &(vms_fiber_opts){ .name = "holder" }), 0);
    CHECK_EQ(vms_fiber_spawn(&w, waits_for_dead, NULL, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(d, &st), 0);
    CHECK_EQ(st.end, VMS_FIBER_KILLED_OVERFLOW);
    CHECK_EQ(vms_fiber_join(w, NULL), 0);
    /* Killed with nobody waiting: the next lock is told. */
    CHECK_EQ(vms_fiber_spawn(&d, dies_holding, NULL, &(vms_fiber_opts){ .name = "holder" }), 0);
    CHECK_EQ(vms_fiber_join(d, &st), 0);
    CHECK_EQ(st.end, VMS_FIBER_KILLED_OVERFLOW);
    CHECK_EQ(vms_fiber_spawn(&l, locks_dead, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_join(l, NULL), 0);
    /* Fibers killed while they queue for a mutex: the others get it in turn, and it ends free. */
    CHECK_EQ(vms_fiber_spawn(&h, sweep_holder, NULL, NULL), 0);
    for (int i = 0; i < SWEEP; i++)
        CHECK_EQ(vms_fiber_spawn(&f[i], low_locker, (void *)(intptr_t)i, &(vms_fiber_opts){ .name = "low" }), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(h, NULL), 0);
    for (int i = 0; i < SWEEP; i++) {
        CHECK_EQ(vms_fiber_join(f[i], &st), 0);
        killed += st.end == VMS_FIBER_KILLED_OVERFLOW;
    }
    CHECK_EQ(dup2(saved, 2), 2);
    CHECK_EQ(vms_set_report_fd(2), 0);
    close(saved);
    CHECK(killed > 0 && sweep_returned > 0);
    CHECK_EQ(killed + sweep_returned, SWEEP);
    CHECK_EQ(vms_fiber_spawn(&l, takes_free, &sm, NULL), 0);
    CHECK_EQ(vms_fiber_join(l, NULL), 0);
    len = pread(out, buf, sizeof buf - 1, 0);
    CHECK(len > 0);
    buf[len] = 0;
    close(out);
    CHECK(strstr(buf, "vmstack: killed fiber 'holder'"));
    snprintf(want, sizeof want, "vmstack: fiber 'holder' (id %llu) was killed holding vms_mutex %p: its next lock "
             "returns EOWNERDEAD\n", (unsigned long long)d.id, (void *)&dm);
    CHECK(strstr(buf, want));
    fprintf(stderr, "killed while queued for a mutex: %d of %d fibers\n", killed, SWEEP);
}

int main(void)
{
    test_mutex();
    test_cond();
    test_chan(4);
    test_chan(0);
    test_fls();
    test_dead();
    return 0;
}
