/* SPDX-License-Identifier: MIT */
/*
 * What 'vmstack run --plot' and 'vmstack trace --folded' make of the
 * report once the program has ended: the launcher (launch.c) hands over
 * the text it wrote to stderr or --output, and this reads it:
 *   --folded FILE   every chain of the trace as folded stacks, root first,
 *                   one line per frame weighted by that frame's bytes, so
 *                   that a frame's width in a flame graph is its depth:
 *                   "a;b;c BYTES" (flamegraph.pl, speedscope, ...)
 *   --plot FILE     a PNG of each thread's peak against its stack size,
 *                   drawn by gnuplot (as 'vmstack bench --plot')
 */
#include "runpost.h"

#include <ctype.h>
#include <errno.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static char *next_line(char **p)
{
    char *line = *p, *nl;

    if (!*line)
        return NULL;
    nl = strchr(line, '\n');
    if (nl) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = line + strlen(line);
    }
    return line;
}

/* ---- folded stacks ---- */

/* A row of a chain, "  N)  DEPTH  SIZE  LOCATION": the size and the function's name. */
static bool chain_row(const char *line, unsigned long *size, char *fn, size_t n)
{
    const char *loc;
    char *end;
    size_t len;

    while (isspace((unsigned char)*line))
        line++;
    if (!isdigit((unsigned char)*line) || !(line = strchr(line, ')')))
        return false;
    strtoul(line + 1, &end, 10); /* the depth */
    if (end == line + 1)
        return false;
    loc = end;
    *size = strtoul(loc, &end, 10);
    if (end == loc) /* "?": the last row of a chain cut short */
        end += strspn(end, " ") + 1;
    loc = end + strspn(end, " ");
    /* "function+0xOFF/0xSIZE [module] file:line": the name may hold spaces (C++), not " [". */
    end = strstr(loc, " [");
    len = end ? (size_t)(end - loc) : strlen(loc);
    for (size_t k = len; k-- > 1;)
        if (!strncmp(loc + k, "+0x", 3)) {
            len = k;
            break;
        }
    if (!len || loc[0] == '?')
        snprintf(fn, n, "[unknown]");
    else
        snprintf(fn, n, "%.*s", (int)strcspn(loc, "@") < (int)len ? (int)strcspn(loc, "@") : (int)len, loc);
    /* ';' separates frames: never inside one. */
    for (char *c = fn; *c; c++)
        if (*c == ';')
            *c = ':';
    return true;
}

struct chain {
    char (*fn)[256];
    unsigned long *size;
    size_t n, cap;
};

/* The chain's lines, root first: each frame with its own bytes. */
static void write_chain(FILE *out, const struct chain *c)
{
    for (size_t i = c->n; i-- > 0;) {
        if (!c->size[i])
            continue;
        for (size_t j = c->n; j-- > i;)
            fprintf(out, "%s%s", c->fn[j], j > i ? ";" : "");
        fprintf(out, " %lu\n", c->size[i]);
    }
}

static int write_folded(char *report, const char *path)
{
    struct chain c = { 0 };
    bool in = false;
    char *line, fn[256];
    unsigned long size;
    FILE *out = fopen(path, "w");

    if (!out) {
        cmd_say("vmstack trace: cannot write --folded %s: %s\n", path, strerror(errno));
        return -1;
    }
    while ((line = next_line(&report))) {
        unsigned long more;

        if (strstr(line, "Depth") && strstr(line, "Size") && strstr(line, "Location")) {
            in = true;
            c.n = 0;
            continue;
        }
        if (!in)
            continue;
        /* Recursion, folded in the report: the row above, that many times more. */
        if (c.n && sscanf(line, " ... %lu more entries of the same", &more) == 1) {
            memcpy(fn, c.fn[c.n - 1], sizeof fn);
            size = c.size[c.n - 1];
        } else if (chain_row(line, &size, fn, sizeof fn)) {
            more = 1;
        } else {
            if (!*line) {
                write_chain(out, &c);
                in = false;
            }
            continue;
        }
        while (more--) {
            if (c.n == c.cap) {
                c.cap = c.cap * 2 + 64;
                c.fn = realloc(c.fn, c.cap * sizeof *c.fn);
                c.size = realloc(c.size, c.cap * sizeof *c.size);
                if (!c.fn || !c.size) {
                    fclose(out);
                    return -1;
                }
            }
            memcpy(c.fn[c.n], fn, sizeof fn);
            c.size[c.n++] = size;
        }
    }
    if (in)
        write_chain(out, &c);
    free(c.fn);
    free(c.size);
    if (fclose(out)) {
        cmd_say("vmstack trace: cannot write --folded %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- the plot ---- */

/* "8M", "64K", "12392": bytes. */
static double bytes_of(const char *s)
{
    char *end;
    double v = strtod(s, &end);

    switch (*end) {
    case 'K': return v * 1024;
    case 'M': return v * 1024 * 1024;
    case 'G': return v * 1024 * 1024 * 1024;
    }
    return v;
}

/* The table's rows as gnuplot data lines "label" STACK PEAK; the number of rows. */
static int table_rows(char *report, FILE *gp)
{
    char *line, *name_at = NULL;
    size_t name_col = 0, start_col = 0;
    int rows = 0;

    while ((line = next_line(&report))) {
        char *tok[16], copy[512];
        int nt = 0;

        if (!name_at) {
            if ((name_at = strstr(line, " NAME ")) && strstr(line, " PEAK")) {
                name_col = (size_t)(name_at - line) + 1;
                start_col = (size_t)(strstr(line, " START") ? strstr(line, " START") - line : 0);
            } else {
                name_at = NULL;
            }
            continue;
        }
        if (!*line)
            break;
        snprintf(copy, sizeof copy, "%s", line);
        for (char *t = strtok(copy, " "); t && nt < 16; t = strtok(NULL, " "))
            tok[nt++] = t;
        if (nt < 6 || !isdigit((unsigned char)tok[0][0]))
            continue;
        /* TID NAME ... STACK GUARD PEAK USED%: the name is the column under NAME. */
        char name[64] = "";
        if (strlen(line) > start_col && start_col > name_col) {
            snprintf(name, sizeof name, "%.*s", (int)(start_col - name_col), line + name_col);
            for (size_t k = strlen(name); k && name[k - 1] == ' '; k--)
                name[k - 1] = '\0';
        }
        for (char *c = name; *c; c++)
            if (*c == '"' || *c == '\\')
                *c = '\'';
        fprintf(gp, "\"%s %s\" %.0f %.0f\n", tok[0], name, bytes_of(tok[nt - 4]), bytes_of(tok[nt - 2]));
        rows++;
    }
    return rows;
}

static int run_gnuplot(const char *script)
{
    char *argv[] = { "gnuplot", (char *)script, NULL };
    int status;
    pid_t pid;

    if (posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ) || waitpid(pid, &status, 0) < 0 ||
        !WIFEXITED(status) || WEXITSTATUS(status))
        return -1;
    return 0;
}

static int write_plot(const char *sub, char *report, const char *png, const char *prog)
{
    char script[] = "/tmp/vmstack-plot-XXXXXX";
    int fd = mkstemp(script), rows, rc = -1;
    FILE *gp = fd >= 0 ? fdopen(fd, "w") : NULL;

    if (!gp) {
        cmd_say("vmstack %s: --plot: cannot write gnuplot's script in /tmp: %s\n", sub, strerror(errno));
        return -1;
    }
    fprintf(gp, "$threads << EOD\n");
    rows = table_rows(report, gp);
    fprintf(gp, "EOD\n"
                "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                "  set terminal pngcairo size %d,%d noenhanced font ',10'\n"
                "} else {\n  set terminal png size %d,%d noenhanced\n}\n"
                "set output '%s'\n"
                "set title \"Stack use of %s: each thread's peak against its stack size\"\n"
                "set ylabel 'bytes (log scale)'\n"
                "set logscale y\nset yrange [1:*]\n"
                "set style data histogram\nset style histogram clustered gap 1\n"
                "set style fill solid 0.8 border -1\nset boxwidth 0.9\n"
                "set xtics rotate by -45 scale 0\nset key outside top center horizontal\nset grid ytics\n"
                "plot $threads using 2:xtic(1) title 'stack size', '' using 3 title 'peak'\n",
            RUN_PLOT_WIDTH, RUN_PLOT_HEIGHT, RUN_PLOT_WIDTH, RUN_PLOT_HEIGHT, png, prog);
    if (fclose(gp))
        rows = 0;
    if (rows == 0)
        cmd_say("vmstack %s: --plot: no thread in the table: no plot\n", sub);
    else if (run_gnuplot(script))
        cmd_say("vmstack %s: --plot: gnuplot failed to draw %s\n", sub, png);
    else
        rc = 0;
    unlink(script);
    return rc;
}

/* ---- running ---- */

int run_gnuplot_ready(const char *sub)
{
    const char *path = getenv("PATH");
    static char file[4096]; /* not on the stack: the launcher may have 16 KiB in all */

    for (const char *p = path ? path : ""; *p;) {
        size_t n = strcspn(p, ":");
        snprintf(file, sizeof file, "%.*s/gnuplot", (int)n, p);
        if (n && access(file, X_OK) == 0)
            return 0;
        p += n + (p[n] == ':');
    }
    return cmd_usage_error(sub, "--plot needs gnuplot, which is not on PATH (Debian: apt-get install gnuplot-nox)");
}

int run_post_write(const char *text, size_t len, const struct run_post *p)
{
    char *report;
    int rc = 0;

    if (!p || (!p->folded && !p->plot))
        return 0;
    if (!(report = strndup(text, len))) {
        cmd_say("vmstack %s: out of memory for the report\n", p->sub);
        return -1;
    }
    /* Each reader cuts the lines of its own copy. */
    if (p->folded) {
        char *copy = strdup(report);
        if (!copy || write_folded(copy, p->folded))
            rc = -1;
        free(copy);
    }
    if (p->plot && write_plot(p->sub, report, p->plot, p->prog))
        rc = -1;
    free(report);
    return rc;
}
