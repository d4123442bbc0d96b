/* SPDX-License-Identifier: MIT */
/*
 * 'vmstack trace [options] -- PROG ARGS': 'vmstack run' plus the stack
 * tracer.  The program runs under libvmstack-preload.so as with 'run'
 * (run_main parses, checks and execs, with this file's options added to
 * run's), with VMSTACK_RUN_TRACE=1, so that every thread and the main one
 * get a tripwire window below their deepest stack page and a scan of
 * their dead stack when they end (src/trace/trace.c, deadstack.c), and
 * the report at exit adds each thread's deepest call chain in the
 * kernel's "Depth Size Location" format.
 */
#include "run.h"
#include "core/internal.h"

#include <stdlib.h>

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
           "                        (default 16384); the table counts those left out\n"
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

static int check_warn_frame(struct run_args *a, const char *v)
{
    if (vms__parse_size(v, &a->warn_frame_bytes) || a->warn_frame_bytes == 0)
        return cmd_usage_error(a->sub, "--warn-frame %s: not a positive number of bytes", v);
    return 0;
}

static int check_warn_depth(struct run_args *a, const char *v)
{
    char *end;
    long pct = strtol(v, &end, 10);

    if (!*v || *end || pct < 1 || pct > 100)
        return cmd_usage_error(a->sub, "--warn-depth %s: not a percentage from 1 to 100", v);
    return 0;
}

static int check_max_tasks(struct run_args *a, const char *v)
{
    char *end;
    long n = strtol(v, &end, 10);

    if (!*v || *end || n < 1 || n > 1 << 20)
        return cmd_usage_error(a->sub, "--max-tasks %s: not a number of tasks from 1 to 1048576", v);
    return 0;
}

/* What trace adds to run's options (run.c), which it has all. */
const struct run_option trace_options[] = {
    RUN_ARG("warn-frame", TRACE_OPT_WARN_FRAME, warn_frame, check_warn_frame),
    RUN_ARG("warn-depth", TRACE_OPT_WARN_DEPTH, warn_depth, check_warn_depth),
    RUN_ARG("max-tasks", TRACE_OPT_MAX_TASKS, max_tasks, check_max_tasks),
    RUN_FLAG("all-lines", TRACE_OPT_ALL_LINES, all_lines),
    RUN_ARG("folded", TRACE_OPT_FOLDED, folded, NULL),
    RUN_ARG("flamegraph", TRACE_OPT_FLAMEGRAPH, flamegraph, NULL),
    {{0}, 0, NULL},
};

int cmd_trace(int argc, char **argv)
{
    struct run_args a = { .sub = "trace", .trace = true };

    return run_main(argc, argv, &a, help);
}
