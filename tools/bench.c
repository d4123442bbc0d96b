/*
 * 'vmstack bench': runs benchmarks, each measuring its variants side by
 * side in one run, and prints a table for people or one JSON object.
 */
#include "bench.h"
#include "cmd.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct bench benches[] = {
    { "alloc", "one alloc+free of a 64 KiB stack written on one page: malloc, mmap+guard, vmstack", bench_alloc },
};
#define NBENCH (sizeof benches / sizeof benches[0])

static int json_mode;
static int json_depth;
static int json_first = 1;

double bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
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

void bench_compare(struct bench_variant *v, int n, int reps, long iters)
{
    double *t = calloc((size_t)n * (size_t)reps, sizeof *t);

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
    for (int i = 0; i < n; i++) {
        double *s = t + i * reps;
        qsort(s, (size_t)reps, sizeof *s, cmp_double);
        v[i].median_ns = percentile(s, reps, 0.5);
        v[i].spread = v[i].median_ns > 0 ? (percentile(s, reps, 0.9) - percentile(s, reps, 0.1)) / v[i].median_ns : 0;
        if (v[i].spread > 0.25)
            fprintf(stderr, "vmstack bench: warning: %s varies by %.0f%% between runs; the machine is noisy\n",
                    v[i].name, v[i].spread * 100);
    }
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

/* ---- JSON: printed as it is built, to stdout ---- */

static void json_key(const char *key)
{
    if (!json_mode)
        return;
    printf("%s\"%s\": ", json_first ? "" : ", ", key);
    json_first = 0;
}

void bench_json_open(const char *key)
{
    json_key(key);
    if (json_mode)
        fputc('{', stdout);
    json_depth++;
    json_first = 1;
}

void bench_json_close(void)
{
    if (json_mode)
        fputc('}', stdout);
    json_depth--;
    json_first = 0;
}

void bench_json_num(const char *key, double value)
{
    json_key(key);
    if (!json_mode)
        return;
    if (value == floor(value) && fabs(value) < 1e15)
        printf("%.0f", value);
    else
        printf("%.3f", value);
}

void bench_json_str(const char *key, const char *value)
{
    json_key(key);
    if (json_mode)
        printf("\"%s\"", value);
}

void bench_json_variants(const char *key, const struct bench_variant *v, int n)
{
    bench_json_open(key);
    for (int i = 0; i < n; i++)
        bench_json_num(v[i].name, v[i].median_ns);
    bench_json_close();
}

static void help(void)
{
    printf("usage: vmstack bench [NAME...] [--json]\n\n"
           "Runs benchmarks, each measuring vmstack side by side with its baselines in one run\n"
           "(interleaved repetitions; medians with their spread).  Without NAME, runs all.\n"
           "Figures are ratios to trust, not absolute times: the machine may be shared.\n\n"
           "  --json   print one JSON object with every benchmark's figures to stdout\n"
           "           (the table goes to stderr)\n\nBenchmarks:\n");
    for (size_t i = 0; i < NBENCH; i++)
        printf("  %-8s %s\n", benches[i].name, benches[i].summary);
}

static const struct bench *find(const char *name)
{
    for (size_t i = 0; i < NBENCH; i++)
        if (!strcmp(benches[i].name, name))
            return &benches[i];
    return NULL;
}

int cmd_bench(int argc, char **argv)
{
    const struct bench *chosen[64];
    size_t n = 0;
    int rc = CMD_OK;

    if (cmd_wants_help(argc, argv)) {
        help();
        return CMD_OK;
    }
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json"))
            json_mode = 1;
        else if (argv[i][0] == '-')
            return cmd_usage_error("bench", "unknown option '%s'", argv[i]);
        else if (!find(argv[i]))
            return cmd_usage_error("bench", "no benchmark named '%s'", argv[i]);
        else if (n < sizeof chosen / sizeof chosen[0])
            chosen[n++] = find(argv[i]);
    }
    if (n == 0)
        for (size_t i = 0; i < NBENCH; i++)
            chosen[n++] = &benches[i];
    if (json_mode)
        fputc('{', stdout);
    for (size_t i = 0; i < n; i++)
        if (chosen[i]->run())
            rc = CMD_FAIL;
    if (json_mode)
        puts("}");
    fflush(stdout);
    return rc;
}
