/* SPDX-License-Identifier: MIT */
/*
 * The benchmark framework of 'vmstack bench'.  A benchmark measures its
 * variants side by side in one run (interleaved repetitions, so machine
 * noise hits all of them alike), reports medians with their spread, and
 * adds its figures to one JSON object.
 */
#ifndef VMS_BENCH_H
#define VMS_BENCH_H

#include <stddef.h>
#include <stdio.h>

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

/*
 * Sorts n samples of what name measures and gives their median and spread
 * ((p90 - p10) / median); warns on stderr for a spread above 25%.  For
 * benchmarks that take their samples themselves.
 */
void bench_summarize(const char *name, double *samples, int n, double *median, double *spread);

/*
 * Quick mode (VMSTACK_BENCH_QUICK=1), for tests: bench_compare runs at most
 * 5 rounds of a tenth of the operations, and benchmarks shrink their sizes.
 * Figures are then rough; the keys and the plots are the same.
 */
int bench_quick(void);

/* Monotonic clock in nanoseconds. */
double bench_now_ns(void);

/*
 * A benchmark step that cannot fail did: says which and why (vmstack's last
 * error, and errno), then aborts, so that a bench run never dies silently.
 */
_Noreturn void bench_fail(const char *what);
/*
 * CPU time in nanoseconds: of the whole process (all threads), or of the
 * calling thread.  On a shared machine, wall time also counts the time spent
 * waiting for a CPU; CPU time counts only the work measured.
 */
double bench_cpu_ns(void);
double bench_thread_cpu_ns(void);

/* Keeps the compiler from optimising away a value. */
#define BENCH_KEEP(x) __asm__ volatile("" : : "g"(x) : "memory")

/*
 * The task the spawn benchmarks start (fibers, threads, the peers'):
 * writes BENCH_TOUCH bytes of its stack with arg's value, the same work for
 * every runtime measured.
 */
#define BENCH_TOUCH 256
void *bench_body(void *arg);
/* Wall time of iters fibers of stack bytes, each spawned, run to its end (bench_body) and joined. */
double bench_spawn_join(size_t stack, long iters);

/*
 * dlopen of the peers module (vmstack-peers.so: Boost's stacks and
 * contexts, built where Boost.Context is): NULL with *m its handle, or why not.
 */
const char *bench_peers_open(void **m);

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

/* Writes the variants' medians as {"key": {"name": ns, ...}}, and plots them. */
void bench_json_variants(const char *key, const struct bench_variant *v, int n);

/*
 * ---- variants with other VMSTACK_* settings, in child processes ----
 *
 * Settings are process-wide and fixed at start-up, so a variant that needs
 * others runs in a child: 'vmstack bench --child WORKER' re-executed with
 * the settings in its environment.  The child stays up and answers one
 * request per line (an argument in, a measurement out), so that its rounds
 * interleave with the parent's and it stays as warm as the parent.
 */
struct bench_child {
    int pid;
    FILE *to, *from;
};

/*
 * Starts a child running WORKER, with env's "NAME=VALUE" settings (NULL
 * terminated) added to the environment and "NAME=" ones removed.  Returns 0,
 * or -1 after printing why.
 */
int bench_child_start(struct bench_child *c, const char *worker, const char *const *env);
/* The worker's measurement for arg, or a negative value after printing why. */
double bench_child_ask(struct bench_child *c, long arg);
void bench_child_stop(struct bench_child *c);
/*
 * Runs the program path with argv, "N\n" on its stdin and its output thrown
 * away, and waits for it.  Returns its wall time in ns and puts its CPU
 * time (user + system) in *cpu_ns; -1 if it could not run or did not exit 0.
 */
double bench_exec_timed(const char *path, char *const argv[], long n, double *cpu_ns);

/* The child side: answers requests for WORKER on stdin/stdout until EOF. */
int bench_child_main(const char *worker);

/* Workers: one measurement for arg, or a negative value after printing why. */
double bench_cache_worker(long fibers);
double bench_cache2_worker(long fibers);
double bench_burst_worker(long arg); /* stacks in all * 1024 + burst size */
double bench_scale_ceiling_worker(long max);
double bench_run_worker(long threads);
double bench_trace_worker(long rounds); /* bench_trace.c */
double bench_trace_deep_worker(long descents); /* bench_trace.c */

/*
 * ---- plots (--plot DIR): the same measurements as the table and JSON ----
 *
 * Benchmarks add data to named plots; which plots exist, with their titles,
 * axes and units, is in tools/bench_plot.c.  A plot nobody added data to is
 * not drawn.
 */
/* Bars for the variants of JSON key (bench_json_variants calls it). */
void bench_plot_variants(const char *key, const struct bench_variant *v, int n);
/* A bar of a bar chart, labelled with its spread; spread < 0: a one-shot figure. */
void bench_plot_bar(const char *plot, const char *label, double value, double spread);
/* A point of one line series of a line chart. */
void bench_plot_point(const char *plot, const char *series, double x, double y);
/* 0 when gnuplot can be run; else -1 after printing a one-line error. */
int bench_plot_ready(void);
/* Writes DIR/vmstack-PLOT.dat and .png files and DIR/vmstack-plots.gp.  0, or -1 after printing why. */
int bench_plot_write(const char *dir);

/* A benchmark of 'vmstack bench'. */
struct bench {
    const char *name;
    const char *summary;
    int (*run)(void);      /* 0, or 1 after printing why it failed */
};

/* Registered benchmarks, in tools/bench.c. */
int bench_alloc(void);
int bench_spawn(void);
int bench_switch(void);
int bench_thread(void);
int bench_run(void);
int bench_trace(void);
int bench_cache(void);
int bench_scale(void);
int bench_tlb(void);
int bench_echo(void);   /* bench_echo.c */
/* 'vmstack bench --echo-serve KIND': a server of bench_echo on fd 3, measured by callgrind. */
int bench_echo_serve(const char *kind);
int bench_ring(void);
int bench_offload(void); /* bench_offload.c */
int bench_peers(void); /* bench_peers.c, with Boost.Context's side in peers_boost.cpp */
int bench_instructions(void); /* bench_instr.c, with the C++ paths in peers_instr.cpp */
/* 'vmstack bench --callgrind-child': the measured side of bench_instructions, under callgrind. */
int bench_callgrind_child(void);

#endif
