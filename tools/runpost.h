/* SPDX-License-Identifier: MIT */
/* 'vmstack run --plot' and 'vmstack trace --folded' (runpost.c). */
#ifndef VMS_RUNPOST_H
#define VMS_RUNPOST_H

#include "cmd.h"

/* The PNG's size in pixels. */
#define RUN_PLOT_WIDTH 900
#define RUN_PLOT_HEIGHT 560

struct run_post {
    const char *report;       /* where the program's report is written */
    bool report_is_temporary; /* then it is copied to stderr and removed */
    const char *folded, *plot;
    const char *prog;         /* the program's name, for the plot's title */
};

/*
 * Runs path with argv as a child (the environment is set), waits for it,
 * makes the files p asks for from its report, and ends as the program
 * ended.  Returns only when the program cannot be started.
 */
int run_post(const char *path, char **argv, const struct run_post *p);

/* 0 if gnuplot is on PATH, else the usage error of sub. */
int run_gnuplot_ready(const char *sub);

#endif
