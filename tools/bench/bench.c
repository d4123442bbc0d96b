/* SPDX-License-Identifier: MIT */
/*
 * 'vmstack bench': runs benchmarks, each measuring its variants side by
 * side in one run, and prints a table for people or one JSON object.
 */
#include "bench.h"
#include "cmd.h"
#include "core/json.h"
#include "vmstack.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const struct bench benches[] = {
    { "alloc", "one alloc+free of a 64 KiB stack written on one page: malloc, mmap+guard, vmstack", bench_alloc },
    { "spawn", "spawn + run + join of a fiber on a 64 KiB stack: heap, mmap+guard, vmstack", bench_spawn },
    { "switch", "one switch in a ping-pong between two fibers: vmstack, swapcontext", bench_switch },
    { "thread", "pthread_create + join, 64 KiB stacks: glibc's own stacks, vmstack's", bench_thread },
    { "run", "a thread-heavy program, plain and under 'vmstack run': wall time, start to end", bench_run },
    { "trace", "a recursion-heavy program and a 36 MB deep one, plain and under 'vmstack run' and 'vmstack trace': "
               "CPU time",
      bench_trace },
    { "cache", "spawn + join of fibers in bursts of 64: per-CPU cache on, off, off with no pool; 2 threads; "
               "2 threads allocating bursts of 8..128 stacks",
      bench_cache },
    { "ring", "one turn in a ring of 2..4096 fibers touching 256 bytes each: stack colouring on and off", bench_ring },
    { "peers", "spawn + run + exit and switch: vmstack against Boost.Context (fixedsize, pooled, protected)",
      bench_peers },
    { "instructions", "callgrind instructions per operation: each path of a coroutine runtime through "
                      "vmstack against its peer (Boost.Fiber, Boost.Context, vms_stack_alloc)",
      bench_instructions },
    { "tlb", "switch cost against live fibers (1..100,000): guarded 4 KiB pages vs huge pages", bench_tlb },
    { "echo", "a TCP echo server, 1,000 connections, 64 and 512 B: fibers (a thread per CPU, one thread) vs a "
              "thread per connection vs an epoll loop vs Go; memory per idle connection (10,000), trimmed", bench_echo },
    /* Last: a million stacks leave more memory mapped than fork() can account for afterwards. */
    { "offload", "a file read whole in 64 KiB blocks: vms_pread from 64 fibers of one thread vs pread on 16 "
                 "threads, from the page cache and from the disk", bench_offload },
    { "scale", "1,000,000 live fibers: VMAs, RSS and time; the mprotect mode's VMA ceiling (one shot)",
      bench_scale },
};
#define NBENCH (sizeof benches / sizeof benches[0])

static int json_mode;

double bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

void *bench_body(void *arg)
{
    char buf[BENCH_TOUCH];

    memset(buf, (int)(intptr_t)arg, sizeof buf);
    BENCH_KEEP(buf);
    return NULL;
}

double bench_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

double bench_thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double percentile(const double *sorted, int n, double p)
{
    double pos = p * (n - 1);
    int lo = (int)floor(pos), hi = (int)ceil(pos);

    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

static long ops(const struct bench_variant *v, long iters)
{
    long m = v->div > 1 ? iters / v->div : iters;

    return m > 0 ? m : 1;
}

int bench_quick(void)
{
    const char *q = getenv("VMSTACK_BENCH_QUICK");

    return q && !strcmp(q, "1");
}

void bench_summarize(const char *name, double *s, int n, double *median, double *spread)
{
    qsort(s, (size_t)n, sizeof *s, cmp_double);
    *median = percentile(s, n, 0.5);
    *spread = *median > 0 ? (percentile(s, n, 0.9) - percentile(s, n, 0.1)) / *median : 0;
    if (*spread > 0.25)
        fprintf(stderr, "vmstack bench: warning: %s varies by %.0f%% between runs; the machine is noisy\n", name,
                *spread * 100);
}

void bench_compare(struct bench_variant *v, int n, int reps, long iters)
{
    double *t;

    if (bench_quick()) {
        reps = reps < 5 ? reps : 5;
        iters = iters / 10 + 1;
    }
    t = calloc((size_t)n * (size_t)reps, sizeof *t);
    if (!t) {
        fprintf(stderr, "vmstack bench: out of memory\n");
        exit(CMD_FAIL);
    }
    for (int i = 0; i < n; i++)
        v[i].run(v[i].arg, ops(&v[i], iters) / 10 + 1);
    /* Interleaved and rotated, so that drift and noise hit every variant alike. */
    for (int r = 0; r < reps; r++)
        for (int k = 0; k < n; k++) {
            int i = (k + r) % n;
            long m = ops(&v[i], iters);
            t[i * reps + r] = v[i].run(v[i].arg, m) / (double)m;
        }
    for (int i = 0; i < n; i++)
        bench_summarize(v[i].name, t + i * reps, reps, &v[i].median_ns, &v[i].spread);
    free(t);
}

/* ---- the human table goes to stdout, or to stderr when stdout is JSON ---- */

static FILE *table(void)
{
    return json_mode ? stderr : stdout;
}

void bench_title(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputc('\n', table());
    vfprintf(table(), fmt, ap);
    fputc('\n', table());
    va_end(ap);
}

void bench_row(const char *name, double value, const char *unit, double spread, const char *note)
{
    fprintf(table(), "  %-14s %12.1f %-4s", name, value, unit);
    if (spread >= 0)
        fprintf(table(), "  (spread %4.1f%%)", spread * 100);
    if (note && *note)
        fprintf(table(), "  %s", note);
    fputc('\n', table());
}

void bench_note(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("  ", table());
    vfprintf(table(), fmt, ap);
    fputc('\n', table());
    va_end(ap);
}

/* ---- JSON: one document on stdout, sent on as each benchmark ends ---- */

static struct vms_json json;
static char json_buf[4096];

void bench_json_open(const char *key)
{
    if (!json_mode)
        return;
    vms__json_key(&json, key);
    vms__json_obj(&json);
}

void bench_json_close(void)
{
    if (json_mode)
        vms__json_obj_end(&json);
}

void bench_json_num(const char *key, double value)
{
    if (!json_mode)
        return;
    vms__json_key(&json, key);
    /* Figures to a thousandth; NaN and infinity (a failed measurement) as null. */
    vms__json_double(&json, isfinite(value) && fabs(value) < 1e15 ? round(value * 1000) / 1000 : value);
}

void bench_json_str(const char *key, const char *value)
{
    if (!json_mode)
        return;
    vms__json_key(&json, key);
    vms__json_str(&json, value);
}

void bench_json_variants(const char *key, const struct bench_variant *v, int n)
{
    bench_json_open(key);
    for (int i = 0; i < n; i++)
        bench_json_num(v[i].name, v[i].median_ns);
    bench_json_close();
    bench_plot_variants(key, v, n);
}

static void help(void)
{
    printf("usage: vmstack bench [NAME...] [--json] [--plot DIR]\n\n"
           "Runs benchmarks, each measuring vmstack side by side with its baselines in one run\n"
           "(interleaved repetitions; medians with their spread).  Without NAME, runs all.\n"
           "Figures are ratios to trust, not absolute times: the machine may be shared.\n\n"
           "  --json      print one JSON object with every benchmark's figures to stdout\n"
           "              (the table goes to stderr)\n"
           "  --plot DIR  also draw PNG plots with gnuplot into DIR (created if needed):\n"
           "              vmstack-{spawn,thread,tlb,scale,alloc,switch,echo,echo-rss,ring,burst,peers}.png,\n"
           "              their .dat files\n"
           "              and the script vmstack-plots.gp; nothing else in DIR is touched\n\n"
           "VMSTACK_BENCH_QUICK=1 runs a reduced version (fewer rounds, smaller sizes) for tests.\n\n"
           "Benchmarks:\n");
    for (size_t i = 0; i < NBENCH; i++)
        printf("  %-12s %s\n", benches[i].name, benches[i].summary);
}

static const struct bench *find(const char *name)
{
    for (size_t i = 0; i < NBENCH; i++)
        if (!strcmp(benches[i].name, name))
            return &benches[i];
    return NULL;
}

enum { OPT_JSON = 256, OPT_PLOT };

static const struct option bench_options[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"plot", required_argument, NULL, OPT_PLOT},
    {0},
};

static int on_option(void *ctx, int opt, const char *v)
{
    const char **plot_dir = ctx;

    if (opt == OPT_JSON)
        json_mode = 1;
    else if (!*v)
        return cmd_usage_error("bench", "--plot needs a directory");
    else
        *plot_dir = v;
    return 0;
}

/*
 * A run of several benchmarks takes minutes: on a terminal, a line on
 * stderr before each says which one runs and how long the run has taken.
 * Not into a pipe or a file, which get the tables alone.
 */
static void progress(size_t i, size_t n, const char *name, const struct timespec *start)
{
    struct timespec now;
    long s;

    if (n < 2 || !isatty(2))
        return;
    clock_gettime(CLOCK_MONOTONIC, &now);
    s = (long)(now.tv_sec - start->tv_sec);
    fprintf(stderr, "vmstack bench: %s (%zu of %zu, %ld:%02ld so far)\n", name, i + 1, n, s / 60, s % 60);
}

int cmd_bench(int argc, char **argv)
{
    const struct bench *chosen[64];
    const char *plot_dir = NULL;
    const struct cmd_parser parser = { "bench", bench_options, false, on_option, &plot_dir };
    struct timespec start;
    size_t n = 0;
    int first, rc;

    /* Internal: a child process of a benchmark (see bench_child_start). */
    if (argc == 3 && !strcmp(argv[1], "--child"))
        return bench_child_main(argv[2]);
    if (argc == 2 && !strcmp(argv[1], "--callgrind-child"))
        return bench_callgrind_child();
    if (argc == 3 && !strcmp(argv[1], "--echo-serve"))
        return bench_echo_serve(argv[2]);
    if ((rc = cmd_options(&parser, argc, argv, &first)) == CMD_HELP) {
        help();
        return CMD_OK;
    }
    if (rc)
        return rc;
    for (int i = first; i < argc; i++) {
        if (!find(argv[i]))
            return cmd_usage_error("bench", "no benchmark named '%s'", argv[i]);
        if (n < sizeof chosen / sizeof chosen[0])
            chosen[n++] = find(argv[i]);
    }
    /* Before minutes of measuring, not after. */
    if (plot_dir && bench_plot_ready())
        return CMD_FAIL;
    if (n == 0)
        for (size_t i = 0; i < NBENCH; i++)
            chosen[n++] = &benches[i];
    vms__json_init(&json, json_buf, sizeof json_buf, vms__json_sink_file, stdout, false);
    if (json_mode)
        vms__json_obj(&json);
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (size_t i = 0; i < n; i++) {
        progress(i, n, chosen[i]->name, &start);
        /* Nothing buffered may be copied into a benchmark's child processes. */
        vms__json_flush(&json);
        fflush(stdout);
        if (chosen[i]->run())
            rc = CMD_FAIL;
    }
    if (json_mode) {
        vms__json_obj_end(&json);
        if (vms__json_end(&json) || putchar('\n') == EOF) {
            fprintf(stderr, "vmstack bench: cannot write the JSON output\n");
            rc = CMD_FAIL;
        }
    }
    fflush(stdout);
    if (plot_dir && bench_plot_write(plot_dir))
        rc = CMD_FAIL;
    return rc;
}

_Noreturn void bench_fail(const char *what)
{
    int e = errno;

    fprintf(stderr, "vmstack bench: %s failed (vmstack: %s; errno: %s)\n", what, vms_last_error(), strerror(e));
    fflush(NULL);
    abort();
}
