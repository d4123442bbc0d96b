/* SPDX-License-Identifier: MIT */
/*
 * echo-server: a TCP echo server on vmstack fibers, one fiber per
 * connection and one scheduler per thread.
 *
 *     echo-server [-a ADDR] [-p PORT] [-t THREADS]
 *
 * Every thread listens on the same port (SO_REUSEPORT: the kernel spreads
 * the connections over the threads) and runs its own fibers: an acceptor,
 * and a fiber per connection that reads and writes as if blocking.  When a
 * socket is not ready, vms_wait_fd lets the thread's other fibers run, and
 * the thread sleeps in epoll_wait when none can.
 *
 * Each connection's fiber has a guarded 64 KiB stack.  A connection whose
 * data starts with "overflow\n" makes its handler recurse without end, to
 * show what happens then: vmstack reports the overflow on stderr and kills
 * that fiber only, its kill hook closes its connection, and every other
 * connection goes on.
 *
 * Prints "listening on ADDR:PORT" when it is ready (-p 0: a free port).
 */
#include <vmstack.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAGIC "overflow\n"

/* Reads what is there, waiting for the socket if nothing is. */
static ssize_t read_some(int fd, char *buf, size_t len)
{
    for (;;) {
        ssize_t n = recv(fd, buf, len, 0);

        if (n >= 0 || errno != EAGAIN)
            return n;
        if (vms_wait_fd(fd, EPOLLIN, -1) < 0)
            return -1;
    }
}

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

        if (n < 0 && errno != EAGAIN)
            return -1;
        if (n < 0 && vms_wait_fd(fd, EPOLLOUT, -1) < 0)
            return -1;
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
        }
    }
    return 0;
}

/* The bug on purpose: every "overflow\n" leads one frame deeper, and the copy never ends. */
static size_t parse(const char *msg, size_t depth)
{
    char copy[256];
    size_t d;

    memcpy(copy, msg, sizeof MAGIC - 1);
    if (memcmp(copy, MAGIC, sizeof MAGIC - 1) != 0)
        return depth;
    d = parse(copy, depth + 1);
    return d + (unsigned char)copy[d % 8];
}

static void close_on_kill(void *arg)
{
    close((int)(intptr_t)arg);
}

static void *connection(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[4096];
    ssize_t n;

    /* If this fiber is killed, its frames are abandoned: the hook closes the socket. */
    vms_fiber_on_kill(close_on_kill, arg);
    while ((n = read_some(fd, buf, sizeof buf)) > 0) {
        if (n >= (ssize_t)sizeof MAGIC - 1)
            parse(buf, 0);
        if (write_all(fd, buf, (size_t)n) < 0)
            break;
    }
    close(fd);
    return NULL;
}

static void *acceptor(void *arg)
{
    int lfd = (int)(intptr_t)arg;

    for (;;) {
        char name[32];
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EAGAIN)
                vms_wait_fd(lfd, EPOLLIN, -1);
            else if (errno == EMFILE || errno == ENFILE)
                vms_sleep_ns(10 * 1000 * 1000); /* out of fds: let connections end */
            else if (errno != EINTR && errno != ECONNABORTED)
                perror("echo-server: accept");
            continue;
        }
        /* Echoes go out at once, not held back for the ack of the previous one (Nagle). */
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
        snprintf(name, sizeof name, "conn-%d", fd);
        if (vms_fiber_spawn(NULL, connection, (void *)(intptr_t)fd,
                            &(vms_fiber_opts){ .name = name, .detached = 1 }) < 0) {
            fprintf(stderr, "echo-server: %s\n", vms_last_error());
            close(fd);
        }
    }
    return NULL;
}

/* One thread's scheduler: the acceptor and the connections it spawns. */
static void *serve(void *arg)
{
    if (vms_fiber_spawn(NULL, acceptor, arg, &(vms_fiber_opts){ .name = "acceptor", .detached = 1 }) < 0 ||
        vms_run() < 0)
        fprintf(stderr, "echo-server: %s\n", vms_last_error());
    return NULL;
}

static int listen_on(struct sockaddr_in *addr)
{
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof *addr;

    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) ||
        bind(fd, (struct sockaddr *)addr, sizeof *addr) || listen(fd, SOMAXCONN) ||
        getsockname(fd, (struct sockaddr *)addr, &len)) {
        perror("echo-server: listen");
        exit(1);
    }
    return fd;
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int threads = 1, opt, lfd;
    pthread_t t;

    while ((opt = getopt(argc, argv, "a:p:t:")) != -1) {
        switch (opt) {
        case 'a':
            if (inet_pton(AF_INET, optarg, &addr.sin_addr) != 1)
                goto usage;
            break;
        case 'p':
            addr.sin_port = htons((uint16_t)atoi(optarg));
            break;
        case 't':
            if ((threads = atoi(optarg)) < 1)
                goto usage;
            break;
        default:
            goto usage;
        }
    }
    /* The first socket fixes the port (-p 0: the kernel's choice); the others share it. */
    lfd = listen_on(&addr);
    for (int i = 1; i < threads; i++)
        if (pthread_create(&t, NULL, serve, (void *)(intptr_t)listen_on(&addr))) {
            perror("echo-server: pthread_create");
            return 1;
        }
    printf("listening on %s:%d\n", inet_ntoa(addr.sin_addr), ntohs(addr.sin_port));
    fflush(stdout);
    serve((void *)(intptr_t)lfd);
    return 1;
usage:
    fprintf(stderr, "usage: echo-server [-a ADDR] [-p PORT] [-t THREADS]\n");
    return 2;
}
