/* SPDX-License-Identifier: MIT */
/*
 * The deepest chains of 'vmstack trace', read back from the report's text
 * (chains.c): what --folded and --flamegraph draw.  They work from the
 * text because the text is what the keeper has when the program died
 * without its exit handlers.
 */
#ifndef VMS_CHAINS_H
#define VMS_CHAINS_H

#include <stdbool.h>
#include <stddef.h>

/* One row of a chain's table; a folded run of recursion is one row. */
struct chain_row {
    char name[256];      /* the function, "[unknown]" when the report has none; never a ';' */
    char module[64];     /* "" when the report names none */
    char place[256];     /* "file:line", "" when the report has none */
    unsigned long depth; /* the report's Depth: bytes from the stack's top to this frame's lowest */
    unsigned long size;  /* bytes of the frame, of all its frames for a folded run; 0: unknown */
    unsigned long count; /* frames the row stands for: more than 1 for folded recursion */
};

/* A task's chain: root names the task ("thread 'name' (tid N)"); rows innermost first. */
struct chain {
    char root[128];
    struct chain_row *rows;
    size_t n, cap;
};

/* The next line of *p, cut in place (its newline becomes a NUL); NULL at the end. */
char *vms__next_line(char **p);

/*
 * Calls on(ctx, chain) for each task's chain in report (a trace's text
 * report; the warnings' chains are not tasks' and are left out); report's
 * lines are cut in place.  0, on's first non-zero return, or -1 when out
 * of memory.
 */
int vms__chains_each(char *report, int (*on)(void *ctx, const struct chain *c), void *ctx);

#endif
