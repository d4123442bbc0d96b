/* SPDX-License-Identifier: MIT */
/*
 * Fibers that wait: park and wake (also across threads, and a wake that
 * comes first), sleep and timeouts, fd readiness, an fd closed while
 * waited on, a fiber killed in the middle of a wait, and the errors.
 * Labelled "threads": the ping-pong between two threads' fibers is the
 * ThreadSanitizer's case.
 */
#include "check.h"
#include "room.h"
#include "core/sanitizer.h"
#include "vmstack.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000LL

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int64_t cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void nonblocking_pipe(int p[2])
{
    CHECK_EQ(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
}

/* ---- errors outside a fiber, and bad arguments ---- */

static void *bad_args(void *arg)
{
    int *p = arg, file = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

    CHECK(file >= 0);
    CHECK_EQ(vms_wait_fd(-1, EPOLLIN, -1), -EBADF);
    CHECK_EQ(vms_wait_fd(p[0], 0, -1), -EINVAL);
    CHECK_EQ(vms_wait_fd(p[0], EPOLLET | EPOLLIN, -1), -EINVAL);
    CHECK(strstr(vms_last_error(), "EPOLLIN, EPOLLPRI, EPOLLRDHUP and/or EPOLLOUT"));
    CHECK_EQ(vms_wait_fd(file, EPOLLIN, -1), -EPERM);
    CHECK(strstr(vms_last_error(), "cannot be waited on"));
    close(file);
    CHECK_EQ(vms_wait_fd(1000000, EPOLLIN, -1), -EBADF);
    CHECK(strstr(vms_last_error(), "is not open"));
    /* A timeout of 0 only looks. */
    CHECK_EQ(vms_wait_fd(p[0], EPOLLIN, 0), 0);
    CHECK_EQ(vms_wait_fd(p[1], EPOLLOUT, 0), EPOLLOUT);
    return NULL;
}

static void test_errors(void)
{
    int p[2];

    CHECK_EQ(vms_fiber_park(), -EPERM);
    CHECK(strstr(vms_last_error(), "vms_fiber_park outside a fiber"));
    CHECK_EQ(vms_sleep_ns(1000), -EPERM);
    CHECK(strstr(vms_last_error(), "vms_sleep_ns outside a fiber"));
    CHECK_EQ(vms_wait_fd(0, EPOLLIN, 0), -EPERM);
    CHECK(strstr(vms_last_error(), "vms_wait_fd outside a fiber"));
    CHECK_EQ(vms_fiber_wake((vms_fiber){ 0, 0 }), -EINVAL);
    nonblocking_pipe(p);
    CHECK_EQ(vms_fiber_spawn(NULL, bad_args, p, &(vms_fiber_opts){ .detached = 1 }), 0);
    CHECK_EQ(vms_run(), 0);
    close(p[0]);
    close(p[1]);
}

/* ---- park and wake on one thread; a wake before the park ---- */

static int order[8], norder;

static void *parker(void *arg)
{
    order[norder++] = (int)(intptr_t)arg;
    CHECK_EQ(vms_fiber_park(), 0);
    order[norder++] = 10 + (int)(intptr_t)arg;
    return NULL;
}

static void *early_parker(void *arg)
{
    (void)arg;
    /* Woken twice before it ran: one saved wake, so the second park sleeps. */
    CHECK_EQ(vms_fiber_park(), 0);
    order[norder++] = 20;
    CHECK_EQ(vms_fiber_park(), 0);
    order[norder++] = 21;
    return NULL;
}

static void *waker(void *arg)
{
    vms_fiber *f = arg;

    CHECK_EQ(vms_fiber_wake(f[0]), 0);
    CHECK_EQ(vms_yield(), 0);
    order[norder++] = 30;
    CHECK_EQ(vms_fiber_wake(f[1]), 0);
    return NULL;
}

static void test_park_local(void)
{
    vms_fiber f[3];
    vms_fiber_status st;

    CHECK_EQ(vms_fiber_spawn(&f[0], parker, (void *)1, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&f[1], early_parker, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_wake(f[1]), 0);
    CHECK_EQ(vms_fiber_wake(f[1]), 0);
    CHECK_EQ(vms_fiber_spawn(&f[2], waker, f, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    /* parker parks; early_parker takes its saved wake and parks again; waker wakes parker, which runs in turn. */
    CHECK_EQ(norder, 5);
    CHECK_EQ(order[0], 1);
    CHECK_EQ(order[1], 20);
    CHECK_EQ(order[2], 11);
    CHECK_EQ(order[3], 30);
    CHECK_EQ(order[4], 21);
    for (int i = 0; i < 3; i++)
        CHECK_EQ(vms_fiber_join(f[i], &st), 0);
    /* Stale handle. */
    CHECK_EQ(vms_fiber_wake(f[0]), -EALREADY);
    CHECK(strstr(vms_last_error(), "has ended"));
}

/* ---- a wake from another thread wakes the sleeping scheduler ---- */

static _Atomic int parked_flag;

static void *remote_parker(void *arg)
{
    (void)arg;
    atomic_store(&parked_flag, 1);
    CHECK_EQ(vms_fiber_park(), 0);
    return (void *)42;
}

static void *remote_waker(void *arg)
{
    vms_fiber f = *(vms_fiber *)arg;
    struct timespec d = { 0, 200 * MS };

    while (!atomic_load(&parked_flag))
        nanosleep(&(struct timespec){ 0, MS }, NULL);
    nanosleep(&d, NULL);
    CHECK_EQ(vms_fiber_wake(f), 0);
    return NULL;
}

static void test_wake_remote(void)
{
    vms_fiber f;
    vms_fiber_status st;
    pthread_t t;
    int64_t t0, c0;

    CHECK_EQ(vms_fiber_spawn(&f, remote_parker, NULL, NULL), 0);
    CHECK_EQ(pthread_create(&t, NULL, remote_waker, &f), 0);
    t0 = now_ns();
    c0 = cpu_ns();
    CHECK_EQ(vms_fiber_join(f, &st), 0);
    CHECK(st.end == VMS_FIBER_RETURNED && st.result == (void *)42);
    /* Woken by the other thread after 200 ms, having slept (not spun) meanwhile. */
    CHECK(now_ns() - t0 >= 200 * MS);
    CHECK(cpu_ns() - c0 < 100 * MS);
    pthread_join(t, NULL);
}

/* Two threads' fibers hand a token back and forth: a lost wake hangs the test. */
#define ROUNDS 20000
static vms_fiber ping_f[2];
static pthread_barrier_t ping_bar;
static long ping_count[2];

static void *ping_fiber(void *arg)
{
    int me = (int)(intptr_t)arg;

    for (int i = 0; i < ROUNDS; i++) {
        if (me == 0 || i > 0)
            CHECK_EQ(vms_fiber_park(), 0);
        ping_count[me]++;
        /* Fiber 1 has ended after its last wake. */
        if (me == 1 || i < ROUNDS - 1)
            CHECK_EQ(vms_fiber_wake(ping_f[!me]), 0);
    }
    return NULL;
}

static void *ping_thread(void *arg)
{
    int me = (int)(intptr_t)arg;

    CHECK_EQ(vms_fiber_spawn(&ping_f[me], ping_fiber, arg, NULL), 0);
    pthread_barrier_wait(&ping_bar);
    CHECK_EQ(vms_fiber_join(ping_f[me], NULL), 0);
    return NULL;
}

static void test_pingpong(void)
{
    pthread_t t[2];

    pthread_barrier_init(&ping_bar, NULL, 2);
    for (int i = 0; i < 2; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, ping_thread, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(ping_count[0], ROUNDS);
    CHECK_EQ(ping_count[1], ROUNDS);
}

/* ---- timers ---- */

static int woke[4], nwoke;

static void *sleeper(void *arg)
{
    int64_t ms = (intptr_t)arg, t0 = now_ns();

    CHECK_EQ(vms_sleep_ns((uint64_t)(ms * MS)), 0);
    CHECK(now_ns() - t0 >= ms * MS);
    woke[nwoke++] = (int)ms;
    return NULL;
}

static void *fd_timeout(void *arg)
{
    int *p = arg;
    int64_t t0 = now_ns();

    CHECK_EQ(vms_wait_fd(p[0], EPOLLIN, 50 * MS), 0);
    CHECK(now_ns() - t0 >= 50 * MS);
    return NULL;
}

static void test_timers(void)
{
    static const int ms[4] = { 80, 20, 60, 40 };
    int p[2];

    for (int i = 0; i < 4; i++)
        CHECK_EQ(vms_fiber_spawn(NULL, sleeper, (void *)(intptr_t)ms[i], &(vms_fiber_opts){ .detached = 1 }), 0);
    nonblocking_pipe(p);
    CHECK_EQ(vms_fiber_spawn(NULL, fd_timeout, p, &(vms_fiber_opts){ .detached = 1 }), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(nwoke, 4);
    for (int i = 0; i < 4; i++)
        CHECK_EQ(woke[i], 20 * (i + 1));
    close(p[0]);
    close(p[1]);
}

/* ---- readiness ---- */

static void *reader(void *arg)
{
    int *p = arg;
    char c;

    CHECK_EQ(vms_wait_fd(p[0], EPOLLIN, 5000 * MS), EPOLLIN);
    CHECK_EQ(read(p[0], &c, 1), 1);
    return (void *)(intptr_t)c;
}

static void *second_reader(void *arg)
{
    int *p = arg;

    CHECK_EQ(vms_wait_fd(p[0], EPOLLIN | EPOLLRDHUP, -1), -EBUSY);
    CHECK(strstr(vms_last_error(), "already waits on fd"));
    CHECK(strstr(vms_last_error(), "'reader'"));
    return NULL;
}

static void *writer(void *arg)
{
    int *p = arg;

    CHECK_EQ(vms_sleep_ns(10 * MS), 0);
    CHECK_EQ(write(p[1], "x", 1), 1);
    return NULL;
}

/* A socket pair: one fiber waits to read and another to write on the same fd. */
static void *sock_reader(void *arg)
{
    int s = *(int *)arg;

    CHECK_EQ(vms_wait_fd(s, EPOLLIN, -1), EPOLLIN);
    return NULL;
}

static void *sock_writer(void *arg)
{
    int s = *(int *)arg;

    CHECK_EQ(vms_wait_fd(s, EPOLLOUT, -1), EPOLLOUT);
    return NULL;
}

static void test_fds(void)
{
    int p[2], sp[2];
    vms_fiber r, r2, w, sr, sw;
    vms_fiber_status st;

    nonblocking_pipe(p);
    CHECK_EQ(vms_fiber_spawn(&r, reader, p, &(vms_fiber_opts){ .name = "reader" }), 0);
    CHECK_EQ(vms_fiber_spawn(&r2, second_reader, p, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&w, writer, p, NULL), 0);
    CHECK_EQ(vms_fiber_join(r, &st), 0);
    CHECK(st.result == (void *)'x');
    CHECK_EQ(vms_fiber_join(r2, NULL), 0);
    CHECK_EQ(vms_fiber_join(w, NULL), 0);
    close(p[0]);
    close(p[1]);

    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sp), 0);
    CHECK_EQ(vms_fiber_spawn(&sr, sock_reader, &sp[0], NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&sw, sock_writer, &sp[0], NULL), 0);
    CHECK_EQ(vms_fiber_join(sw, NULL), 0);
    CHECK_EQ(write(sp[1], "y", 1), 1);
    CHECK_EQ(vms_fiber_join(sr, NULL), 0);
    close(sp[0]);
    close(sp[1]);
}

/* ---- an fd closed while waited on ---- */

static void *closed_waiter(void *arg)
{
    int fd = *(int *)arg;

    return (void *)(intptr_t)vms_wait_fd(fd, EPOLLIN, 2000 * MS);
}

static void *closer(void *arg)
{
    CHECK_EQ(vms_fd_close(*(int *)arg), 0);
    return NULL;
}

static void *plain_closer(void *arg)
{
    int *p = arg, q[2];

    close(p[0]);
    /* The number comes back for a new pipe, with data in it. */
    nonblocking_pipe(q);
    CHECK_EQ(q[0], p[0]);
    CHECK_EQ(write(q[1], "z", 1), 1);
    close(p[1]);
    p[1] = q[1];
    return NULL;
}

static void test_closed(void)
{
    int p[2];
    vms_fiber w, c;
    vms_fiber_status st;
    int64_t t0 = now_ns();

    /* vms_fd_close wakes the waiter with -EBADF at once. */
    nonblocking_pipe(p);
    CHECK_EQ(vms_fiber_spawn(&w, closed_waiter, &p[0], NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&c, closer, &p[0], NULL), 0);
    CHECK_EQ(vms_fiber_join(w, &st), 0);
    CHECK_EQ((intptr_t)st.result, -EBADF);
    CHECK_EQ(vms_fiber_join(c, NULL), 0);
    CHECK(now_ns() - t0 < 1000 * MS);
    close(p[1]);

    /*
     * Plain close(): the kernel drops the fd from epoll without an event, so
     * the waiter sleeps until its timeout; the number's next file is not
     * mistaken for the old one.
     */
    nonblocking_pipe(p);
    t0 = now_ns();
    CHECK_EQ(vms_fiber_spawn(&w, closed_waiter, &p[0], NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&c, plain_closer, p, NULL), 0);
    CHECK_EQ(vms_fiber_join(w, &st), 0);
    CHECK_EQ((intptr_t)st.result, 0);
    CHECK(now_ns() - t0 >= 2000 * MS);
    CHECK_EQ(vms_fiber_join(c, NULL), 0);
    /* After the timeout, the new pipe's data is seen by a new waiter. */
    CHECK_EQ(vms_fiber_spawn(&w, closed_waiter, &p[0], NULL), 0);
    CHECK_EQ(vms_fiber_join(w, &st), 0);
    CHECK_EQ((intptr_t)st.result, EPOLLIN);
    close(p[0]);
    close(p[1]);
}

/* ---- a fiber killed in the middle of a wait ---- */

#define SWEEP 256
/*
 * The sanitizers' interceptors (epoll_ctl's among them) and their larger
 * frames run on the fiber's stack before the scheduler's probe: an
 * overflow there is in a runtime that may hold a lock, or in vmstack's
 * wait bookkeeping, and is rightly aborted, not killed.  There the sweep
 * leaves them room, so that its overflows come at the probe.
 */
#if defined(VMS_SAN_THREAD) || defined(VMS_SAN_ADDRESS)
#define ROOM0 4096
#else
#define ROOM0 0
#endif
static int kill_pipe[SWEEP][2];
static int returned_n;

/* Leaves about room bytes of stack below this frame, then waits: the switch away may overflow. */
static __attribute__((noinline)) int wait_low(int fd, size_t room)
{
    LEAVE_ROOM(room);
    return vms_wait_fd(fd, EPOLLIN, 200 * MS);
}

static void *low_waiter(void *arg)
{
    int i = (int)(intptr_t)arg;
    int rc = wait_low(kill_pipe[i][0], ROOM0 + (size_t)i * 64);

    CHECK_EQ(rc, 0);
    returned_n++;
    return NULL;
}

static void *keeper(void *arg)
{
    (void)arg;
    /* Outlives the killed fibers' timeouts: a timer left behind would fire into a dead fiber. */
    CHECK_EQ(vms_sleep_ns(500 * MS), 0);
    return NULL;
}

static void *late_reader(void *arg)
{
    return (void *)(intptr_t)vms_wait_fd(*(int *)arg, EPOLLIN, 1000 * MS);
}

/* The fds registered in this process's epoll sets, armed for reading (from /proc/self/fdinfo). */
static void armed_fds(char *armed, int n)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *de;

    memset(armed, 0, (size_t)n);
    CHECK(d);
    while ((de = readdir(d))) {
        char path[300], link[64], line[256];
        ssize_t len;
        FILE *f;

        snprintf(path, sizeof path, "/proc/self/fd/%s", de->d_name);
        len = readlink(path, link, sizeof link - 1);
        if (len <= 0)
            continue;
        link[len] = 0;
        if (strcmp(link, "anon_inode:[eventpoll]"))
            continue;
        snprintf(path, sizeof path, "/proc/self/fdinfo/%s", de->d_name);
        if (!(f = fopen(path, "r")))
            continue;
        while (fgets(line, sizeof line, f)) {
            int tfd;
            unsigned ev;

            if (sscanf(line, "tfd: %d events: %x", &tfd, &ev) == 2 && tfd >= 0 && tfd < n && (ev & EPOLLIN))
                armed[tfd] = 1;
        }
        fclose(f);
    }
    closedir(d);
}

static void test_killed_while_waiting(void)
{
    vms_fiber f[SWEEP];
    vms_fiber_status st;
    char armed[4096];
    int killed = 0, killed_armed = 0, reports;
    char tmpl[] = "/tmp/vms-wait-report-XXXXXX";
    vms_sched_stats s0, s1;
    static char buf[1 << 20];
    ssize_t len;

    reports = mkstemp(tmpl);
    CHECK(reports >= 0);
    unlink(tmpl);
    CHECK_EQ(vms_set_report_fd(reports), 0);
    vms_sched_stats_get(&s0);
    for (int i = 0; i < SWEEP; i++) {
        nonblocking_pipe(kill_pipe[i]);
        CHECK(kill_pipe[i][0] < (int)sizeof armed);
        CHECK_EQ(vms_fiber_spawn(&f[i], low_waiter, (void *)(intptr_t)i, &(vms_fiber_opts){ .name = "low" }), 0);
    }
    CHECK_EQ(vms_fiber_spawn(NULL, keeper, NULL, &(vms_fiber_opts){ .detached = 1 }), 0);
    CHECK_EQ(vms_run(), 0);
    armed_fds(armed, sizeof armed);
    for (int i = 0; i < SWEEP; i++) {
        CHECK_EQ(vms_fiber_join(f[i], &st), 0);
        if (st.end == VMS_FIBER_KILLED_OVERFLOW) {
            killed++;
            killed_armed += armed[kill_pipe[i][0]];
        } else {
            CHECK_EQ(st.end, VMS_FIBER_RETURNED);
        }
    }
    vms_sched_stats_get(&s1);
    CHECK_EQ(s1.killed - s0.killed, killed);
    CHECK_EQ(returned_n + killed, SWEEP);
    /* The sweep reaches from plenty of room down to none, and some kills came with the fd armed. */
    CHECK(killed > 0 && returned_n > 0);
    CHECK(killed_armed > 0);
    len = pread(reports, buf, sizeof buf - 1, 0);
    CHECK(len > 0);
    buf[len] = 0;
    CHECK(strstr(buf, "vmstack: BUG: stack guard page was hit at"));
    CHECK(strstr(buf, "vmstack: killed fiber 'low'"));
    CHECK_EQ(vms_set_report_fd(2), 0);
    close(reports);
    /* Every pipe, killed fiber's or not, can be waited on again, and its armed registration is harmless. */
    for (int i = 0; i < SWEEP; i++) {
        CHECK_EQ(write(kill_pipe[i][1], "k", 1), 1);
        CHECK_EQ(vms_fiber_spawn(&f[i], late_reader, &kill_pipe[i][0], NULL), 0);
    }
    for (int i = 0; i < SWEEP; i++) {
        CHECK_EQ(vms_fiber_join(f[i], &st), 0);
        CHECK_EQ((intptr_t)st.result, EPOLLIN);
        close(kill_pipe[i][0]);
        close(kill_pipe[i][1]);
    }
    fprintf(stderr, "killed while waiting: %d of %d fibers (%d with the fd armed)\n", killed, SWEEP, killed_armed);
}

int main(void)
{
    test_errors();
    test_park_local();
    test_wake_remote();
    test_pingpong();
    test_timers();
    test_fds();
    test_closed();
    test_killed_while_waiting();
    return 0;
}
