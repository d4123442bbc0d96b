/* SPDX-License-Identifier: MIT */
/*
 * http-server: a small HTTP/1.1 keep-alive server on vmstack fibers.
 *
 *     http-server [-a ADDR] [-p PORT] [-t THREADS] [-w WORKERS]
 *
 * Each thread runs an acceptor fiber and a fiber per connection, which
 * reads requests as if blocking (vms_wait_fd when the socket has nothing).
 * A connection hands each request to a pool of worker fibers through one
 * channel shared by every thread (vms_chan), and waits for the answer
 * (vms_waitgroup).  The workers count the requests in a counter shared by
 * all threads, under a vms_mutex; the answer says which request it was:
 *
 *     GET /PATH  ->  200, "request N of PATH\n" (N in 10 digits)
 *
 * GET /overflow is the bug on purpose: the connection's handler recurses
 * without end.  vmstack reports the overflow on stderr and kills that
 * fiber only; its kill hook closes the connection, and every other one
 * goes on.
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

#define MAGIC_PATH "/overflow"

/* A request on its way to a worker, and its answer on the way back. */
struct job {
    char path[128];
    char body[192];
    vms_waitgroup done;
};

static vms_chan jobs;             /* struct job *, from connections to workers */
static vms_mutex hits_lock = VMS_MUTEX_INIT;
static unsigned long hits;        /* requests answered, under hits_lock */

static void *worker(void *arg)
{
    struct job *j;

    (void)arg;
    while (vms_chan_recv(&jobs, &j, -1) == 0) {
        unsigned long n;

        vms_mutex_lock(&hits_lock);
        n = ++hits;
        vms_mutex_unlock(&hits_lock);
        /* Fixed width: the same length for one path, as ab expects. */
        snprintf(j->body, sizeof j->body, "request %010lu of %s\n", n, j->path);
        vms_waitgroup_done(&j->done);
    }
    return NULL;
}

/* The bug on purpose: every level parses the path again, one frame deeper. */
static size_t parse_path(const char *path, size_t depth)
{
    char copy[256];

    memcpy(copy, path, sizeof MAGIC_PATH);
    if (strcmp(copy, MAGIC_PATH))
        return depth;
    return parse_path(copy, depth + 1) + (unsigned char)copy[depth % 8];
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

/* Answers one request (head: the request line and headers); whether the connection stays open. */
static int answer(int fd, char *head)
{
    char *sp1 = strchr(head, ' '), *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL, out[512];
    int keep, len;
    struct job j = { .done = VMS_WAITGROUP_INIT }, *p = &j;

    if (!sp1 || !sp2 || strncmp(head, "GET ", 4)) {
        len = snprintf(out, sizeof out, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        write_all(fd, out, (size_t)len);
        return 0;
    }
    *sp2 = 0;
    keep = !strncmp(sp2 + 1, "HTTP/1.1", 8) ? !strcasestr(sp2 + 1, "Connection: close")
                                             : strcasestr(sp2 + 1, "Connection: keep-alive") != NULL;
    snprintf(j.path, sizeof j.path, "%s", sp1 + 1);
    parse_path(j.path, 0);
    vms_waitgroup_add(&j.done, 1);
    if (vms_chan_send(&jobs, &p, -1) || vms_waitgroup_wait(&j.done, -1))
        return 0;
    len = snprintf(out, sizeof out, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n%s\r\n%s",
                   strlen(j.body), keep ? "Connection: keep-alive\r\n" : "Connection: close\r\n", j.body);
    return write_all(fd, out, (size_t)len) == 0 && keep;
}

static void close_on_kill(void *arg)
{
    close((int)(intptr_t)arg);
}

static void *connection(void *arg)
{
    int fd = (int)(intptr_t)arg, open = 1;
    char buf[4096];
    size_t have = 0;

    /* If this fiber is killed, its frames are abandoned: the hook closes the socket. */
    vms_fiber_on_kill(close_on_kill, arg);
    while (open) {
        char *end;
        ssize_t n;

        buf[have] = 0;
        /* Every complete request in the buffer (pipelined ones too), then read more. */
        while (open && (end = strstr(buf, "\r\n\r\n"))) {
            size_t used = (size_t)(end + 4 - buf);

            *end = 0;
            open = answer(fd, buf);
            memmove(buf, buf + used, have - used + 1);
            have -= used;
        }
        if (!open)
            break;
        if (have == sizeof buf - 1)
            break; /* headers too long for this example */
        n = recv(fd, buf + have, sizeof buf - 1 - have, 0);
        if (n < 0 && errno == EAGAIN) {
            if (vms_wait_fd(fd, EPOLLIN, -1) < 0)
                break;
            continue;
        }
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    close(fd);
    return NULL;
}

static void *acceptor(void *arg)
{
    int lfd = (int)(intptr_t)arg;

    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EAGAIN)
                vms_wait_fd(lfd, EPOLLIN, -1);
            else if (errno == EMFILE || errno == ENFILE)
                vms_sleep_ns(10 * 1000 * 1000); /* out of fds: let connections end */
            continue;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
        if (vms_fiber_spawn(NULL, connection, (void *)(intptr_t)fd,
                            &(vms_fiber_opts){ .name = "http-conn", .detached = 1 }) < 0) {
            fprintf(stderr, "http-server: %s\n", vms_last_error());
            close(fd);
        }
    }
    return NULL;
}

static int workers = 4;

/* One thread's scheduler: the acceptor, the connections it spawns, and workers of the shared pool. */
static void *serve(void *arg)
{
    int rc = vms_fiber_spawn(NULL, acceptor, arg, &(vms_fiber_opts){ .name = "acceptor", .detached = 1 });

    for (int i = 0; i < workers && rc == 0; i++)
        rc = vms_fiber_spawn(NULL, worker, NULL, &(vms_fiber_opts){ .name = "worker", .detached = 1 });
    if (rc < 0 || vms_run() < 0)
        fprintf(stderr, "http-server: %s\n", vms_last_error());
    return NULL;
}

static int listen_on(struct sockaddr_in *addr)
{
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof *addr;

    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) ||
        bind(fd, (struct sockaddr *)addr, sizeof *addr) || listen(fd, SOMAXCONN) ||
        getsockname(fd, (struct sockaddr *)addr, &len)) {
        perror("http-server: listen");
        exit(1);
    }
    return fd;
}

int main(int argc, char **argv)
{
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int threads = 1, opt, lfd;
    pthread_t t;

    while ((opt = getopt(argc, argv, "a:p:t:w:")) != -1) {
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
        case 'w':
            if ((workers = atoi(optarg)) < 1)
                goto usage;
            break;
        default:
            goto usage;
        }
    }
    if (vms_chan_init(&jobs, sizeof(struct job *), 64)) {
        fprintf(stderr, "http-server: %s\n", vms_last_error());
        return 1;
    }
    lfd = listen_on(&addr);
    for (int i = 1; i < threads; i++)
        if (pthread_create(&t, NULL, serve, (void *)(intptr_t)listen_on(&addr))) {
            perror("http-server: pthread_create");
            return 1;
        }
    printf("listening on %s:%d\n", inet_ntoa(addr.sin_addr), ntohs(addr.sin_port));
    fflush(stdout);
    serve((void *)(intptr_t)lfd);
    return 1;
usage:
    fprintf(stderr, "usage: http-server [-a ADDR] [-p PORT] [-t THREADS] [-w WORKERS]\n");
    return 2;
}
