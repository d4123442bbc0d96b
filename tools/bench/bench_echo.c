/* SPDX-License-Identifier: MIT */
/*
 * bench echo: the same TCP echo server on loopback written three ways, in
 * child processes, against one load generator (this process, one epoll
 * loop): vmstack fibers (a fiber per connection, blocking-style code over
 * vms_wait_fd), a glibc thread per connection (blocking I/O), and a plain
 * epoll callback loop, the lower bound with no stack per connection at
 * all.  Fibers and the epoll loop run a scheduler (loop) per CPU, as a
 * thread per connection uses every CPU too.
 *
 *   - Requests per second with 1,000 connections, each with one 64-byte
 *     request in flight at a time: interleaved rounds, medians.  The
 *     server's CPU time per request is reported too (from the kernel's
 *     per-thread run-time accounting): on a shared machine it is the figure
 *     that depends least on what else runs.
 *   - Memory per idle connection: 10,000 connections opened and echoed once
 *     (every fiber or thread has run and waits in recv), then the growth of
 *     the server's resident set divided by 10,000.  The handler is the same
 *     in all three (a 4 KiB buffer on its stack).  A thread also has a
 *     kernel stack, which no RSS shows: its growth is reported beside.
 */
#include "bench.h"
#include "vmstack.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CONNS 1000
#define IDLE_CONNS 10000
#define MSG 64
#define REQS 50000L
#define ROUNDS 7

enum kind { FIBERS, THREADS, EPOLL, NKINDS };
static const char *const kind_name[NKINDS] = { "fibers", "threads", "epoll" };

/* ---- the three servers (in the child) ---- */

static void nodelay(int fd)
{
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
}

static void *fiber_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[4096];

    bool drained = false;

    /*
     * A short read emptied the socket: wait before the next read, not after
     * a read that finds nothing. The system calls of the epoll loop.
     */
    for (;;) {
        ssize_t n;

        if (drained && vms_wait_fd(fd, EPOLLIN, -1) <= 0)
            break;
        n = recv(fd, buf, sizeof buf, 0);
        if (n < 0 && errno == EAGAIN) {
            drained = true;
            continue;
        }
        if (n <= 0 || send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
            break;
        drained = (size_t)n < sizeof buf;
    }
    close(fd);
    return NULL;
}

static void *fiber_acceptor(void *arg)
{
    int lfd = (int)(intptr_t)arg;

    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

        if (fd < 0) {
            if (errno == EAGAIN)
                vms_wait_fd(lfd, EPOLLIN, -1);
            continue;
        }
        nodelay(fd);
        if (vms_fiber_spawn(NULL, fiber_conn, (void *)(intptr_t)fd, &(vms_fiber_opts){ .detached = 1 }))
            close(fd);
    }
    return NULL;
}

static void serve_fibers(int lfd)
{
    fcntl(lfd, F_SETFL, O_NONBLOCK);
    vms_fiber_spawn(NULL, fiber_acceptor, (void *)(intptr_t)lfd, &(vms_fiber_opts){ .detached = 1 });
    vms_run();
}

static void *thread_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[4096];
    ssize_t n;

    while ((n = recv(fd, buf, sizeof buf, 0)) > 0)
        if (send(fd, buf, (size_t)n, MSG_NOSIGNAL) != n)
            break;
    close(fd);
    return NULL;
}

static void serve_threads(int lfd)
{
    pthread_attr_t attr;

    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        pthread_t t;

        if (fd < 0)
            continue;
        nodelay(fd);
        if (pthread_create(&t, &attr, thread_conn, (void *)(intptr_t)fd))
            close(fd);
    }
}

static void serve_epoll(int lfd)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev[256];
    char buf[4096];

    fcntl(lfd, F_SETFL, O_NONBLOCK);
    epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &(struct epoll_event){ .events = EPOLLIN, .data.fd = lfd });
    for (;;) {
        int n = epoll_wait(ep, ev, 256, -1);

        for (int i = 0; i < n; i++) {
            int fd = ev[i].data.fd, c;
            ssize_t len;

            if (fd == lfd) {
                while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    nodelay(c);
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &(struct epoll_event){ .events = EPOLLIN, .data.fd = c });
                }
                continue;
            }
            len = recv(fd, buf, sizeof buf, 0);
            if (len < 0 && errno == EAGAIN)
                continue;
            if (len <= 0 || send(fd, buf, (size_t)len, MSG_NOSIGNAL) != len)
                close(fd);
        }
    }
}

/* A loop per listening socket, on threads of their own but the first. */
static void *serve_thread(void *arg)
{
    intptr_t v = (intptr_t)arg;

    if (v >> 32 == FIBERS)
        serve_fibers((int)(v & 0xffffffff));
    else
        serve_epoll((int)(v & 0xffffffff));
    return NULL;
}

static int listen_on(struct sockaddr_in *addr)
{
    socklen_t len = sizeof *addr;
    int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) ||
        bind(fd, (struct sockaddr *)addr, sizeof *addr) || listen(fd, SOMAXCONN) ||
        getsockname(fd, (struct sockaddr *)addr, &len)) {
        perror("vmstack bench echo: listen");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/*
 * Forks a server of kind on a fresh loopback port; its pid, and the port in
 * *addr.  Every kind uses every CPU: a thread per connection by itself, the
 * fibers and the epoll loop with a thread (scheduler, loop) per CPU, each
 * on its own listening socket of the port (SO_REUSEPORT).
 */
static pid_t server_start(enum kind k, struct sockaddr_in *addr)
{
    int n = k == THREADS ? 1 : (int)sysconf(_SC_NPROCESSORS_ONLN), lfd[64];
    pid_t pid;

    if (n < 1 || n > 64)
        n = n < 1 ? 1 : 64;
    *addr = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    for (int i = 0; i < n; i++)
        if ((lfd[i] = listen_on(addr)) < 0)
            return -1;
    pid = fork();
    if (pid == 0) {
        pthread_t t;

        if (k == THREADS)
            serve_threads(lfd[0]);
        for (int i = 1; i < n; i++)
            pthread_create(&t, NULL, serve_thread, (void *)((intptr_t)k << 32 | lfd[i]));
        serve_thread((void *)((intptr_t)k << 32 | lfd[0]));
        _exit(1);
    }
    for (int i = 0; i < n; i++)
        close(lfd[i]);
    if (pid < 0)
        perror("vmstack bench echo: fork");
    return pid;
}

static void server_stop(pid_t pid)
{
    if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
}

/* The server's CPU time so far: the sum over its threads of the kernel's run time (ns). */
static double server_cpu_ns(pid_t pid)
{
    char path[64];
    double sum = 0;
    DIR *d;
    struct dirent *de;

    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    if (!(d = opendir(path)))
        return -1;
    while ((de = readdir(d))) {
        char file[400];
        unsigned long long ns;
        FILE *f;

        if (de->d_name[0] == '.')
            continue;
        snprintf(file, sizeof file, "%s/%s/schedstat", path, de->d_name);
        if ((f = fopen(file, "r"))) {
            if (fscanf(f, "%llu", &ns) == 1)
                sum += (double)ns;
            fclose(f);
        }
    }
    closedir(d);
    return sum;
}

static long server_rss(pid_t pid)
{
    char path[64];
    long size, resident = -1;
    FILE *f;

    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    if ((f = fopen(path, "r"))) {
        if (fscanf(f, "%ld %ld", &size, &resident) != 2)
            resident = -1;
        fclose(f);
    }
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

/* ---- the load generator (this process) ---- */

struct load {
    enum kind kind;
    pid_t pid;
    struct sockaddr_in addr;
    int ep;
    int *fds;
    int n;
};

/* Opens n connections (blocking connect, then non-blocking); 0, or -1 after printing why. */
static int load_open(struct load *l, int n)
{
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    l->fds = calloc((size_t)n, sizeof *l->fds);
    if (l->ep < 0 || !l->fds)
        return -1;
    for (l->n = 0; l->n < n; l->n++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0 || connect(fd, (struct sockaddr *)&l->addr, sizeof l->addr)) {
            fprintf(stderr, "vmstack bench echo: connection %d to the %s server: %s\n", l->n, kind_name[l->kind],
                    strerror(errno));
            if (fd >= 0)
                close(fd);
            return -1;
        }
        nodelay(fd);
        fcntl(fd, F_SETFL, O_NONBLOCK);
        l->fds[l->n] = fd;
        epoll_ctl(l->ep, EPOLL_CTL_ADD, fd, &(struct epoll_event){ .events = EPOLLIN, .data.u32 = (uint32_t)l->n });
    }
    return 0;
}

static void load_close(struct load *l)
{
    for (int i = 0; i < l->n; i++)
        close(l->fds[i]);
    free(l->fds);
    if (l->ep >= 0)
        close(l->ep);
    l->fds = NULL;
    l->n = 0;
    l->ep = -1;
}

/*
 * reqs requests, each connection keeping one in flight; every reply is
 * read in full (64 bytes) before the next request goes.  0, or -1.
 */
static int load_run(struct load *l, long reqs)
{
    static char msg[MSG] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde";
    static int got[IDLE_CONNS];
    struct epoll_event ev[256];
    long sent = 0, done = 0;

    for (int i = 0; i < l->n && sent < reqs; i++, sent++) {
        got[i] = 0;
        if (send(l->fds[i], msg, MSG, MSG_NOSIGNAL) != MSG)
            return -1;
    }
    while (done < reqs) {
        int n = epoll_wait(l->ep, ev, 256, 10000);

        if (n <= 0) {
            fprintf(stderr, "vmstack bench echo: the %s server stopped answering\n", kind_name[l->kind]);
            return -1;
        }
        for (int e = 0; e < n; e++) {
            int i = (int)ev[e].data.u32;
            char buf[MSG];
            ssize_t r = recv(l->fds[i], buf, (size_t)(MSG - got[i]), 0);

            if (r < 0 && errno == EAGAIN)
                continue;
            if (r <= 0)
                return -1;
            if ((got[i] += (int)r) < MSG)
                continue;
            got[i] = 0;
            done++;
            if (sent < reqs) {
                sent++;
                if (send(l->fds[i], msg, MSG, MSG_NOSIGNAL) != MSG)
                    return -1;
            }
        }
    }
    return 0;
}

/* ---- the benchmark ---- */

static int raise_fd_limit(int need)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl))
        return -1;
    if (rl.rlim_cur < (rlim_t)need) {
        rl.rlim_cur = rl.rlim_max < (rlim_t)need ? rl.rlim_max : (rlim_t)need;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur >= (rlim_t)need ? 0 : -1;
}

/* Requests per second: interleaved rounds over the three servers. */
static int throughput(int conns, long reqs, int rounds, double rps[NKINDS], double cpu[NKINDS],
                      double spread[NKINDS])
{
    struct load l[NKINDS];
    double *wall_s = calloc((size_t)(NKINDS * rounds), sizeof *wall_s);
    double *cpu_s = calloc((size_t)(NKINDS * rounds), sizeof *cpu_s);
    int rc = 0;

    for (int k = 0; k < NKINDS; k++) {
        l[k] = (struct load){ .kind = (enum kind)k, .ep = -1 };
        l[k].pid = server_start((enum kind)k, &l[k].addr);
        if (l[k].pid < 0 || load_open(&l[k], conns))
            rc = -1;
    }
    /* One warm-up round, then the measured ones, each starting with another server. */
    for (int r = -1; r < rounds && !rc; r++) {
        for (int j = 0; j < NKINDS && !rc; j++) {
            int k = (j + (r < 0 ? 0 : r)) % NKINDS;
            double t0 = bench_now_ns(), c0 = server_cpu_ns(l[k].pid);

            rc = load_run(&l[k], reqs);
            if (r >= 0) {
                wall_s[k * rounds + r] = (bench_now_ns() - t0) / (double)reqs;
                cpu_s[k * rounds + r] = (server_cpu_ns(l[k].pid) - c0) / (double)reqs;
            }
        }
    }
    for (int k = 0; k < NKINDS && !rc; k++) {
        double med, sp, cmed, csp;
        char what[64];

        snprintf(what, sizeof what, "echo %s", kind_name[k]);
        bench_summarize(what, &wall_s[k * rounds], rounds, &med, &sp);
        bench_summarize(what, &cpu_s[k * rounds], rounds, &cmed, &csp);
        rps[k] = 1e9 / med;
        cpu[k] = cmed;
        spread[k] = sp;
    }
    for (int k = 0; k < NKINDS; k++) {
        load_close(&l[k]);
        server_stop(l[k].pid);
    }
    free(wall_s);
    free(cpu_s);
    return rc;
}

/* The kernel's memory for the stacks of all tasks (KernelStack of /proc/meminfo), in bytes. */
static long kernel_stacks(void)
{
    char line[128];
    long kb = -1;
    FILE *f = fopen("/proc/meminfo", "r");

    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "KernelStack: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/*
 * Resident bytes per idle connection of a server of kind k, with n
 * connections open; and in *kstack what the kernel's stacks grew by per
 * connection meanwhile (machine-wide: other processes' threads add noise).
 */
static double idle_rss(enum kind k, int n, double *kstack)
{
    struct load l = { .kind = k, .ep = -1 };
    long before, after = -1, ks0 = 0, ks1 = 0;

    if ((l.pid = server_start(k, &l.addr)) < 0)
        return -1;
    /* A few connections first, so that the first one's one-time costs are in the baseline. */
    if (load_open(&l, 16) == 0 && load_run(&l, 16) == 0) {
        load_close(&l);
        usleep(100000);
        before = server_rss(l.pid);
        ks0 = kernel_stacks();
        if (load_open(&l, n) == 0 && load_run(&l, n) == 0) {
            after = server_rss(l.pid);
            ks1 = kernel_stacks();
        }
        load_close(&l);
    }
    server_stop(l.pid);
    *kstack = (double)(ks1 - ks0) / n;
    return after < 0 ? -1 : (double)(after - before) / n;
}

int bench_echo(void)
{
    int quick = bench_quick();
    int conns = quick ? 100 : CONNS, idle = quick ? 1000 : IDLE_CONNS, rounds = quick ? 3 : ROUNDS;
    long reqs = quick ? REQS / 20 : REQS;
    double rps[NKINDS], cpu[NKINDS], spread[NKINDS], rss[NKINDS], kstack[NKINDS];

    if (raise_fd_limit(idle + 64)) {
        fprintf(stderr, "vmstack bench echo: needs %d open files; raise the limit (ulimit -n)\n", idle + 64);
        return 1;
    }
    bench_title("echo: a TCP echo server on loopback, fibers vs a thread per connection vs an epoll loop");
    if (throughput(conns, reqs, rounds, rps, cpu, spread))
        return 1;
    for (int k = 0; k < NKINDS; k++)
        if ((rss[k] = idle_rss((enum kind)k, idle, &kstack[k])) < 0)
            return 1;
    bench_note("%d connections, one %d-byte request in flight on each, %ld requests per round:", conns, MSG, reqs);
    for (int k = 0; k < NKINDS; k++) {
        char note[96];

        snprintf(note, sizeof note, "server CPU %.0f ns per request", cpu[k]);
        bench_row(kind_name[k], rps[k], "req/s", spread[k], note);
        bench_plot_bar("echo", kind_name[k], rps[k], spread[k]);
    }
    bench_note("fibers: %.2fx the epoll loop (goal >= 0.9), %.2fx threads (goal >= 2); by server CPU: %.2fx, %.2fx",
               rps[FIBERS] / rps[EPOLL], rps[FIBERS] / rps[THREADS], cpu[EPOLL] / cpu[FIBERS],
               cpu[THREADS] / cpu[FIBERS]);
    bench_note("resident bytes per idle connection, %d open: fibers %.0f, threads %.0f, epoll %.0f "
               "(fibers/threads %.2f, goal <= 0.25)", idle, rss[FIBERS], rss[THREADS], rss[EPOLL],
               rss[FIBERS] / rss[THREADS]);
    bench_note("kernel stacks grew by %.0f, %.0f, %.0f bytes per connection (machine-wide, not in the RSS)",
               kstack[FIBERS], kstack[THREADS], kstack[EPOLL]);
    for (int k = 0; k < NKINDS; k++)
        bench_plot_bar("echo-rss", kind_name[k], rss[k], -1);
    bench_json_open("echo");
    bench_json_num("connections", conns);
    bench_json_num("message_bytes", MSG);
    bench_json_open("req_per_s");
    for (int k = 0; k < NKINDS; k++)
        bench_json_num(kind_name[k], rps[k]);
    bench_json_close();
    bench_json_open("server_cpu_ns_per_req");
    for (int k = 0; k < NKINDS; k++)
        bench_json_num(kind_name[k], cpu[k]);
    bench_json_close();
    bench_json_num("idle_connections", idle);
    bench_json_open("rss_per_idle_conn_bytes");
    for (int k = 0; k < NKINDS; k++)
        bench_json_num(kind_name[k], rss[k]);
    bench_json_close();
    bench_json_open("kernel_stack_per_idle_conn_bytes");
    for (int k = 0; k < NKINDS; k++)
        bench_json_num(kind_name[k], kstack[k]);
    bench_json_close();
    bench_json_close();
    return 0;
}
