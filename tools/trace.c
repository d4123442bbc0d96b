/* SPDX-License-Identifier: MIT */
/*
 * 'vmstack trace [options] -- PROG ARGS': 'vmstack run' plus the stack
 * tracer.  The program runs under libvmstack-preload.so as with 'run'
 * (which does the checking and the exec: this command hands it its
 * options and its own name, for run's messages), with VMSTACK_RUN_TRACE=1,
 * which run sets for it, so that every thread and the main
 * one get a tripwire window below their deepest stack page and a scan of
 * their dead stack when they end (src/trace/trace.c, deadstack.c), and
 * the report at exit adds each thread's deepest call chain in the
 * kernel's "Depth Size Location" format.
 */
#include "cmd.h"
#include "core/internal.h"

#include <stdlib.h>
#include <string.h>

static void help(void)
{
    printf("usage: vmstack trace [OPTIONS] [--] PROG [ARGS...]\n\n"
           "Runs an unmodified, dynamically linked program as 'vmstack run' does, and\n"
           "records the deepest call chain of every thread, the main one included,\n"
           "printed at exit after the usage table in the format of the kernel's stack\n"
           "tracer (Depth, Size, Location: function+offset/size [module] file:line).\n"
           "No recompilation: a tripwire window (at least the guard's size) below the\n"
           "deepest stack page touched so far faults on deeper use, the chain is\n"
           "unwound from there and the window moves down; when a thread ends (or at\n"
           "exit) its dead stack, zeroed when tracing began, gives the exact depth and\n"
           "the chain still there, marked partial where later calls overwrote it.\n"
           "Depths are exact to the word (the deepest stack pointer); frame sizes are\n"
           "exact (differences of canonical frame addresses, return address included,\n"
           "as gcc -fstack-usage counts).  Recursion is folded.  The program sees no\n"
           "difference; the exit status is the program's.\n\n"
           "Options:\n"
           "  --warn-frame BYTES    report each function seen with a frame above BYTES\n"
           "                        once, with the chain that reached it\n"
           "  --warn-depth PERCENT  warn (at once, on stderr) when a thread passes\n"
           "                        PERCENT of its stack\n"
           "  --max-tasks N         trace up to N tasks (threads, fibers) at once\n"
           "                        (default 4096); the table counts those left out\n"
           "  --all-lines           file:line also from separately installed debug files\n"
           "                        (/usr/lib/debug; 0.1-0.2 s per library at exit);\n"
           "                        by default only from modules built with -g\n"
           "  --json                the usage table and the chains as one JSON object\n"
           "                        (chains under \"trace\", frames unfolded)\n"
           "  --folded FILE         also write every chain to FILE (- for stdout) as\n"
           "                        folded stacks, rooted at its thread, weighted by\n"
           "                        bytes (\"thread 'T' (tid N);a;b;c BYTES\": a frame's\n"
           "                        width is the depth from it down), recursion folded\n"
           "                        as in the report (\"f [xN]\"), for flamegraph.pl,\n"
           "                        speedscope and other flame graph tools\n"
           "  --flamegraph FILE.svg also draw every chain into FILE.svg (- for stdout):\n"
           "                        an interactive flame graph for any browser, frame\n"
           "                        widths by bytes; click zooms, Ctrl-F searches\n"
           "  --guard SIZE, --stack-size SIZE, --output FILE, --report-signal SIG,\n"
           "  --allow-unprotected, --plot FILE.png|.svg, -q/--quiet\n"
           "                        as for 'vmstack run' (see 'vmstack run --help')\n\n"
           "man vmstack-trace(1) has the details.\n");
}

struct trace_args {
    const char *warn_frame, *warn_depth, *max_tasks;
    char **run_argv; /* "trace", the options for run, "--", PROG ARGS... */
    int run_argc;
    bool help, all_lines;
};

static int check_args(const struct trace_args *a)
{
    size_t n;
    char *end;
    long pct;

    if (a->warn_frame && (vms__parse_size(a->warn_frame, &n) || n == 0))
        return cmd_usage_error("trace", "--warn-frame %s: not a positive number of bytes", a->warn_frame);
    if (a->max_tasks) {
        long n = strtol(a->max_tasks, &end, 10);
        if (!*a->max_tasks || *end || n < 1 || n > 1 << 20)
            return cmd_usage_error("trace", "--max-tasks %s: not a number of tasks from 1 to 1048576", a->max_tasks);
    }
    if (a->warn_depth) {
        pct = strtol(a->warn_depth, &end, 10);
        if (!*a->warn_depth || *end || pct < 1 || pct > 100)
            return cmd_usage_error("trace", "--warn-depth %s: not a percentage from 1 to 100", a->warn_depth);
    }
    return 0;
}

enum { OPT_WARN_FRAME = 256, OPT_WARN_DEPTH, OPT_MAX_TASKS, OPT_ALL_LINES, OPT_JSON, OPT_GUARD, OPT_STACK_SIZE, OPT_REPORT_SIGNAL,
       OPT_ALLOW_UNPROTECTED, OPT_FOLDED, OPT_PLOT, OPT_FLAMEGRAPH };

/* Ours, then the options of 'run', which go on to it as they came. */
static const struct option trace_options[] = {
    {"warn-frame", required_argument, NULL, OPT_WARN_FRAME},
    {"warn-depth", required_argument, NULL, OPT_WARN_DEPTH},
    {"max-tasks", required_argument, NULL, OPT_MAX_TASKS},
    {"all-lines", no_argument, NULL, OPT_ALL_LINES},
    {"json", no_argument, NULL, OPT_JSON},
    {"guard", required_argument, NULL, OPT_GUARD},
    {"stack-size", required_argument, NULL, OPT_STACK_SIZE},
    {"output", required_argument, NULL, 'o'},
    {"report-signal", required_argument, NULL, OPT_REPORT_SIGNAL},
    {"allow-unprotected", no_argument, NULL, OPT_ALLOW_UNPROTECTED},
    {"folded", required_argument, NULL, OPT_FOLDED},
    {"flamegraph", required_argument, NULL, OPT_FLAMEGRAPH},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"quiet", no_argument, NULL, 'q'},
    {0},
};

static int on_option(void *ctx, int opt, const char *v)
{
    struct trace_args *a = ctx;
    const struct option *o = trace_options;
    char *arg;

    switch (opt) {
    case OPT_WARN_FRAME:
        a->warn_frame = v;
        return 0;
    case OPT_WARN_DEPTH:
        a->warn_depth = v;
        return 0;
    case OPT_MAX_TASKS:
        a->max_tasks = v;
        return 0;
    case OPT_ALL_LINES:
        a->all_lines = true;
        return 0;
    case OPT_JSON:
        /* 'run --json': the usage table as JSON, the chains in it under "trace". */
        a->run_argv[a->run_argc++] = "--json";
        return 0;
    case OPT_ALLOW_UNPROTECTED:
        a->run_argv[a->run_argc++] = (char *)"--allow-unprotected";
        return 0;
    case 'q':
        a->run_argv[a->run_argc++] = (char *)"--quiet";
        return 0;
    }
    while (o->val != opt)
        o++;
    if (asprintf(&arg, "--%s=%s", o->name, v) < 0)
        return CMD_FAIL;
    a->run_argv[a->run_argc++] = arg;
    return 0;
}

static int parse(int argc, char **argv, struct trace_args *a)
{
    int i, rc;

    a->run_argv = calloc((size_t)argc + 2, sizeof *a->run_argv);
    if (!a->run_argv)
        return CMD_FAIL;
    a->run_argv[a->run_argc++] = "trace"; /* run's messages name trace, and it sets VMSTACK_RUN_TRACE */
    rc = cmd_options("trace", argc, argv, trace_options, true, on_option, a, &i);
    if (rc == CMD_HELP) {
        a->help = true;
        return 0;
    }
    if (rc)
        return rc;
    if (i >= argc)
        return cmd_usage_error("trace", "no program given");
    a->run_argv[a->run_argc++] = "--";
    while (i < argc)
        a->run_argv[a->run_argc++] = argv[i++];
    return check_args(a);
}

/* The copies on_option made ("--name=value"; the other options are literals), then the array. */
static void args_free(struct trace_args *a)
{
    for (int i = 1; a->run_argv && i < a->run_argc && strcmp(a->run_argv[i], "--"); i++)
        if (strchr(a->run_argv[i], '='))
            free(a->run_argv[i]);
    free(a->run_argv);
}

int cmd_trace(int argc, char **argv)
{
    struct trace_args a = {0};
    size_t frame = 0;
    char buf[32];
    int rc;

    /* A wrapper's own failures are 125, as run's (see run.c). */
    if ((rc = parse(argc, argv, &a)) || a.help) {
        if (!rc)
            help();
        args_free(&a);
        return rc ? 125 : CMD_OK;
    }
    if (a.warn_frame)
        vms__parse_size(a.warn_frame, &frame);
    snprintf(buf, sizeof buf, "%zu", frame);
    if (setenv("VMSTACK_TRACE_WARN_FRAME", buf, 1) ||
        setenv("VMSTACK_TRACE_WARN_DEPTH", a.warn_depth ? a.warn_depth : "0", 1) ||
        setenv("VMSTACK_TRACE_ALL_LINES", a.all_lines ? "1" : "0", 1) ||
        setenv("VMSTACK_TRACE_MAX_TASKS", a.max_tasks ? a.max_tasks : "0", 1)) {
        cmd_say("vmstack trace: out of memory for the environment\n");
        args_free(&a);
        return 125;
    }
    rc = cmd_run(a.run_argc, a.run_argv);
    args_free(&a);
    return rc;
}
