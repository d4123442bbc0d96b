/* SPDX-License-Identifier: MIT */
/*
 * fd numbers closed and reused under load, while fibers wait on them.
 * Registrations stay in epoll between waits, so a number closed with
 * plain close() and reused for another socket looks registered: the wait
 * on the new socket must still end, and no event of the old socket (or of
 * another fiber's) may wake it.  Two threads run the same load, so each
 * one's numbers are reused by the other's sockets too.
 *
 * Each worker fiber, many times over: makes a socket pair, spawns a peer
 * fiber that yields a random number of times and then writes a token
 * naming the worker and the round, waits for it (read first, wait on
 * EAGAIN), checks it, and closes both ends, by close() or by vms_fd_close
 * at random.  A wrong wake shows as a wrong token; a hang as a timeout.
 */
#include "check.h"
#include "vmstack.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define WORKERS 200
#define ROUNDS 40
#define THREADS 2
#define WAIT_NS (20 * 1000000000LL) /* far beyond the registration check (100 ms) */

struct token {
    uint32_t thread, worker, round;
};

struct peer {
    int fd;
    unsigned yields;
    struct token t;
};

static atomic_long waits, spurious, closes_plain;

static void *peer(void *arg)
{
    struct peer p = *(struct peer *)arg;

    free(arg);
    for (unsigned i = 0; i < p.yields; i++)
        CHECK_EQ(vms_yield(), 0);
    CHECK_EQ(send(p.fd, &p.t, sizeof p.t, MSG_NOSIGNAL), (ssize_t)sizeof p.t);
    return NULL;
}

static void *worker(void *arg)
{
    uint32_t th = (uint32_t)((uintptr_t)arg >> 16), id = (uint32_t)((uintptr_t)arg & 0xffff);
    unsigned seed = th * 7919u + id;

    for (uint32_t r = 0; r < ROUNDS; r++) {
        int sv[2];
        struct peer *p = malloc(sizeof *p);
        struct token want = { th, id, r }, got;
        ssize_t n;

        CHECK(p != NULL);
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
        *p = (struct peer){ .fd = sv[1], .yields = (unsigned)rand_r(&seed) % 8, .t = want };
        CHECK_EQ(vms_fiber_spawn(NULL, peer, p, &(vms_fiber_opts){ .name = "peer", .detached = 1 }), 0);
        while ((n = recv(sv[0], &got, sizeof got, 0)) < 0 && errno == EAGAIN) {
            int ev = vms_wait_fd(sv[0], EPOLLIN, WAIT_NS);

            if (ev <= 0) {
                fprintf(stderr, "thread %u worker %u round %u: wait on fd %d returned %d\n", th, id, r, sv[0], ev);
                exit(1);
            }
            CHECK(ev & EPOLLIN);
            atomic_fetch_add(&waits, 1);
            /* Readiness may be stale (an edge the last read took already): then the read says EAGAIN again. */
            if ((n = recv(sv[0], &got, sizeof got, 0)) >= 0)
                break;
            CHECK_EQ(errno, EAGAIN);
            atomic_fetch_add(&spurious, 1);
        }
        CHECK_EQ(n, (ssize_t)sizeof got);
        if (memcmp(&got, &want, sizeof got)) {
            fprintf(stderr, "thread %u worker %u round %u: woke for thread %u worker %u round %u's token\n", th, id,
                    r, got.thread, got.worker, got.round);
            exit(1);
        }
        if (rand_r(&seed) & 1) {
            CHECK_EQ(close(sv[0]), 0);
            CHECK_EQ(close(sv[1]), 0);
            atomic_fetch_add(&closes_plain, 1);
        } else {
            CHECK_EQ(vms_fd_close(sv[0]), 0);
            CHECK_EQ(vms_fd_close(sv[1]), 0);
        }
    }
    return NULL;
}

static void *thread_main(void *arg)
{
    uintptr_t th = (uintptr_t)arg;
    vms_fiber f[WORKERS];
    vms_fiber_status st;

    for (uintptr_t i = 0; i < WORKERS; i++)
        CHECK_EQ(vms_fiber_spawn(&f[i], worker, (void *)(th << 16 | i), &(vms_fiber_opts){ .name = "worker" }), 0);
    CHECK_EQ(vms_run(), 0);
    for (int i = 0; i < WORKERS; i++) {
        CHECK_EQ(vms_fiber_join(f[i], &st), 0);
        CHECK_EQ(st.end, VMS_FIBER_RETURNED);
    }
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];

    for (uintptr_t i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, thread_main, (void *)i), 0);
    for (int i = 0; i < THREADS; i++)
        CHECK_EQ(pthread_join(t[i], NULL), 0);
    printf("%d waits, %ld stale readiness, %ld pairs closed with close()\n", (int)atomic_load(&waits),
           atomic_load(&spurious), atomic_load(&closes_plain));
    CHECK(atomic_load(&closes_plain) > 0);
    return 0;
}
