/*
 * The benchmark framework of 'vmstack bench'.  A benchmark measures its
 * variants side by side in one run (interleaved repetitions, so machine
 * noise hits all of them alike), reports medians with their spread, and
 * adds its figures to one JSON object.
 */
#ifndef VMS_BENCH_H
#define VMS_BENCH_H

#include <stddef.h>

/* One thing to time: run(arg, iters) does iters operations and returns the elapsed nanoseconds. */
struct bench_variant {
    const char *name;                         /* JSON key, e.g. "malloc" */
    double (*run)(void *arg, long iters);
    void *arg;
    double median_ns;                         /* per operation, filled by bench_compare */
    double spread;                            /* (p90 - p10) / median, filled by bench_compare */
    long div;                                 /* slow variant: runs iters / div operations (0 = 1) */
};

/*
 * Measures n variants: reps rounds, each timing every variant once for iters
 * operations (order rotated each round), after one untimed warm-up round.
 * Fills median_ns and spread, and prints a warning to stderr for a spread
 * above 25%.
 */
void bench_compare(struct bench_variant *v, int n, int reps, long iters);

/* Monotonic clock in nanoseconds. */
double bench_now_ns(void);

/* Keeps the compiler from optimising away a value. */
#define BENCH_KEEP(x) __asm__ volatile("" : : "g"(x) : "memory")

/* ---- output: a table for people, one JSON object for scripts ---- */

/* Starts a section of the table ("alloc: one alloc+free of a 64 KiB stack"). */
void bench_title(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A row of the table: "  name  value unit  (±spread%)  note". */
void bench_row(const char *name, double value, const char *unit, double spread, const char *note);
/* A free-form line of the table. */
void bench_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* JSON: an object member holding an object, numbers, strings; nesting is tracked. */
void bench_json_open(const char *key);
void bench_json_close(void);
void bench_json_num(const char *key, double value);
void bench_json_str(const char *key, const char *value);

/* Writes the variants' medians as {"key": {"name": ns, ...}}. */
void bench_json_variants(const char *key, const struct bench_variant *v, int n);

/* A benchmark of 'vmstack bench'. */
struct bench {
    const char *name;
    const char *summary;
    int (*run)(void);      /* 0, or 1 after printing why it failed */
};

/* Registered benchmarks, in tools/bench.c. */
int bench_alloc(void);

#endif
