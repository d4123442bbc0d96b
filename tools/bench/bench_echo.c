/* SPDX-License-Identifier: MIT */
/*
 * bench echo: the same TCP echo server on loopback written the ways a user
 * would pick, in child processes, against one load generator (this
 * process, one epoll loop): vmstack fibers (a fiber per connection,
 * blocking-style code over vms_wait_fd; a scheduler per CPU, and one
 * thread), a glibc thread per connection (blocking I/O), a plain epoll
 * callback loop per CPU, the lower bound with no stack per connection at
 * all, and Go (a goroutine per connection, GOMAXPROCS=1 and the default),
 * built from tools/bench/echo.go when Go is installed.
 *
 *   - Requests per second with 1,000 connections, each with one 64-byte
 *     (then 512-byte) request in flight at a time: interleaved rounds,
 *     medians; p50/p99 latency of a request in the last round.  The
 *     server's CPU time per request is reported too (from the kernel's
 *     per-thread run-time accounting, /proc/PID/task/TID/schedstat): on a
 *     shared machine it is the figure that depends least on what else runs.
 *   - Memory given back: 10,000 fiber connections that each went 32 KiB
 *     deep once, then idle and trimmed (vms_fiber_trim), against 10,000
 *     that went 4 KiB deep.
 *   - Memory per idle connection: 10,000 connections opened and echoed once
 *     (every fiber or thread has run and waits in recv), then the growth of
 *     the server's resident set divided by 10,000.  The handler is the same
 *     in all three (a 4 KiB buffer on its stack).  A thread also has a
 *     kernel stack, which no RSS shows: its growth is reported beside.
 *   - User-space instructions per request, fibers on one thread against
 *     the epoll loop, by callgrind when valgrind is installed: the figure
 *     that shows what the scheduler adds to the same system calls, and
 *     the one a loaded machine does not change.
 */
#include "bench.h"
#include "vmstack.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#define MSG_MAX 512
#define REQS 50000L
#define ROUNDS 7
#define TRIM_IDLE_NS (200 * 1000000ull)

enum kind { FIBERS, FIBERS1, THREADS, EPOLL, GO1, GO, NKINDS };
static const char *const kind_name[NKINDS] = { "fibers", "fibers-1t", "threads", "epoll", "go-1p", "go" };
static bool have[NKINDS] = { true, true, true, true, false, false };
static int msg_size = 64;
static size_t deep_bytes;        /* fiber server: how deep each connection goes on its first request */
static char go_bin[300];         /* the Go peer, built in a temporary directory */
static char go_dir[64];

/* ---- the three servers (in the child) ---- */

static void nodelay(int fd)
{
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &(int){ 1 }, sizeof(int));
}

/* Touches `bytes` of stack below this frame, as a deep parse or a handshake would. */
static __attribute__((noinline)) void go_deep(size_t bytes)
{
    volatile char *p = __builtin_alloca(bytes);

    for (size_t i = 0; i < bytes; i += 64)
        p[i] = 1;
}

static void *fiber_conn(void *arg)
{
    int fd = (int)(intptr_t)arg;
    char buf[4096];
    bool drained = false;

    if (deep_bytes)
        go_deep(deep_bytes);

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

/* Gives back the stack idle connections do not use, as a server that keeps many would. */
static void *fiber_trimmer(void *arg)
{
    (void)arg;
    for (;;) {
        vms_sleep_ns(TRIM_IDLE_NS / 2);
        vms_fiber_trim(TRIM_IDLE_NS);
    }
    return NULL;
}

static void serve_fibers(int lfd)
{
    fcntl(lfd, F_SETFL, O_NONBLOCK);
    vms_fiber_spawn(NULL, fiber_acceptor, (void *)(intptr_t)lfd, &(vms_fiber_opts){ .detached = 1 });
    if (deep_bytes)
        vms_fiber_spawn(NULL, fiber_trimmer, NULL, &(vms_fiber_opts){ .detached = 1 });
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

    if (v >> 32 == FIBERS || v >> 32 == FIBERS1)
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
/* The Go peer, with GOMAXPROCS=1 or Go's default; its port read from its first line. */
static pid_t go_start(enum kind k, struct sockaddr_in *addr)
{
    int p[2], port = 0;
    char line[32];
    ssize_t n;
    pid_t pid;

    if (pipe2(p, O_CLOEXEC))
        return -1;
    if ((pid = fork()) == 0) {
        dup2(p[1], 1);
        if (k == GO1)
            setenv("GOMAXPROCS", "1", 1);
        else
            unsetenv("GOMAXPROCS");
        execl(go_bin, go_bin, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    n = pid > 0 ? read(p[0], line, sizeof line - 1) : -1;
    close(p[0]);
    if (n > 0) {
        line[n] = 0;
        port = atoi(line);
    }
    if (port <= 0) {
        fprintf(stderr, "vmstack bench echo: the Go server did not start\n");
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
        }
        return -1;
    }
    *addr = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                                  .sin_port = htons((uint16_t)port) };
    return pid;
}

static pid_t server_start(enum kind k, struct sockaddr_in *addr)
{
    int n = k == THREADS || k == FIBERS1 ? 1 : (int)sysconf(_SC_NPROCESSORS_ONLN), lfd[64];
    pid_t pid;

    if (k == GO1 || k == GO)
        return go_start(k, addr);

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
 * read in full (msg_size bytes) before the next request goes.  With lat,
 * each request's round trip (ns) goes there.  0, or -1.
 */
static int load_run(struct load *l, long reqs, double *lat)
{
    static char msg[MSG_MAX];
    static int got[IDLE_CONNS];
    static double sent_at[IDLE_CONNS];
    struct epoll_event ev[256];
    long sent = 0, done = 0;

    memset(msg, 'm', sizeof msg);
    for (int i = 0; i < l->n && sent < reqs; i++, sent++) {
        got[i] = 0;
        sent_at[i] = lat ? bench_now_ns() : 0;
        if (send(l->fds[i], msg, (size_t)msg_size, MSG_NOSIGNAL) != msg_size)
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
            char buf[MSG_MAX];
            ssize_t r = recv(l->fds[i], buf, (size_t)(msg_size - got[i]), 0);

            if (r < 0 && errno == EAGAIN)
                continue;
            if (r <= 0)
                return -1;
            if ((got[i] += (int)r) < msg_size)
                continue;
            got[i] = 0;
            if (lat)
                lat[done] = bench_now_ns() - sent_at[i];
            done++;
            if (sent < reqs) {
                sent++;
                sent_at[i] = lat ? bench_now_ns() : 0;
                if (send(l->fds[i], msg, (size_t)msg_size, MSG_NOSIGNAL) != msg_size)
                    return -1;
            }
        }
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
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

/* One size's figures, per kind. */
struct figures {
    double rps[NKINDS], cpu[NKINDS], spread[NKINDS], p50[NKINDS], p99[NKINDS];
};

/* Requests per second: interleaved rounds over the servers there are; latency of the last round. */
static int throughput(int conns, long reqs, int rounds, struct figures *fg)
{
    struct load l[NKINDS];
    double *wall_s = calloc((size_t)(NKINDS * rounds), sizeof *wall_s);
    double *cpu_s = calloc((size_t)(NKINDS * rounds), sizeof *cpu_s);
    double *lat = calloc((size_t)reqs, sizeof *lat);
    int rc = wall_s && cpu_s && lat ? 0 : -1;

    for (int k = 0; k < NKINDS; k++) {
        l[k] = (struct load){ .kind = (enum kind)k, .ep = -1, .pid = -1 };
        if (!have[k] || rc)
            continue;
        l[k].pid = server_start((enum kind)k, &l[k].addr);
        if (l[k].pid < 0 || load_open(&l[k], conns))
            rc = -1;
    }
    /* One warm-up round, then the measured ones, each starting with another server. */
    for (int r = -1; r < rounds && !rc; r++) {
        for (int j = 0; j < NKINDS && !rc; j++) {
            int k = (j + (r < 0 ? 0 : r)) % NKINDS;
            double t0, c0;

            if (!have[k])
                continue;
            t0 = bench_now_ns();
            c0 = server_cpu_ns(l[k].pid);
            rc = load_run(&l[k], reqs, r == rounds - 1 ? lat : NULL);
            if (r >= 0) {
                wall_s[k * rounds + r] = (bench_now_ns() - t0) / (double)reqs;
                cpu_s[k * rounds + r] = (server_cpu_ns(l[k].pid) - c0) / (double)reqs;
            }
            if (r == rounds - 1 && !rc) {
                qsort(lat, (size_t)reqs, sizeof *lat, cmp_double);
                fg->p50[k] = lat[reqs / 2];
                fg->p99[k] = lat[reqs * 99 / 100];
            }
        }
    }
    for (int k = 0; k < NKINDS && !rc; k++) {
        double med, sp, cmed, csp;
        char what[64];

        if (!have[k])
            continue;
        snprintf(what, sizeof what, "echo %s %d B", kind_name[k], msg_size);
        bench_summarize(what, &wall_s[k * rounds], rounds, &med, &sp);
        bench_summarize(what, &cpu_s[k * rounds], rounds, &cmed, &csp);
        fg->rps[k] = 1e9 / med;
        fg->cpu[k] = cmed;
        fg->spread[k] = sp;
    }
    for (int k = 0; k < NKINDS; k++) {
        load_close(&l[k]);
        server_stop(l[k].pid);
    }
    free(wall_s);
    free(cpu_s);
    free(lat);
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
 * connections open, measured settle_ms after the last one echoed; and in
 * *kstack what the kernel's stacks grew by per connection meanwhile
 * (machine-wide: other processes' threads add noise).
 */
static double idle_rss(enum kind k, int n, int settle_ms, double *kstack)
{
    struct load l = { .kind = k, .ep = -1 };
    long before, after = -1, ks0 = 0, ks1 = 0;

    if ((l.pid = server_start(k, &l.addr)) < 0)
        return -1;
    /* A few connections first, so that the first one's one-time costs are in the baseline. */
    if (load_open(&l, 16) == 0 && load_run(&l, 16, NULL) == 0) {
        load_close(&l);
        usleep(100000);
        before = server_rss(l.pid);
        ks0 = kernel_stacks();
        if (load_open(&l, n) == 0 && load_run(&l, n, NULL) == 0) {
            usleep((useconds_t)settle_ms * 1000);
            after = server_rss(l.pid);
            ks1 = kernel_stacks();
        }
        load_close(&l);
    }
    server_stop(l.pid);
    *kstack = (double)(ks1 - ks0) / n;
    return after < 0 ? -1 : (double)(after - before) / n;
}

/* ---- instructions per request, by callgrind ---- */

static void serve_end(int sig)
{
    (void)sig;
    _exit(0); /* callgrind writes its counts at exit */
}

/* 'vmstack bench --echo-serve KIND': the server of kind (fibers-1t or epoll) on fd 3, until SIGTERM. */
int bench_echo_serve(const char *kind)
{
    intptr_t k = !strcmp(kind, kind_name[EPOLL]) ? EPOLL : FIBERS1;

    signal(SIGTERM, serve_end);
    serve_thread((void *)(k << 32 | 3));
    return 1;
}

/* The instructions callgrind counted in the server of kind k while it answered reqs requests; -1 if it could not. */
static double callgrind_run(enum kind k, int conns, long reqs, const char *dir)
{
    char exe[PATH_MAX], out[PATH_MAX + 64], file[PATH_MAX + 16], line[256];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    struct load l = { .kind = k, .ep = -1 };
    double ir = -1;
    int lfd;
    FILE *f;

    l.addr = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (len <= 0 || (lfd = listen_on(&l.addr)) < 0)
        return -1;
    exe[len] = '\0';
    snprintf(file, sizeof file, "%s/cg.out", dir);
    snprintf(out, sizeof out, "--callgrind-out-file=%s", file);
    fflush(NULL);
    if ((l.pid = fork()) == 0) {
        char *argv[] = { "valgrind", "--tool=callgrind", "-q", out, exe, "bench", "--echo-serve",
                         (char *)kind_name[k], NULL };

        /* dup2 onto itself would keep close-on-exec. */
        if ((lfd == 3 ? fcntl(3, F_SETFD, 0) : dup2(lfd, 3) - 3) || !freopen("/dev/null", "w", stderr))
            _exit(126);
        execvp(argv[0], argv);
        _exit(127);
    }
    close(lfd);
    if (l.pid > 0 && load_open(&l, conns) == 0 && load_run(&l, reqs, NULL) == 0) {
        load_close(&l);
        kill(l.pid, SIGTERM);
        waitpid(l.pid, NULL, 0);
        for (f = fopen(file, "r"); f && fgets(line, sizeof line, f);)
            if (sscanf(line, "summary: %lf", &ir) == 1 || sscanf(line, "totals: %lf", &ir) == 1)
                break;
        if (f)
            fclose(f);
        unlink(file);
        return ir;
    }
    load_close(&l);
    server_stop(l.pid);
    return -1;
}

/*
 * User-space instructions per request of the server of kind k on one
 * thread: runs of reqs and 3 * reqs requests on fresh servers, the
 * difference divided by 2 * reqs, so start-up and accepting drop out.
 * -1 when valgrind is missing or a run failed.
 */
static double instructions_per_request(enum kind k, int conns, long reqs)
{
    char dir[] = "/tmp/vmstack-echo-cg.XXXXXX";
    double a, b;

    if (!mkdtemp(dir))
        return -1;
    a = callgrind_run(k, conns, reqs, dir);
    b = a < 0 ? -1 : callgrind_run(k, conns, 3 * reqs, dir);
    rmdir(dir);
    return a < 0 || b < 0 ? -1 : (b - a) / (2.0 * (double)reqs);
}

/* Builds the Go peer in a temporary directory (its own GOCACHE, no network); false, with a note, when it cannot. */
static bool go_build(void)
{
    char cache[128], cmd[1024];
    const char *src = VMS_BENCH_GO_SRC;

    if (access(src, R_OK)) {
        bench_note("go: skipped (its source %s is not there)", src);
        return false;
    }
    if (system("command -v go >/dev/null 2>&1")) {
        bench_note("go: skipped (no go command; apt-get install golang-go)");
        return false;
    }
    snprintf(go_dir, sizeof go_dir, "/tmp/vmstack-bench-go-XXXXXX");
    if (!mkdtemp(go_dir))
        return false;
    snprintf(cache, sizeof cache, "%s/cache", go_dir);
    snprintf(go_bin, sizeof go_bin, "%s/echo-go", go_dir);
    snprintf(cmd, sizeof cmd,
             "cd %s && GOCACHE=%s GOPATH=%s/gopath GOPROXY=off GOFLAGS=-mod=mod GO111MODULE=off GOTOOLCHAIN=local "
             "go build -o %s %s >%s/build.log 2>&1", go_dir, cache, go_dir, go_bin, src, go_dir);
    if (system(cmd)) {
        bench_note("go: skipped (go build failed: see %s/build.log)", go_dir);
        return false;
    }
    return true;
}

static void go_clean(void)
{
    char cmd[128];

    if (go_dir[0]) {
        snprintf(cmd, sizeof cmd, "rm -rf %s", go_dir);
        (void)!system(cmd);
    }
}

static void report_size(const struct figures *fg, int conns, long reqs)
{
    char key[32];

    bench_note("%d connections, one %d-byte request in flight on each, %ld requests per round:", conns, msg_size,
               reqs);
    for (int k = 0; k < NKINDS; k++) {
        char note[128];

        if (!have[k])
            continue;
        snprintf(note, sizeof note, "server CPU %.0f ns/req, p50 %.0f us, p99 %.0f us", fg->cpu[k],
                 fg->p50[k] / 1e3, fg->p99[k] / 1e3);
        bench_row(kind_name[k], fg->rps[k], "req/s", fg->spread[k], note);
        if (msg_size == 64)
            bench_plot_bar("echo", kind_name[k], fg->rps[k], fg->spread[k]);
    }
    snprintf(key, sizeof key, "msg_%d", msg_size);
    bench_json_open(key);
    bench_json_num("message_bytes", msg_size);
    bench_json_open("req_per_s");
    for (int k = 0; k < NKINDS; k++)
        if (have[k])
            bench_json_num(kind_name[k], fg->rps[k]);
    bench_json_close();
    bench_json_open("server_cpu_ns_per_req");
    for (int k = 0; k < NKINDS; k++)
        if (have[k])
            bench_json_num(kind_name[k], fg->cpu[k]);
    bench_json_close();
    bench_json_open("latency_p50_us");
    for (int k = 0; k < NKINDS; k++)
        if (have[k])
            bench_json_num(kind_name[k], fg->p50[k] / 1e3);
    bench_json_close();
    bench_json_open("latency_p99_us");
    for (int k = 0; k < NKINDS; k++)
        if (have[k])
            bench_json_num(kind_name[k], fg->p99[k] / 1e3);
    bench_json_close();
    bench_json_close();
}

int bench_echo(void)
{
    int quick = bench_quick();
    int conns = quick ? 100 : CONNS, idle = quick ? 1000 : IDLE_CONNS, rounds = quick ? 3 : ROUNDS;
    long reqs = quick ? REQS / 20 : REQS;
    struct figures f64 = { 0 }, f512 = { 0 };
    enum kind idle_kinds[] = { FIBERS, THREADS, EPOLL, GO };
    double rss[NKINDS] = { 0 }, kstack[NKINDS] = { 0 }, shallow, deep, ks, thread_cost, ir_fibers, ir_epoll;
    bool measured[NKINDS] = { false };
    int rc = 1;

    if (raise_fd_limit(idle + 64)) {
        fprintf(stderr, "vmstack bench echo: needs %d open files; raise the limit (ulimit -n)\n", idle + 64);
        return 1;
    }
    bench_title("echo: a TCP echo server on loopback: fibers, a thread per connection, an epoll loop, Go");
    have[GO1] = have[GO] = go_build();
    msg_size = 64;
    if (throughput(conns, reqs, rounds, &f64))
        goto out;
    msg_size = 512;
    if (throughput(conns, reqs, rounds, &f512))
        goto out;
    msg_size = 64;
    for (size_t i = 0; i < sizeof idle_kinds / sizeof *idle_kinds; i++)
        if (have[idle_kinds[i]]) {
            rss[idle_kinds[i]] = idle_rss(idle_kinds[i], idle, 0, &kstack[idle_kinds[i]]);
            if (rss[idle_kinds[i]] == -1)
                goto out;
            measured[idle_kinds[i]] = true;
        }
    deep_bytes = 4096;
    shallow = idle_rss(FIBERS1, idle, 3 * (int)(TRIM_IDLE_NS / 1000000), &ks);
    deep_bytes = 32768;
    deep = idle_rss(FIBERS1, idle, 3 * (int)(TRIM_IDLE_NS / 1000000), &ks);
    deep_bytes = 0;
    if (shallow < 0 || deep < 0)
        goto out;
    ir_fibers = instructions_per_request(FIBERS1, conns, reqs / 5);
    ir_epoll = ir_fibers < 0 ? -1 : instructions_per_request(EPOLL, conns, reqs / 5);
    /* A thread's memory includes its kernel stack, which no RSS shows. */
    thread_cost = rss[THREADS] + (kstack[THREADS] > 0 ? kstack[THREADS] : 16384);
    bench_json_open("echo");
    bench_json_num("connections", conns);
    msg_size = 64;
    report_size(&f64, conns, reqs);
    msg_size = 512;
    report_size(&f512, conns, reqs);
    bench_note("fibers: %.2fx the epoll loop (goal >= 1.0), %.2fx threads (goal >= 2); by server CPU: %.2fx, %.2fx "
               "(64 B)", f64.rps[FIBERS] / f64.rps[EPOLL], f64.rps[FIBERS] / f64.rps[THREADS],
               f64.cpu[EPOLL] / f64.cpu[FIBERS], f64.cpu[THREADS] / f64.cpu[FIBERS]);
    if (have[GO1])
        bench_note("fibers on one thread: %.2fx Go with GOMAXPROCS=1 (goal >= 1.25), by server CPU %.2fx; 512 B: "
                   "%.2fx", f64.rps[FIBERS1] / f64.rps[GO1], f64.cpu[GO1] / f64.cpu[FIBERS1],
                   f512.rps[FIBERS1] / f512.rps[GO1]);
    bench_note("resident bytes per idle connection, %d open: fibers %.0f, threads %.0f (+%.0f of kernel stack), "
               "epoll %.0f%s%.0f (fibers/threads %.2f, goal <= 0.25)", idle, rss[FIBERS], rss[THREADS], thread_cost -
               rss[THREADS], rss[EPOLL], have[GO] ? ", go " : "", have[GO] ? rss[GO] : 0.0, rss[FIBERS] / thread_cost);
    bench_note("trimmed idle fibers, %d connections: 32 KiB deep once %.0f bytes each, 4 KiB deep %.0f (ratio %.2f, "
               "goal <= 1.2)", idle, deep, shallow, deep / shallow);
    if (ir_epoll > 0)
        bench_note("user-space instructions per request (callgrind, one thread): fibers %.0f, epoll loop %.0f", ir_fibers,
                   ir_epoll);
    else
        bench_note("user-space instructions per request: not measured (valgrind is not installed, or a run failed)");
    for (int k = 0; k < NKINDS; k++)
        if (measured[k])
            bench_plot_bar("echo-rss", kind_name[k], rss[k], -1);
    bench_json_num("fiber_vs_epoll", f64.rps[FIBERS] / f64.rps[EPOLL]);
    bench_json_num("fiber_vs_threads", f64.rps[FIBERS] / f64.rps[THREADS]);
    if (have[GO1])
        bench_json_num("fiber_vs_go", f64.rps[FIBERS1] / f64.rps[GO1]);
    bench_json_num("rss_idle_ratio", rss[FIBERS] / thread_cost);
    bench_json_num("trim_deep_ratio", deep / shallow);
    bench_json_num("idle_connections", idle);
    bench_json_open("rss_per_idle_conn_bytes");
    for (int k = 0; k < NKINDS; k++)
        if (measured[k])
            bench_json_num(kind_name[k], rss[k]);
    bench_json_close();
    bench_json_open("kernel_stack_per_idle_conn_bytes");
    bench_json_num("threads", kstack[THREADS]);
    bench_json_close();
    if (ir_epoll > 0) {
        bench_json_open("instructions_per_request");
        bench_json_num(kind_name[FIBERS1], ir_fibers);
        bench_json_num(kind_name[EPOLL], ir_epoll);
        bench_json_close();
    }
    bench_json_open("trimmed_rss_per_idle_conn_bytes");
    bench_json_num("deep_4k", shallow);
    bench_json_num("deep_32k", deep);
    bench_json_close();
    bench_json_close();
    rc = 0;
out:
    go_clean();
    return rc;
}
