/* SPDX-License-Identifier: MIT */
/*
 * What 'vmstack run --plot' and 'vmstack trace --folded, --flamegraph'
 * make of the report, by whoever delivers the table at the end: the
 * program's exit handlers, or its keeper (keeper.c) when those never ran:
 *   --folded FILE   every chain of the trace as folded stacks rooted at
 *                   its task, one line per frame weighted by that frame's
 *                   bytes, so that a frame's width in a flame graph is the
 *                   depth from it down: "task;a;b;c BYTES" (flamegraph.pl,
 *                   speedscope, ...)
 *   --flamegraph FILE  the same chains as an SVG flame graph (flamegraph.c)
 *   --plot FILE     a PNG or SVG (by FILE's name) of each thread's peak as
 *                   a share of its stack, drawn by gnuplot; from the text
 *                   table or its JSON
 * The files replace FILE as --output does (outfile.c): never through a
 * link someone planted.  Names from the program (its own, its threads')
 * reach gnuplot as quoted data, never as script.
 */
#include "preload/preload.h"
#include "preload/chains.h"
#include "preload/outfile.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The PNG's size in pixels. */
#define RUN_PLOT_WIDTH 900
#define RUN_PLOT_HEIGHT 560

extern char **environ;

/* ---- folded stacks ---- */

/* A row's frame as folded stacks name it: a folded run of recursion as "f [xN]". */
static void put_frame(FILE *out, const struct chain_row *r)
{
    fputs(r->name, out);
    if (r->count > 1)
        fprintf(out, " [x%lu]", r->count);
}

/*
 * The chain's lines, rooted at its task: one per row from the root down,
 * weighted by the row's own bytes, so that the lines of a frame and all
 * below it add up to the stack's depth from it down.
 */
static int fold_chain(void *ctx, const struct chain *c)
{
    FILE *out = ctx;

    for (size_t i = c->n; i-- > 0;) {
        if (!c->rows[i].size)
            continue;
        fputs(c->root, out);
        for (size_t j = c->n; j-- > i;) {
            fputc(';', out);
            put_frame(out, &c->rows[j]);
        }
        fprintf(out, " %lu\n", c->rows[i].size);
    }
    return 0;
}

static int write_folded(char *report, const char *path)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    int rc = out ? vms__chains_each(report, fold_chain, out) : -1;

    if (out && fclose(out))
        rc = -1;
    if (rc)
        vms__out_printf("vmstack trace: cannot write --folded %s: out of memory\n", path);
    else
        rc = vms__run_write_output("trace", path, text, len, vms__out_printf);
    free(text);
    return rc;
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

/* b bytes for a person: "24.7K", "8M". */
static void human(double b, char *out, size_t n)
{
    static const char units[] = "KMG";
    int u = -1;

    while (b >= 1024 && u < 2) {
        b /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(out, n, "%.0f", b);
    else
        snprintf(out, n, b < 10 && b != (int)b ? "%.1f%c" : "%.0f%c", b, units[u]);
}

/*
 * One thread as a gnuplot data line: "TID NAME (PEAK of STACK)" and its
 * peak as a percentage of its stack.  The name is the program's: as data,
 * with no quote or backslash in it.
 */
static void plot_row(FILE *gp, const char *tid, const char *name, double stack, double peak)
{
    char clean[64], p[16], s[16];

    snprintf(clean, sizeof clean, "%s", name);
    for (char *c = clean; *c; c++)
        if (*c == '"' || *c == '\\' || *c == '\n')
            *c = '\'';
    human(peak, p, sizeof p);
    human(stack, s, sizeof s);
    fprintf(gp, "\"%s %s (%s of %s)\" %.17g\n", tid, clean, p, s, stack > 0 ? 100 * peak / stack : 0.0);
}

/* The text table's rows as gnuplot data lines (plot_row); the number of rows. */
static int table_rows(char *report, FILE *gp)
{
    char *line, *name_at = NULL;
    size_t name_col = 0, start_col = 0;
    int rows = 0;

    while ((line = vms__next_line(&report))) {
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
        plot_row(gp, tok[0], name, bytes_of(tok[nt - 4]), bytes_of(tok[nt - 2]));
        rows++;
    }
    return rows;
}

/*
 * The rows of the table as JSON (--json: runtable.c writes it one member
 * a line) as gnuplot data lines; the number of rows.  A name's escapes
 * stay as they are: quotes and backslashes become plot_row's.
 */
static int json_rows(char *report, FILE *gp)
{
    char *line, tid[24] = "", name[64] = "";
    double stack = 0, peak = 0;
    bool in = false;
    int rows = 0;

    while ((line = vms__next_line(&report))) {
        char *v = line + strspn(line, " ");
        size_t len;

        if (!in) {
            in = !strcmp(v, "\"threads\": [");
            continue;
        }
        if (*v == ']')
            break;
        if (*v == '}') {
            plot_row(gp, tid, name, stack, peak);
            rows++;
        } else if (sscanf(v, "\"tid\": %23[0-9]", tid) == 1 || sscanf(v, "\"stack_size\": %lf", &stack) == 1) {
            continue;
        } else if (!strncmp(v, "\"peak_bytes\": ", 14)) {
            peak = strtod(v + 14, NULL); /* null: not measured, 0 */
        } else if (!strncmp(v, "\"name\": \"", 9)) {
            len = strlen(v + 9);
            len -= len && v[9 + len - 1] == ',';
            len -= len && v[9 + len - 1] == '"';
            snprintf(name, sizeof name, "%.*s", (int)len, v + 9);
        }
    }
    return rows;
}

/*
 * gnuplot, as a child of whoever delivers the table: the program at exit
 * (SIGCHLD held back and its own instance discarded, as it is not the
 * program's) or the keeper.  0 when it drew.
 */
static int run_gnuplot(const char *script)
{
    char *argv[] = { "gnuplot", (char *)script, NULL };
    struct timespec now = {0, 0};
    sigset_t chld, old, pending;
    int status = 0, rc = -1;
    pid_t pid;

    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    pthread_sigmask(SIG_BLOCK, &chld, &old);
    sigpending(&pending);
    if (!posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ)) {
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        rc = WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -1;
    }
    if (!sigismember(&pending, SIGCHLD))
        sigtimedwait(&chld, NULL, &now);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

/* s as a gnuplot single-quoted string, in which only a doubled quote means anything. */
static void put_quoted(FILE *gp, const char *s)
{
    fputc('\'', gp);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', gp);
        fputc(*s == '\n' ? ' ' : *s, gp);
    }
    fputc('\'', gp);
}

/* Whether path names an SVG picture (else PNG: 'vmstack run' let only these two through). */
static bool svg_name(const char *path)
{
    size_t n = strlen(path);

    return n >= 4 && !strcasecmp(path + n - 4, ".svg");
}

/*
 * The script drawing the table's rows into out, as SVG or PNG by the name
 * of the picture (pic; out is the file that becomes it); the number of
 * rows.  Each thread's peak as a percentage of its stack, on a linear
 * axis, so that a bar's height is how full the stack got.
 */
static int plot_script(FILE *gp, char *report, const char *out, const char *pic, const char *prog)
{
    char title[512];
    int rows;

    fprintf(gp, "$threads << EOD\n");
    rows = report[strspn(report, " \n")] == '{' ? json_rows(report, gp) : table_rows(report, gp);
    fprintf(gp, "EOD\n");
    if (svg_name(pic))
        fprintf(gp, "set terminal svg size %d,%d noenhanced font ',10' background rgb 'white'\n", RUN_PLOT_WIDTH,
                RUN_PLOT_HEIGHT);
    else
        fprintf(gp, "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                    "  set terminal pngcairo size %d,%d noenhanced font ',10'\n"
                    "} else {\n  set terminal png size %d,%d noenhanced\n}\n",
                RUN_PLOT_WIDTH, RUN_PLOT_HEIGHT, RUN_PLOT_WIDTH, RUN_PLOT_HEIGHT);
    fprintf(gp, "set output ");
    put_quoted(gp, out);
    snprintf(title, sizeof title, "Stack use of %s: each thread's peak as a share of its stack", prog);
    fprintf(gp, "\nset title ");
    put_quoted(gp, title);
    fprintf(gp, "\nset ylabel 'peak use (%% of the stack)'\n"
                "set yrange [0:100]\nset ytics 10\nset grid ytics\n"
                "set style fill solid 0.8 border -1\nset boxwidth 0.7\nset key off\n"
                "set xtics rotate by -45 scale 0\nset xrange [-0.6:%d - 0.4]\n"
                "plot $threads using 0:2:xtic(1) with boxes lc rgb '#d9541e', "
                "'' using 0:2:(sprintf('%%.1f%%%%', $2)) with labels offset 0,0.8\n",
            rows);
    return rows;
}

/*
 * gnuplot draws into a file of ours beside png, with a name nobody can
 * predict, created (never opened: a planted link is refused), which then
 * replaces png.
 */
static int draw(const char *script, const char *png, const char *tmp)
{
    mode_t mask = umask(022);

    umask(mask);
    if (chmod(tmp, 0666 & ~mask) || run_gnuplot(script))
        return -1;
    return rename(tmp, png);
}

static int write_plot(const char *sub, char *report, const char *png, const char *prog)
{
    char script[] = "/tmp/vmstack-plot-XXXXXX", tmp[PATH_MAX];
    const char *slash = strrchr(png, '/');
    int fd = mkostemp(script, O_CLOEXEC), out = -1, rows = 0, rc = -1;
    FILE *gp = fd >= 0 ? fdopen(fd, "w") : NULL;

    if (slash && snprintf(tmp, sizeof tmp, "%.*s/.%s.vmstack-XXXXXX", (int)(slash - png), png, slash + 1) <
                     (int)sizeof tmp)
        out = mkostemp(tmp, O_CLOEXEC);
    if (!gp || out < 0) {
        vms__out_printf("vmstack %s: --plot: cannot create %s: %s\n", sub, !gp ? "gnuplot's script in /tmp" : png,
                        strerror(errno));
        goto done;
    }
    close(out);
    rows = plot_script(gp, report, tmp, png, prog);
    if (fclose(gp))
        rows = 0;
    gp = NULL;
    if (rows == 0)
        vms__out_printf("vmstack %s: --plot: no thread in the table: no plot\n", sub);
    else if (draw(script, png, tmp))
        vms__out_printf("vmstack %s: --plot: gnuplot failed to draw %s\n", sub, png);
    else
        rc = 0;
done:
    if (gp)
        fclose(gp);
    if (fd >= 0)
        unlink(script);
    if (out >= 0 && rc)
        unlink(tmp);
    return rc;
}

/* ---- the entry ---- */

int vms__run_post(const char *text, size_t len)
{
    const char *folded = vms__run_opts.folded, *plot = vms__run_opts.plot, *flame = vms__run_opts.flamegraph;
    char *report;
    int rc = 0;

    if (!folded && !plot && !flame)
        return 0;
    if (!(report = strndup(text, len))) {
        vms__out_printf("vmstack %s: out of memory for the report\n", vms__run_command());
        return -1;
    }
    /* Each reader cuts the lines of its own copy. */
    if (folded) {
        char *copy = strdup(report);
        if (!copy || write_folded(copy, folded))
            rc = -1;
        free(copy);
    }
    if (flame) {
        char *copy = strdup(report);
        if (!copy || vms__flamegraph_write(copy, flame, program_invocation_short_name))
            rc = -1;
        free(copy);
    }
    if (plot && write_plot(vms__run_command(), report, plot, program_invocation_short_name))
        rc = -1;
    free(report);
    return rc;
}
