/* SPDX-License-Identifier: MIT */
/*
 * Overflows in settings a program makes hostile for its report or its
 * kill, which must neither hang, nor land in the program's data, nor stop
 * the policy:
 *   full_pipe     stderr is a full pipe nobody reads: the report waits a
 *                 bounded time, is dropped, and the fiber is killed
 *   full_pipe_thread  the same for a thread: the process dies by SIGSEGV
 *   fd2_file      fd 2 reopened to a data file of the program's: no report
 *                 in it (one to the log file fd 2 was at start, while it
 *                 still is), the fibers killed
 *   fork          fibers overflow while another thread forks in a loop:
 *                 every one killed, none aborted
 *   altstack      a signal handler, on the thread's alternate signal stack,
 *                 overflows it: reported as that, with the thread's tid
 *   nofile        the program has used up its descriptors (RLIMIT_NOFILE):
 *                 the report names its functions all the same
 *   nofile_hard   the same with the soft limit at the hard one, which the
 *                 program cannot raise
 */
#include "overflow.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define HANG_SECONDS 30 /* a child still running then has hung: SIGALRM ends it */
#define TASK(name) \
    "^vmstack: fiber '" name "' \\(id " DEC "\\) on thread '[^']*' \\(tid " DEC "\\), start routine deep\\+0x0/" HEX " \\[test_overflow_hostile\\]$"

static void *deep(void *arg)
{
    volatile long r = recurse((long)arg);

    return (void *)r;
}

static vms_fiber spawn(const char *name)
{
    vms_fiber_opts o = {.name = name};
    vms_fiber f;

    CHECK_EQ(vms_fiber_spawn(&f, deep, (void *)(1L << 40), &o), 0);
    return f;
}

/* Spawns a fiber that overflows, runs it; its end. */
static int overflow_fiber(const char *name)
{
    vms_fiber f = spawn(name);
    vms_fiber_status st;

    if (vms_run() || vms_fiber_join(f, &st))
        return -1;
    return st.end;
}

static long ms_since(const struct timespec *t0)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t0->tv_sec) * 1000 + (now.tv_nsec - t0->tv_nsec) / 1000000;
}

/* ---- full_pipe ---- */

/*
 * A handler that hangs has every signal blocked, SIGALRM too: a process
 * of its own kills this one with SIGKILL after HANG_SECONDS, and ends with
 * it (PR_SET_PDEATHSIG).
 */
static void watchdog(void)
{
    pid_t me = getpid(), pid = fork();

    CHECK(pid >= 0);
    if (pid > 0)
        return;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() == me) {
        sleep(HANG_SECONDS);
        kill(me, SIGKILL);
    }
    _exit(0);
}

/* Makes fd 2 a pipe that is full and never read; returns the test's own stderr, kept. */
static int full_stderr(void)
{
    static char filler[4096];
    int p[2], kept = dup(2);

    CHECK(kept >= 0 && pipe(p) == 0);
    CHECK(fcntl(p[1], F_SETFL, O_NONBLOCK) == 0);
    memset(filler, 'x', sizeof filler);
    while (write(p[1], filler, sizeof filler) > 0)
        ;
    CHECK(fcntl(p[1], F_SETFL, 0) == 0); /* blocking, as stderr is */
    CHECK(dup2(p[1], 2) == 2);
    close(p[1]);
    return kept; /* p[0] stays open, unread */
}

static void full_pipe_child(void *unused)
{
    struct timespec t0;
    int kept, end;

    (void)unused;
    watchdog();
    kept = full_stderr();
    CHECK_EQ(vms_fault_install(), 0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    end = overflow_fiber("deep");
    dprintf(kept, "test: fiber end %d (killed: %d), went on after %ld ms\n", end, VMS_FIBER_KILLED_OVERFLOW,
            ms_since(&t0));
}

static void full_pipe(void)
{
    struct child c;
    long end, killed, ms;
    const char *s;

    child_run(&c, full_pipe_child, NULL);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "exit 0, not a hang (SIGKILL)");
    CHECK_TEXT((s = strstr(c.text, "test: fiber end ")), c.text, "the program went on");
    CHECK(sscanf(s, "test: fiber end %ld (killed: %ld), went on after %ld ms", &end, &killed, &ms) == 3);
    CHECK_TEXT(end == killed, c.text, "the fiber killed");
    /* The report waited about 2 s for room, not for ever. */
    CHECK_TEXT(ms >= 1500 && ms < 10000, c.text, "a bounded wait");
    free(c.text);
}

static void *deep_thread(void *arg)
{
    return deep(arg);
}

static void full_pipe_thread_child(void *unused)
{
    pthread_t t;

    (void)unused;
    watchdog();
    full_stderr();
    CHECK_EQ(vms_thread_create(&t, thread_attr(), deep_thread, (void *)(1L << 40), "deep"), 0);
    vms_thread_join(t, NULL);
}

static void full_pipe_thread(void)
{
    struct child c;
    struct timespec t0;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    child_run(&c, full_pipe_thread_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV, not a hang (SIGKILL)");
    CHECK_TEXT(ms_since(&t0) < 15000, c.text, "a bounded wait");
    free(c.text);
}

/* ---- fd2_file ---- */

static int temp_file(char *path)
{
    int fd;

    strcpy(path, "/tmp/vms_hostile_XXXXXX");
    CHECK((fd = mkstemp(path)) >= 0);
    unlink(path);
    return fd;
}

/* The file's bytes, to the test's stderr as one line: "test: NAME: TEXT" with newlines as '|'. */
static void show_file(int kept, const char *name, int fd)
{
    char text[16384];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);

    text[n > 0 ? n : 0] = 0;
    for (char *p = text; *p; p++)
        if (*p == '\n')
            *p = '|';
    dprintf(kept, "test: %s: %s\n", name, text);
}

static void fd2_file_child(void *unused)
{
    char lp[64], dp[64];
    int kept = dup(2), log = temp_file(lp), data = temp_file(dp), first, second;

    (void)unused;
    alarm(HANG_SECONDS);
    /* The program was started with stderr to a log file ... */
    CHECK(dup2(log, 2) == 2);
    CHECK_EQ(vms_fault_install(), 0);
    first = overflow_fiber("first");
    /* ... and then made fd 2 a data file of its own. */
    CHECK(dup2(data, 2) == 2);
    CHECK(write(2, "data\n", 5) == 5);
    second = overflow_fiber("second");
    show_file(kept, "log", log);
    show_file(kept, "data", data);
    dprintf(kept, "test: ends %d %d\n", first, second);
}

static void fd2_file(void)
{
    struct child c;
    char line[64];

    child_run(&c, fd2_file_child, NULL);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "exit 0");
    snprintf(line, sizeof line, "test: ends %d %d\n", VMS_FIBER_KILLED_OVERFLOW, VMS_FIBER_KILLED_OVERFLOW);
    CHECK_TEXT(strstr(c.text, line), c.text, "both fibers killed");
    CHECK_TEXT(count_lines(c.text, "^test: data: data\\|$") == 1, c.text, "nothing but the program's data in it");
    CHECK_TEXT(count_lines(c.text, "^test: log: vmstack: BUG: stack guard page was hit at .*"
                                   "\\|vmstack: killed fiber 'first'\\|$") == 1,
               c.text, "the first report in the log file fd 2 was at start, still");
    CHECK_TEXT(!strstr(c.text, "'second'"), c.text, "the second report nowhere");
    free(c.text);
}

/* ---- fork ---- */

#define FORK_OVERFLOWS 40

static _Atomic bool forks_stop;
static _Atomic long forks;

static void *forker(void *unused)
{
    (void)unused;
    while (!atomic_load(&forks_stop)) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        CHECK(pid > 0 && waitpid(pid, NULL, 0) == pid);
        atomic_fetch_add(&forks, 1);
    }
    return NULL;
}

static void fork_child(void *unused)
{
    pthread_t t;
    int killed = 0;

    (void)unused;
    alarm(HANG_SECONDS * 4);
    CHECK_EQ(vms_fault_install(), 0);
    CHECK_EQ(pthread_create(&t, NULL, forker, NULL), 0);
    while (atomic_load(&forks) == 0)
        sched_yield();
    for (int i = 0; i < FORK_OVERFLOWS; i++)
        killed += overflow_fiber("deep") == VMS_FIBER_KILLED_OVERFLOW;
    atomic_store(&forks_stop, true);
    pthread_join(t, NULL);
    fprintf(stderr, "test: %d of %d killed, %ld forks\n", killed, FORK_OVERFLOWS, atomic_load(&forks));
}

static void fork_(void)
{
    struct child c;
    char line[64];

    child_run(&c, fork_child, NULL);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "exit 0: no abort");
    snprintf(line, sizeof line, "test: %d of %d killed, ", FORK_OVERFLOWS, FORK_OVERFLOWS);
    CHECK_TEXT(strstr(c.text, line), c.text, "every fiber killed");
    CHECK_TEXT(count_lines(c.text, TASK("deep")) == FORK_OVERFLOWS, c.text, "every report");
    CHECK_TEXT(count_lines(c.text, "^vmstack: killed fiber 'deep'$") == FORK_OVERFLOWS, c.text, "every kill");
    CHECK_TEXT(!strstr(c.text, "forking"), c.text, "no report without its trace");
    free(c.text);
}

/* ---- altstack ---- */

/* A signal handler that recurses until the alternate stack it runs on ends. */
static void deep_handler(int sig)
{
    (void)sig;
    recurse(1L << 40);
}

static void *raising_fiber(void *unused)
{
    (void)unused;
    fprintf(stderr, "test: tid %ld\n", (long)syscall(SYS_gettid));
    raise(SIGUSR1);
    return NULL;
}

static void altstack_child(void *unused)
{
    struct sigaction sa = {.sa_handler = deep_handler, .sa_flags = SA_ONSTACK};
    /* With its colour room (fiber.c), a fiber of this size shares the alternate stacks' region. */
    vms_fiber_opts o = {.name = "raiser", .stack_size = (size_t)60 << 10};
    vms_fiber f;

    (void)unused;
    alarm(HANG_SECONDS);
    CHECK_EQ(vms_fault_install(), 0);
    sigemptyset(&sa.sa_mask);
    CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
    /*
     * Fresh slots come upwards with the per-CPU caches off (VMSTACK_CACHE=0,
     * set by the test): the fiber's stack lies right above the thread's
     * alternate stack, whose overflow must not pass for the fiber's.
     */
    CHECK_EQ(vms_fiber_spawn(&f, raising_fiber, NULL, &o), 0);
    vms_run();
}

static void altstack(void)
{
    struct child c;
    char re[256];
    long tid;
    const char *s;

    child_run(&c, altstack_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    CHECK_TEXT((s = strstr(c.text, "test: tid ")) && sscanf(s, "test: tid %ld", &tid) == 1, c.text, "the tid");
    snprintf(re, sizeof re, "^vmstack: the alternate signal stack of tid %ld$", tid);
    check_report(c.text, 0, re, "^vmstack:  \\[<" HEX ">\\] recurse\\+" HEX "/" HEX " \\[test_overflow_hostile\\]" LINE "$",
                 "^vmstack: aborting: a signal handler overflowed the thread's alternate signal stack, which cannot "
                 "be ended alone$");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG: .*") == 1, c.text, "one report");
    CHECK_TEXT(!strstr(c.text, "jumped"), c.text, "no jump of the fiber's");
    free(c.text);
}

/* ---- nofile ---- */

/* hard (non-NULL): the soft limit at the hard one, else below it (the hard one usually lies far above). */
static void nofile_child(void *hard)
{
    struct rlimit lim;
    int end;

    alarm(HANG_SECONDS);
    CHECK_EQ(vms_fault_install(), 0);
    CHECK(getrlimit(RLIMIT_NOFILE, &lim) == 0);
    lim.rlim_cur = 64;
    if (hard)
        lim.rlim_max = 64;
    CHECK(lim.rlim_max >= lim.rlim_cur && setrlimit(RLIMIT_NOFILE, &lim) == 0);
    while (open("/dev/null", O_RDONLY) >= 0)
        ;
    CHECK_EQ(errno, EMFILE);
    end = overflow_fiber("deep");
    CHECK(getrlimit(RLIMIT_NOFILE, &lim) == 0);
    fprintf(stderr, "test: fiber end %d, soft limit %ld\n", end, (long)lim.rlim_cur);
}

static void nofile_run(bool hard)
{
    struct child c;
    char line[64];

    child_run(&c, nofile_child, (void *)(uintptr_t)hard);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "exit 0");
    check_report(c.text, 0, TASK("deep"), "^vmstack:  \\[<" HEX ">\\] recurse\\+" HEX "/" HEX " \\[test_overflow_hostile\\]" LINE "$",
                 "^vmstack: killed fiber 'deep'$");
    CHECK_TEXT(!strstr(c.text, "??"), c.text, "every frame named");
    snprintf(line, sizeof line, "test: fiber end %d, soft limit 64\n", VMS_FIBER_KILLED_OVERFLOW);
    CHECK_TEXT(strstr(c.text, line), c.text, "the fiber killed, the limit as it was");
    free(c.text);
}

static void nofile(void)
{
    nofile_run(false);
}

static void nofile_hard(void)
{
    nofile_run(true);
}

int main(int argc, char **argv)
{
    static const struct scenario list[] = {
        {"full_pipe", full_pipe}, {"full_pipe_thread", full_pipe_thread}, {"fd2_file", fd2_file},
        {"fork", fork_}, {"altstack", altstack}, {"nofile", nofile},
        {"nofile_hard", nofile_hard}, {NULL, NULL},
    };

    return run_scenario(argc, argv, list);
}
