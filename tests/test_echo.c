/* SPDX-License-Identifier: MIT */
/*
 * The echo server example under load, on loopback: CONNS connections open
 * at once, each echoing MSGS messages of random sizes up to 4 KiB with
 * every byte checked, while one more connection sends the server's magic
 * message: its handler recurses without end, and its fiber must be killed
 * with the report and its connection closed while every other connection
 * completes.  The server's descriptors and VMAs must come back to their
 * baseline once all connections are closed.
 *
 *     test_echo ECHO_SERVER [CONNS [MSGS]]
 *
 * The client side is fibers too, one per connection, in this process.  A
 * first round with one message per connection, and the magic one, brings
 * the server to its steady state (stack chunks mapped, fd tables grown,
 * the symbols a first report reads mapped for good); the VMA baseline is
 * taken after it, the fd baseline before it (after a few connections, so
 * that the server's threads are up).
 *
 * Under ThreadSanitizer a fiber's context costs the runtime about 1 MB, so
 * the default there is 1,000 connections of 20 messages; and the runtime
 * maps shadow memory of its own as the server touches new memory, so the
 * server's VMAs are not compared there (its descriptors still are).
 */
#include "check.h"
#include "core/sanitizer.h"
#include "vmstack.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef VMS_SAN_THREAD
#define DEFAULT_CONNS 1000
#define DEFAULT_MSGS 20
#define COMPARE_VMAS 0
#else
#define DEFAULT_CONNS 10000
#define DEFAULT_MSGS 100
#define COMPARE_VMAS 1
#endif

#define MAX_SIZE 4096
#define MAGIC "overflow\n"

static struct sockaddr_in addr = { .sin_family = AF_INET };
static int conns, msgs;
static long done_ok, connected, failures;
static vms_fiber *waiting;     /* fibers parked until every connection is open */
static long nwaiting;
static int magic_closed;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_to(void)
{
    int err = 0, fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    socklen_t len = sizeof err;

    CHECK(fd >= 0);
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr)) {
        CHECK_EQ(errno, EINPROGRESS);
        CHECK(vms_wait_fd(fd, EPOLLOUT, 60 * 1000000000LL) > 0);
        CHECK_EQ(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len), 0);
    }
    if (err) {
        fprintf(stderr, "connect: %s\n", strerror(err));
        exit(1);
    }
    return fd;
}

/* Sends len bytes and reads as many back; 0, or -errno (-ECONNRESET for end of file). */
static int echo(int fd, const char *msg, char *back, size_t len)
{
    size_t sent = 0, got = 0;

    while (got < len) {
        ssize_t n = sent < len ? send(fd, msg + sent, len - sent, MSG_NOSIGNAL) : 0;

        if (n > 0)
            sent += (size_t)n;
        else if (n < 0 && errno != EAGAIN)
            return -errno;
        n = recv(fd, back + got, len - got, 0);
        if (n > 0)
            got += (size_t)n;
        else if (n == 0)
            return -ECONNRESET;
        else if (errno != EAGAIN)
            return -errno;
        else if (vms_wait_fd(fd, sent < len ? EPOLLIN | EPOLLOUT : EPOLLIN, 60 * 1000000000LL) <= 0)
            return -ETIMEDOUT;
    }
    return 0;
}

/* Parks until all conns connections have echoed their first message. */
static void all_open(void)
{
    if (++connected < conns) {
        waiting[nwaiting++] = vms_fiber_current();
        CHECK_EQ(vms_fiber_park(), 0);
        return;
    }
    for (long i = 0; i < nwaiting; i++)
        CHECK_EQ(vms_fiber_wake(waiting[i]), 0);
}

static void *client(void *arg)
{
    unsigned id = (unsigned)(uintptr_t)arg, seed = id;
    char msg[MAX_SIZE], back[MAX_SIZE];
    int fd = connect_to(), rc = 0;

    for (int i = 0; i < msgs && !rc; i++) {
        size_t len = 1 + (size_t)rand_r(&seed) % MAX_SIZE;

        /* No 'o': no chunk of ours can look like the magic message. */
        for (size_t j = 0; j < len; j++) {
            int c = rand_r(&seed) & 0xff;

            msg[j] = (char)(c == 'o' ? 'p' : c);
        }
        if ((rc = echo(fd, msg, back, len)))
            fprintf(stderr, "connection %u, message %d of %zu bytes: %s\n", id, i, len, strerror(-rc));
        else if ((rc = memcmp(msg, back, len)))
            fprintf(stderr, "connection %u, message %d: bytes differ\n", id, i);
        if (i == 0)
            all_open();
    }
    if (rc)
        failures++;
    else
        done_ok++;
    close(fd);
    return NULL;
}

/* Sends the magic message once every connection is open: the server must close this connection. */
static void *magic(void *arg)
{
    int fd = connect_to();
    char buf[64];
    ssize_t n;

    (void)arg;
    while (connected < conns)
        CHECK_EQ(vms_sleep_ns(10 * 1000000), 0);
    CHECK_EQ(send(fd, MAGIC, strlen(MAGIC), MSG_NOSIGNAL), (ssize_t)strlen(MAGIC));
    for (;;) {
        n = recv(fd, buf, sizeof buf, 0);
        if (n >= 0 || errno != EAGAIN)
            break;
        CHECK(vms_wait_fd(fd, EPOLLIN, 60 * 1000000000LL) > 0);
    }
    /* Closed without an echo: end of file, or a reset. */
    CHECK(n == 0 || (n < 0 && errno == ECONNRESET));
    magic_closed = 1;
    close(fd);
    return NULL;
}

static void round_of(int n, int m, int with_magic)
{
    double t0 = now_s();

    conns = n;
    msgs = m;
    done_ok = connected = nwaiting = 0;
    magic_closed = 0;
    for (int i = 0; i < n; i++)
        CHECK_EQ(vms_fiber_spawn(NULL, client, (void *)(uintptr_t)(i + 1), &(vms_fiber_opts){ .detached = 1 }), 0);
    if (with_magic)
        CHECK_EQ(vms_fiber_spawn(NULL, magic, NULL, &(vms_fiber_opts){ .detached = 1 }), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(failures, 0);
    CHECK_EQ(done_ok, n);
    CHECK_EQ(magic_closed, with_magic);
    fprintf(stderr, "%d connections x %d messages%s: %.1f s\n", n, m, with_magic ? " + the magic one" : "",
            now_s() - t0);
}

static long count_entries(pid_t pid, const char *what)
{
    char path[64];
    long n = 0;

    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, what);
    if (!strcmp(what, "maps")) {
        FILE *f = fopen(path, "r");
        int c;

        CHECK(f);
        while ((c = getc(f)) != EOF)
            n += c == '\n';
        fclose(f);
    } else {
        DIR *d = opendir(path);
        struct dirent *de;

        CHECK(d);
        while ((de = readdir(d)))
            n += de->d_name[0] != '.';
        closedir(d);
    }
    return n;
}

/* The server closes its side after ours: give it a moment to get back to want. */
static long settle(pid_t pid, const char *what, long want)
{
    long n = count_entries(pid, what);

    for (int i = 0; i < 1000 && n != want; i++) {
        usleep(10000);
        n = count_entries(pid, what);
    }
    return n;
}

static pid_t start_server(const char *path, int err_fd)
{
    int out[2];
    pid_t pid;
    char line[128];
    ssize_t n, len = 0;
    int port;

    CHECK_EQ(pipe(out), 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err_fd, 2);
        execl(path, path, "-t", "2", "-p", "0", (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    while (len < (ssize_t)sizeof line - 1 && (n = read(out[0], line + len, sizeof line - 1 - (size_t)len)) > 0) {
        len += n;
        if (memchr(line, '\n', (size_t)len))
            break;
    }
    line[len] = 0;
    CHECK(sscanf(line, "listening on 127.0.0.1:%d", &port) == 1);
    close(out[0]);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons((uint16_t)port);
    return pid;
}

int main(int argc, char **argv)
{
    int n = argc > 2 ? atoi(argv[2]) : DEFAULT_CONNS, m = argc > 3 ? atoi(argv[3]) : DEFAULT_MSGS, status;
    struct rlimit rl;
    char tmpl[] = "/tmp/vms-echo-XXXXXX";
    static char report[1 << 16];
    long fds0, vmas0, fds, vmas;
    int err_fd;
    pid_t pid;
    ssize_t len;

    CHECK(argc > 1);
    /* Both sides hold n + 1 sockets; the child inherits the limit. */
    CHECK_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max < (rlim_t)n + 64) {
        fprintf(stderr, "test_echo: RLIMIT_NOFILE's hard limit %llu is below the %d descriptors needed; "
                        "raise it (ulimit -Hn) or pass a smaller count\n", (unsigned long long)rl.rlim_max, n + 64);
        return 1;
    }
    rl.rlim_cur = rl.rlim_max;
    CHECK_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
    waiting = calloc((size_t)n, sizeof *waiting);
    CHECK(waiting);
    err_fd = mkstemp(tmpl);
    CHECK(err_fd >= 0);
    unlink(tmpl);
    pid = start_server(argv[1], err_fd);
    /*
     * The server's threads make their epoll sets as they start: a few
     * connections (spread over both threads by SO_REUSEPORT) make sure they
     * have, before the fd baseline.
     */
    round_of(64, 1, 0);
    usleep(200000);
    fds0 = count_entries(pid, "fd");

    round_of(n, 1, 1);
    CHECK_EQ(settle(pid, "fd", fds0), fds0);
    vmas0 = count_entries(pid, "maps");

    round_of(n, m, 1);
    fds = settle(pid, "fd", fds0);
    vmas = settle(pid, "maps", vmas0);
    fprintf(stderr, "server: %ld fds (baseline %ld), %ld VMAs (baseline %ld%s)\n", fds, fds0, vmas, vmas0,
            COMPARE_VMAS ? "" : ", not compared under ThreadSanitizer");
    CHECK_EQ(fds, fds0);
    if (COMPARE_VMAS)
        CHECK_EQ(vmas, vmas0);

    /* The server is alive, and reported the killed connection's overflow. */
    CHECK_EQ(waitpid(pid, &status, WNOHANG), 0);
    len = pread(err_fd, report, sizeof report - 1, 0);
    CHECK(len > 0);
    report[len] = 0;
    CHECK(strstr(report, "vmstack: BUG: stack guard page was hit at "));
    CHECK(strstr(report, "vmstack: fiber 'conn-"));
    CHECK(strstr(report, "] parse"));
    CHECK(strstr(report, "vmstack: killed fiber 'conn-"));
    /* A sanitized server reports what it finds on its stderr, and goes on. */
    CHECK(!strstr(report, "WARNING: ThreadSanitizer") && !strstr(report, "ERROR: AddressSanitizer") &&
          !strstr(report, "runtime error:"));
    kill(pid, SIGTERM);
    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
    return 0;
}
