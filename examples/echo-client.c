/* SPDX-License-Identifier: MIT */
/*
 * echo-client: a load generator for echo-server, also on vmstack fibers.
 *
 *     echo-client [-a ADDR] -p PORT [-c CONNECTIONS] [-m MESSAGES] [-s MAXSIZE]
 *
 * Opens CONNECTIONS connections at once (default 100), one fiber each, and
 * sends MESSAGES messages (default 100) of random sizes up to MAXSIZE bytes
 * (default 4096) on each, checking that every byte comes back.  Prints the
 * totals; exits 1 if any connection failed or any byte differed.
 */
#include <vmstack.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static struct sockaddr_in addr = { .sin_family = AF_INET };
static int messages = 100, max_size = 4096;
static long failed, echoed;

/* Connects without blocking the thread: the fiber waits until the handshake is done. */
static int connect_to(void)
{
    int err = 0, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof err;

    if (fd < 0)
        return -1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) && errno != EINPROGRESS)
        err = errno;
    else if (vms_wait_fd(fd, EPOLLOUT, -1) < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
        err = errno;
    if (err) {
        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* Sends len bytes and reads them back into back; 0, or -1 with errno. */
static int echo(int fd, const char *msg, char *back, size_t len)
{
    size_t sent = 0, got = 0;

    while (got < len) {
        ssize_t n = sent < len ? send(fd, msg + sent, len - sent, MSG_NOSIGNAL) : 0;

        if (n > 0)
            sent += (size_t)n;
        else if (n < 0 && errno != EAGAIN)
            return -1;
        n = recv(fd, back + got, len - got, 0);
        if (n > 0)
            got += (size_t)n;
        else if (n == 0 || errno != EAGAIN)
            return n == 0 ? (errno = ECONNRESET, -1) : -1;
        else if (vms_wait_fd(fd, sent < len ? EPOLLIN | EPOLLOUT : EPOLLIN, -1) < 0)
            return -1;
    }
    return 0;
}

static void *connection(void *arg)
{
    unsigned seed = (unsigned)(uintptr_t)arg;
    char *msg = malloc((size_t)max_size), *back = malloc((size_t)max_size);
    int fd = connect_to();

    for (int i = 0; fd >= 0 && i < messages; i++) {
        size_t len = 1 + (size_t)rand_r(&seed) % (size_t)max_size;

        for (size_t j = 0; j < len; j++)
            msg[j] = (char)rand_r(&seed);
        if (echo(fd, msg, back, len) < 0) {
            fprintf(stderr, "echo-client: connection %u, message %d: %s\n", (unsigned)(uintptr_t)arg, i,
                    strerror(errno));
            break;
        }
        if (memcmp(msg, back, len) != 0) {
            fprintf(stderr, "echo-client: connection %u, message %d: bytes differ\n", (unsigned)(uintptr_t)arg, i);
            break;
        }
        echoed += (long)len;
        if (i == messages - 1) {
            close(fd);
            fd = -2; /* done */
        }
    }
    if (fd == -1)
        fprintf(stderr, "echo-client: connect: %s\n", strerror(errno));
    if (fd != -2) {
        failed++;
        if (fd >= 0)
            close(fd);
    }
    free(msg);
    free(back);
    return NULL;
}

int main(int argc, char **argv)
{
    int conns = 100, opt;
    struct timespec t0, t1;
    double secs;

    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    while ((opt = getopt(argc, argv, "a:p:c:m:s:")) != -1) {
        switch (opt) {
        case 'a':
            if (inet_pton(AF_INET, optarg, &addr.sin_addr) != 1)
                goto usage;
            break;
        case 'p': addr.sin_port = htons((uint16_t)atoi(optarg)); break;
        case 'c': conns = atoi(optarg); break;
        case 'm': messages = atoi(optarg); break;
        case 's': max_size = atoi(optarg); break;
        default: goto usage;
        }
    }
    if (!addr.sin_port || conns < 1 || messages < 1 || max_size < 1)
        goto usage;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < conns; i++)
        if (vms_fiber_spawn(NULL, connection, (void *)(uintptr_t)(i + 1), &(vms_fiber_opts){ .detached = 1 }) < 0) {
            fprintf(stderr, "echo-client: %s\n", vms_last_error());
            return 1;
        }
    if (vms_run() < 0) {
        fprintf(stderr, "echo-client: %s\n", vms_last_error());
        return 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%d connections x %d messages: %ld bytes echoed in %.2f s (%.0f messages/s), %ld failed\n", conns,
           messages, echoed, secs, (double)(conns - failed) * messages / secs, failed);
    return failed ? 1 : 0;
usage:
    fprintf(stderr, "usage: echo-client [-a ADDR] -p PORT [-c CONNECTIONS] [-m MESSAGES] [-s MAXSIZE]\n");
    return 2;
}
