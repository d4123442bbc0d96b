/* SPDX-License-Identifier: MIT */
/*
 * 'vmstack bench --plot DIR': PNG plots drawn by gnuplot from the very
 * figures that go into the table and the JSON.  Benchmarks add bars and
 * points to named plots while they report; at the end, every plot that got
 * data is written as DIR/vmstack-NAME.dat, one script DIR/vmstack-plots.gp
 * draws them all, and gnuplot runs it in DIR.  Only those named files are
 * written, so DIR may hold other things.
 */
#include "bench.h"
#include "cmd.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum kind { BARS, LINES };

struct plot_def {
    const char *name;
    enum kind kind;
    const char *title, *xlabel, *ylabel;
    const char *legend; /* bars: what a bar is */
    int logx, logy;
};

static const struct plot_def defs[] = {
    { "spawn", BARS, "Fiber spawn + run + join by stack strategy, 64 KiB stacks (cache ...: in bursts of 64)",
      "stack strategy",
      "ns per fiber (spawn: wall time; cache: CPU time) (log scale)", "median of interleaved runs", 0, 1 },
    { "thread", BARS, "pthread_create + join (64 KiB stacks): glibc's stacks vs vmstack's", "stacks from",
      "CPU ns per thread (both threads)", "median of interleaved runs", 0, 0 },
    { "tlb", LINES, "One turn (switch + 1 KiB touched) against live fibers, 16 KiB stacks",
      "live fibers (log scale)", "CPU ns per turn (log scale)", NULL, 1, 1 },
    { "scale", BARS, "Live fibers on 64 KiB stacks, by guard mode (mprotect: up to the VMA limit)", "guard mode",
      "live fibers (log scale)", "one shot", 0, 1 },
    { "alloc", BARS, "Stack alloc + free (64 KiB stack, one page written)", "allocator",
      "ns per alloc + free (log scale)", "median of interleaved runs", 0, 1 },
    { "switch", BARS, "Fiber switch in a ping-pong", "switch", "ns per switch (log scale)",
      "median of interleaved runs", 0, 1 },
    { "echo", BARS, "TCP echo server on loopback, 1,000 connections, 64-byte requests", "server",
      "requests per second", "median of interleaved runs", 0, 0 },
    { "echo-rss", BARS, "Resident memory per idle connection, 10,000 connections open", "server",
      "bytes per connection", "one shot", 0, 0 },
    { "ring", LINES, "One turn (256 bytes written + yield) in a ring of N fibers, 64 KiB stacks: colour on and off",
      "fibers in the ring (log scale)", "CPU ns per turn", NULL, 1, 0 },
    { "burst", LINES, "Two threads allocating bursts of W stacks, then freeing them: per-CPU caches on and off",
      "burst size W (log scale)", "CPU ns per stack (alloc + free)", NULL, 1, 0 },
    { "peers", BARS, "vmstack against Boost.Context: spawn + run + exit (64 KiB stacks), switch", "operation",
      "ns per operation (log scale)", "median of interleaved runs", 0, 1 },
};
#define NDEFS (sizeof defs / sizeof defs[0])

/* Which JSON keys of bench_json_variants become bars of which plot. */
static const struct {
    const char *key, *plot, *prefix;
} from_json[] = {
    { "spawn_ns", "spawn", "" },
    { "cache_effect", "spawn", "cache " },
    { "thread_ns", "thread", "" },
    { "alloc_free_ns", "alloc", "" },
    { "switch_ns", "switch", "" },
};

struct datum {
    const char *plot;
    char series[64]; /* bars: the bar's label */
    double x, y;
    double spread;   /* bars: (p90 - p10) / median; negative for a one-shot figure */
};

static struct datum *data;
static size_t ndata, cap;

static void add(const char *plot, const char *series, double x, double y, double spread)
{
    if (ndata == cap) {
        struct datum *d = realloc(data, (cap ? 2 * cap : 64) * sizeof *d);
        if (!d)
            return; /* a plot short of a point is no reason to fail the benchmark */
        data = d;
        cap = cap ? 2 * cap : 64;
    }
    data[ndata].plot = plot;
    snprintf(data[ndata].series, sizeof data[ndata].series, "%s", series);
    data[ndata].x = x;
    data[ndata].y = y;
    data[ndata].spread = spread;
    ndata++;
}

void bench_plot_bar(const char *plot, const char *label, double value, double spread)
{
    add(plot, label, 0, value, spread);
}

void bench_plot_point(const char *plot, const char *series, double x, double y)
{
    add(plot, series, x, y, -1);
}

void bench_plot_variants(const char *key, const struct bench_variant *v, int n)
{
    char label[64];

    for (size_t k = 0; k < sizeof from_json / sizeof from_json[0]; k++)
        if (!strcmp(from_json[k].key, key))
            for (int i = 0; i < n; i++) {
                snprintf(label, sizeof label, "%s%s", from_json[k].prefix, v[i].name);
                add(from_json[k].plot, label, 0, v[i].median_ns, v[i].spread);
            }
}

int bench_plot_ready(void)
{
    if (cmd_on_path("gnuplot"))
        return 0;
    fprintf(stderr, "vmstack bench: --plot needs gnuplot, which is not on PATH (Debian: apt-get install gnuplot-nox)\n");
    return -1;
}

/* mkdir -p. */
static int make_dir(const char *dir)
{
    char path[4096];

    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path)
        return -1;
    for (char *s = path + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(path, 0777) && errno != EEXIST)
                return -1;
            *s = '/';
        }
    return mkdir(path, 0777) && errno != EEXIST ? -1 : 0;
}

static int has_data(const struct plot_def *d)
{
    for (size_t i = 0; i < ndata; i++)
        if (!strcmp(data[i].plot, d->name))
            return 1;
    return 0;
}

/* Bars: "label" value spread; lines: one block per series, in order of first appearance. */
static void write_dat(FILE *f, const struct plot_def *d, int *nseries, const char *series[])
{
    *nseries = 0;
    for (size_t i = 0; i < ndata; i++) {
        int known = 0;
        if (strcmp(data[i].plot, d->name) || (d->logy && data[i].y <= 0))
            continue;
        if (d->kind == BARS) {
            fprintf(f, "\"%s\" %.6g %.3f\n", data[i].series, data[i].y, data[i].spread);
            continue;
        }
        for (int s = 0; s < *nseries; s++)
            known |= !strcmp(series[s], data[i].series);
        if (!known && *nseries < 8)
            series[(*nseries)++] = data[i].series;
    }
    for (int s = 0; s < *nseries; s++) {
        fprintf(f, "%s# %s\n", s ? "\n\n" : "", series[s]);
        for (size_t i = 0; i < ndata; i++)
            if (!strcmp(data[i].plot, d->name) && !strcmp(data[i].series, series[s]) && !(d->logy && data[i].y <= 0))
                fprintf(f, "%.6g %.6g\n", data[i].x, data[i].y);
    }
}

static void write_gp(FILE *gp, const struct plot_def *d, int nseries, const char *series[])
{
    double lo = 0, hi = 0;

    for (size_t i = 0; i < ndata; i++)
        if (!strcmp(data[i].plot, d->name) && data[i].y > 0) {
            lo = lo == 0 || data[i].y < lo ? data[i].y : lo;
            hi = data[i].y > hi ? data[i].y : hi;
        }
    fprintf(gp, "\nreset\nset output 'vmstack-%s.png'\nset title \"%s\"\nset xlabel \"%s\"\nset ylabel \"%s\"\n"
                "set grid ytics\nset key top left\n",
            d->name, d->title, d->xlabel, d->ylabel);
    fprintf(gp, "%s", d->logx ? "set logscale x\n" : "");
    /* Log-scale boxes rise from the bottom of the range: keep the smallest bar visible. */
    if (d->logy)
        fprintf(gp, "set logscale y\nset yrange [%g:%g]\n", lo / 4, hi * 4);
    else
        fprintf(gp, "set yrange [0:%g]\n", hi * 1.15);
    if (d->kind == BARS) {
        fprintf(gp, "set style fill solid 0.5 border -1\nset boxwidth 0.6\nset xtics rotate by -20\n"
                    "set offsets 0.5, 0.5, 0, 0\n"
                    "plot 'vmstack-%s.dat' using 0:2:xtic(1) with boxes lc rgb '#4477aa' title \"%s\", \\\n"
                    "     '' using 0:2:(sprintf($2 >= 100 ? '%%.0f' : '%%.1f', $2) . "
                    "($3 >= 0 ? sprintf(\"\\nspread %%.0f%%%%\", 100 * $3) : '')) "
                    "with labels offset 0,1.6 notitle\n",
                d->name, d->legend);
        return;
    }
    fprintf(gp, "set offsets graph 0.02, graph 0.05, 0, 0\nplot ");
    for (int s = 0; s < nseries; s++)
        fprintf(gp, "%s'vmstack-%s.dat' index %d using 1:2 with linespoints lw 2 pt 7 title \"%s\"", s ? ", \\\n     " : "",
                d->name, s, series[s]);
    fprintf(gp, "\n");
}

static FILE *open_in(const char *dir, const char *name)
{
    char path[4096];

    snprintf(path, sizeof path, "%s/%s", dir, name);
    return fopen(path, "w");
}

/* posix_spawn rather than fork: see bench_child_start. */
static int run_gnuplot(const char *dir)
{
    char *argv[] = { "gnuplot", "vmstack-plots.gp", NULL };
    posix_spawn_file_actions_t fa;
    int status, rc;
    pid_t pid;

    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addchdir_np(&fa, dir);
    rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
        fprintf(stderr, "vmstack bench: gnuplot failed on %s/vmstack-plots.gp\n", dir);
        return -1;
    }
    return 0;
}

int bench_plot_write(const char *dir)
{
    FILE *gp;
    int drawn = 0;

    if (make_dir(dir) || !(gp = open_in(dir, "vmstack-plots.gp"))) {
        fprintf(stderr, "vmstack bench: cannot write plots into %s: %s\n", dir, strerror(errno));
        return -1;
    }
    fprintf(gp, "# Plots of 'vmstack bench', drawn from the vmstack-*.dat files next to this script.\n"
                "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {\n"
                "  set terminal pngcairo size 900,560 noenhanced font ',10'\n"
                "} else {\n  set terminal png size 900,560 noenhanced\n}\n");
    for (size_t i = 0; i < NDEFS; i++) {
        const char *series[8];
        char name[64];
        int nseries;
        FILE *f;

        if (!has_data(&defs[i]))
            continue;
        snprintf(name, sizeof name, "vmstack-%s.dat", defs[i].name);
        if (!(f = open_in(dir, name))) {
            fprintf(stderr, "vmstack bench: cannot write %s/%s: %s\n", dir, name, strerror(errno));
            fclose(gp);
            return -1;
        }
        write_dat(f, &defs[i], &nseries, series);
        fclose(f);
        write_gp(gp, &defs[i], nseries, series);
        drawn++;
    }
    fclose(gp);
    if (drawn && run_gnuplot(dir))
        return -1;
    fprintf(stderr, "\nplots: %d PNG file%s in %s (vmstack-*.png; data in vmstack-*.dat, script vmstack-plots.gp)\n",
            drawn, drawn == 1 ? "" : "s", dir);
    return 0;
}
