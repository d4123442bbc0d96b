/* SPDX-License-Identifier: MIT */
/* 'vmstack run --plot' and 'vmstack trace --folded' (runpost.c). */
#ifndef VMS_RUNPOST_H
#define VMS_RUNPOST_H

#include "cmd.h"

/* The PNG's size in pixels. */
#define RUN_PLOT_WIDTH 900
#define RUN_PLOT_HEIGHT 560

struct run_post {
    const char *sub;           /* "run" or "trace", which its messages name */
    const char *folded, *plot; /* the files to write, or NULL */
    const char *prog;         /* the program's name, for the plot's title */
};

/*
 * Writes the files p asks for from the report text (the table, and under
 * trace the chains) that the launcher holds once the program has ended.
 * 0, or -1 after a message.
 */
int run_post_write(const char *text, size_t len, const struct run_post *p);

/* 0 if gnuplot is on PATH, else the usage error of sub. */
int run_gnuplot_ready(const char *sub);

#endif
