/* SPDX-License-Identifier: MIT */
/*
 * bench trace: what 'vmstack trace' costs a recursion-heavy program, start
 * to end.  The program is this very binary ('vmstack bench --child
 * traceload', the worker below): it descends DEPTH levels of recursion
 * (about 250 KiB of stack, some 60 tripwire faults on the first descent)
 * and does so ROUNDS times.  Three variants fork and exec it: plainly,
 * under 'vmstack run' and under 'vmstack trace', and measure the whole
 * process, start-up and report included; rounds interleave, so machine
 * noise hits all alike.  The figure is the process's CPU time (user +
 * system, from wait4): on a shared machine wall time varies by tens of
 * percent between runs, CPU time by a few.  trace_overhead is trace /
 * plain, the user's cost; trace / run is what tracing adds to run.
 *
 * A one-second program hides what tracing costs once per process (loading
 * the library, the report at exit): trace_startup_overhead is the same
 * ratio for the program doing no rounds at all, which exits at once.
 *
 * trace_deep_overhead is the same ratio for a thread with a 64 MiB stack
 * that recurses 36 MB deep, three times ('--child tracedeep'): what the
 * tripwires cost as a stack grows deep (their number grows with the log
 * of the depth), with the chain of 34,000 frames at the end.
 */
#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define DEPTH 4000
#define ROUNDS 20000 /* about a second of recursion */

/* ---- the program: the child's worker ---- */

static __attribute__((noinline)) unsigned long descend(int n, unsigned long x)
{
    volatile unsigned long frame[6];

    for (int i = 0; i < 6; i++)
        frame[i] = x + (unsigned long)i;
    x = x * 6364136223846793005ul + frame[n % 6];
    /* Used after the call: no tail call, every level keeps its frame. */
    return n ? descend(n - 1, x) ^ frame[3] : x;
}

double bench_trace_worker(long rounds)
{
    double t0 = bench_now_ns();
    unsigned long x = 1;

    for (long r = 0; r < rounds; r++)
        x += descend(DEPTH, x + (unsigned long)r);
    BENCH_KEEP(x);
    return bench_now_ns() - t0;
}

#define DEEP_STACK ((size_t)64 << 20)
#define DEEP_BYTES 36000000L
#define DEEP_FRAME 1040 /* bytes a level of deep() takes: its 1000-byte array, the return address and alignment */

static __attribute__((noinline)) long deep(long n)
{
    volatile char buf[1000];

    buf[0] = (char)n;
    /* Used after the call: no tail call. */
    return n ? deep(n - 1) + buf[0] : buf[0];
}

static void *deep_thread(void *arg)
{
    long descents = *(long *)arg, x = 0;

    for (long i = 0; i < descents; i++)
        x += deep(DEEP_BYTES / DEEP_FRAME);
    BENCH_KEEP(x);
    return NULL;
}

double bench_trace_deep_worker(long descents)
{
    double t0 = bench_now_ns();
    pthread_attr_t a;
    pthread_t t;

    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, DEEP_STACK);
    if (pthread_create(&t, &a, deep_thread, &descents) || pthread_join(t, NULL))
        return -1;
    pthread_attr_destroy(&a);
    return bench_now_ns() - t0;
}

/* ---- the parent: one process per operation ---- */

static char self[PATH_MAX];

/* Runs argv with "ROUNDS\n" on stdin and no output; its CPU time in ns, or -1. */
static double run_once(char *const argv[], long rounds)
{
    double cpu;

    if (bench_exec_timed(self, argv, rounds, &cpu) < 0)
        return -1;
    return cpu;
}

static long rounds(void)
{
    return bench_quick() ? ROUNDS / 10 : ROUNDS;
}

/* One variant of one program: its command, the number its worker is given, and what it is. */
struct job {
    char **argv;
    long n;
    const char *what;
};

static double run_job(void *arg, long iters)
{
    const struct job *j = arg;
    double total = 0;

    for (long i = 0; i < iters; i++) {
        double ns = run_once(j->argv, j->n);
        if (ns < 0) {
            fprintf(stderr, "vmstack bench trace: %s failed (%s %s)\n", j->what, self, j->argv[1]);
            exit(1);
        }
        total += ns;
    }
    return total;
}

/*
 * One comparison of plain, 'vmstack run' and 'vmstack trace': how many runs,
 * what runs, where the ratio is taken, its goal and its JSON key.
 */
struct trio {
    int runs;
    const char *what, *at, *goal, *key;
};

static void compare(struct bench_variant *v, const struct trio *t)
{
    double r;

    bench_compare(v, 3, bench_quick() ? 3 : t->runs, 1);
    r = v[2].median_ns / v[0].median_ns;
    bench_title("trace: %s, plain, under 'vmstack run' and 'vmstack trace' (ms of CPU, median)", t->what);
    for (int i = 0; i < 3; i++)
        bench_row(v[i].name, v[i].median_ns / 1e6, "ms", v[i].spread, "");
    bench_note("vmstack trace / plain = %.3fx%s (goal <= %s); trace / run = %.3fx", r, t->at, t->goal,
               v[2].median_ns / v[1].median_ns);
    bench_json_num(t->key, r);
}

int bench_trace(void)
{
    static char *plain[] = {"vmstack", "bench", "--child", "traceload", NULL};
    static char *run[] = {"vmstack", "run", "--", self, "bench", "--child", "traceload", NULL};
    static char *trace[] = {"vmstack", "trace", "--", self, "bench", "--child", "traceload", NULL};
    static char *dplain[] = {"vmstack", "bench", "--child", "tracedeep", NULL};
    static char *drun[] = {"vmstack", "run", "--", self, "bench", "--child", "tracedeep", NULL};
    static char *dtrace[] = {"vmstack", "trace", "--", self, "bench", "--child", "tracedeep", NULL};
    const char *load = "the recursion-heavy program", *once = "the program exiting at once";
    const char *deep = "the deep recursion";
    /* Exiting at once: what a process pays for being traced, start-up and report. */
    struct job jobs[] = {
        {plain, rounds(), load}, {run, rounds(), load}, {trace, rounds(), load},
        {plain, 0, once},        {run, 0, once},        {trace, 0, once},
        {dplain, 3, deep},       {drun, 3, deep},       {dtrace, 3, deep},
    };
    struct bench_variant v[9]; /* the recursion-heavy program, at once, deep: three each */
    char load_title[64];
    const struct trio trios[] = {
        {11, load_title, "", "1.03", "trace_overhead"},
        {21, "the same program exiting at once", " at start-up and exit", "1.5", "trace_startup_overhead"},
        {11, "a thread recursing 36 MB deep three times in a 64 MiB stack", " at 36 MB deep", "2",
         "trace_deep_overhead"},
    };
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

#if defined(VMS_ASAN) || defined(VMS_TSAN)
    /* This binary is sanitized: the (never sanitized) preload library cannot load into it. */
    bench_title("trace: skipped in a sanitizer build");
    return 0;
#endif
    if (n <= 0) {
        fprintf(stderr, "vmstack bench trace: cannot find this binary: %s\n", strerror(errno));
        return 1;
    }
    self[n] = '\0';
    for (int i = 0; i < 9; i++)
        v[i] = (struct bench_variant){.name = i % 3 == 0 ? "plain" : i % 3 == 1 ? "vmstack_run" : "vmstack_trace",
                                      .run = run_job, .arg = &jobs[i]};
    if (run_once(trace, rounds()) < 0) {
        fprintf(stderr, "vmstack bench trace: 'vmstack trace' of the recursion-heavy program failed\n");
        return 1;
    }
    snprintf(load_title, sizeof load_title, "%d rounds of a %d-deep recursion",
             bench_quick() ? ROUNDS / 10 : ROUNDS, DEPTH);
    for (int i = 0; i < 3; i++)
        compare(v + 3 * i, &trios[i]);
    return 0;
}
