/* SPDX-License-Identifier: MIT */
/*
 * bench run: what 'vmstack run' costs a thread-heavy program, start to end.
 * The program is this very binary ('vmstack bench --child runload', the
 * worker below): it creates and joins THREADS threads, BATCH at a time,
 * each using some stack and doing a little work.  Both variants fork and
 * exec it, plainly or as 'vmstack run -- vmstack bench --child runload',
 * and time the whole process, start-up and usage table included; rounds
 * interleave, so machine noise hits both alike.
 */
#include <stdint.h>
#include <stdio.h>

#include "bench.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4000    /* 1000 in quick mode */
#define BATCH 4
#define FRAMES 8       /* 8 frames of 1 KiB of stack per thread */
#define WORK 40000     /* arithmetic per thread: about 50 us */

/* ---- the program: the child's worker ---- */

static __attribute__((noinline)) unsigned long frames(int n, unsigned long x)
{
    volatile char frame[1024];

    memset((char *)frame, (int)x, sizeof frame);
    return n > 1 ? frames(n - 1, x * 31 + frame[7]) : x;
}

static void *thread_body(void *arg)
{
    unsigned long x = frames(FRAMES, (unsigned long)(uintptr_t)arg);

    for (int i = 0; i < WORK; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    return (void *)(uintptr_t)x;
}

double bench_run_worker(long threads)
{
    double t0 = bench_now_ns();
    pthread_t t[BATCH];

    for (long i = 0; i < threads; i += BATCH) {
        for (int k = 0; k < BATCH; k++)
            if (pthread_create(&t[k], NULL, thread_body, (void *)(uintptr_t)(i + k)))
                return -1;
        for (int k = 0; k < BATCH; k++)
            pthread_join(t[k], NULL);
    }
    return bench_now_ns() - t0;
}

/* ---- the parent: one process per operation ---- */

#define MAX_REPS 16

static char self[PATH_MAX];
static int nthreads = THREADS;

/*
 * A variant: its command, and the CPU time (user + system, all threads) of
 * each of its runs, a second figure that a busy machine disturbs less than
 * wall time.
 */
struct run_variant {
    char **argv;
    double cpu_ns[MAX_REPS];
    int runs;
};

/* Runs argv with "nthreads\n" on stdin and no output; its wall time in ns (and *cpu), or -1. */
static double run_once(char *const argv[], double *cpu)
{
    return bench_exec_timed(self, argv, nthreads, cpu);
}

static double run_variant(void *arg, long iters)
{
    struct run_variant *v = arg;
    double total = 0, cpu = 0;

    for (long i = 0; i < iters; i++) {
        double ns = run_once(v->argv, &cpu);
        if (ns < 0) {
            fprintf(stderr, "vmstack bench run: the thread-heavy program failed (%s %s)\n", self, v->argv[1]);
            exit(1);
        }
        total += ns;
    }
    /* Sample 0 is bench_compare's warm-up round, left out of the median below. */
    v->cpu_ns[v->runs] = cpu;
    v->runs += v->runs + 1 < MAX_REPS;
    return total;
}

int bench_run(void)
{
    static char *plain[] = { "vmstack", "bench", "--child", "runload", NULL };
    static char *under[] = { "vmstack", "run", "--", self, "bench", "--child", "runload", NULL };
    static struct run_variant rv[2] = { { .argv = plain }, { .argv = under } };
    struct bench_variant v[] = {
        { .name = "plain", .run = run_variant, .arg = &rv[0] },
        { .name = "vmstack_run", .run = run_variant, .arg = &rv[1] },
    };
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    double r, cpu[2], spread[2], warm;

#if defined(VMS_ASAN) || defined(VMS_TSAN)
    /* This binary is sanitized: the (never sanitized) preload library cannot load into it. */
    bench_title("run: skipped in a sanitizer build");
    return 0;
#endif
    if (n <= 0) {
        fprintf(stderr, "vmstack bench run: cannot find this binary: %s\n", strerror(errno));
        return 1;
    }
    self[n] = '\0';
    if (bench_quick())
        nthreads = THREADS / 4;
    if (run_once(under, &warm) < 0) {
        fprintf(stderr, "vmstack bench run: 'vmstack run' of the thread-heavy program failed\n");
        return 1;
    }
    bench_compare(v, 2, bench_quick() ? 3 : 11, 1);
    r = v[1].median_ns / v[0].median_ns;
    for (int i = 0; i < 2; i++) {
        int k = rv[i].runs > 1 ? 1 : 0; /* without the warm-up */
        bench_summarize(v[i].name, rv[i].cpu_ns + k, rv[i].runs - k, &cpu[i], &spread[i]);
    }
    bench_title("run: a program making %d threads (%d at a time), plain and under 'vmstack run' (ms, median)",
                nthreads, BATCH);
    for (int i = 0; i < 2; i++)
        bench_row(v[i].name, v[i].median_ns / 1e6, "ms", v[i].spread, "");
    bench_note("vmstack run / plain = %.3fx (goal <= 1.05): %+.1f us per thread, start-up and table included", r,
               (v[1].median_ns - v[0].median_ns) / 1e3 / nthreads);
    bench_note("CPU time (all threads): %.1f ms plain, %.1f ms under vmstack run: %.3fx, %+.1f us per thread",
               cpu[0] / 1e6, cpu[1] / 1e6, cpu[1] / cpu[0], (cpu[1] - cpu[0]) / 1e3 / nthreads);
    bench_json_num("run_overhead", r);
    bench_json_num("run_overhead_cpu", cpu[1] / cpu[0]);
    return 0;
}
