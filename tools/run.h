/* SPDX-License-Identifier: MIT */
/*
 * The options of 'vmstack run' and those 'vmstack trace' adds, described
 * once: each is parsed once, into one struct run_args, from which run.c
 * alone makes the environment of the preload library.  A new option of
 * run is an entry of run.c's table, and trace has it at once.
 */
#ifndef VMS_RUN_H
#define VMS_RUN_H

#include "cmd.h"

#include <stddef.h>

struct run_args {
    const char *sub; /* "run" or "trace": the command its messages name */
    bool trace;      /* the program is traced (trace's options are allowed) */
    /* run's */
    const char *guard, *stack_size, *output, *report_signal, *plot;
    bool json, help, allow_unprotected, quiet;
    /* trace's: NULL, 0 or false when not given */
    const char *folded, *flamegraph, *warn_frame, *warn_depth, *max_tasks;
    size_t warn_frame_bytes;
    bool all_lines;
    int prog; /* index of PROG in argv */
};

/* The getopt values of the options without a short form, run's and trace's, all distinct. */
enum {
    RUN_OPT_GUARD = 256, RUN_OPT_STACK_SIZE, RUN_OPT_JSON, RUN_OPT_REPORT_SIGNAL, RUN_OPT_ALLOW_UNPROTECTED,
    RUN_OPT_PLOT, TRACE_OPT_FOLDED, TRACE_OPT_WARN_FRAME, TRACE_OPT_WARN_DEPTH, TRACE_OPT_MAX_TASKS,
    TRACE_OPT_ALL_LINES, TRACE_OPT_FLAMEGRAPH,
};

/*
 * An option: its getopt entry, the member of run_args it sets (a const
 * char * to its value, or a bool to true for an option without one), and
 * the check of the value, NULL or one that returns 0 or the usage error.
 * A table ends with a zero entry.
 */
struct run_option {
    struct option opt;
    size_t field; /* offsetof(struct run_args, member) */
    int (*check)(struct run_args *a, const char *value);
};

#define RUN_ARG(name, val, member, check) \
    { {name, required_argument, NULL, val}, offsetof(struct run_args, member), check }
#define RUN_FLAG(name, val, member) { {name, no_argument, NULL, val}, offsetof(struct run_args, member), NULL }

/* trace's options (trace.c): under run, each is said to be trace's. */
extern const struct run_option trace_options[];

/*
 * Runs argv[a->prog...] as 'vmstack run' does, with the options of
 * argv[1...] (run's, and trace's when a->trace), and the program traced
 * when a->trace.  a holds sub and trace; help prints the command's
 * --help.  Returns only when the program could not be run: 125, 126 or
 * 127 as env(1), or 0 after --help.
 */
int run_main(int argc, char **argv, struct run_args *a, void (*help)(void));

#endif
