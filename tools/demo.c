/* SPDX-License-Identifier: MIT */
/*
 * 'vmstack demo': the showcase on built-in defaults.  Every figure it prints
 * is measured in this run.
 */
#include "cmd.h"
#include "proc.h"
#include "vmstack.h"

#include <signal.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>

#define DEMO_STACKS 100000
#define DEMO_FIBERS 100000
#define DEMO_WAVE 20000       /* fibers alive at once */
#define DEMO_YIELDS 3

static void help(void)
{
    printf("usage: vmstack demo\n\n"
           "Shows vmstack at work on its built-in defaults (and VMSTACK_* settings):\n"
           "allocates %d guarded stacks and counts the VMAs and memory they cost,\n"
           "frees them through the per-CPU caches and the pool, and proves in a child\n"
           "process that the byte below and above a stack faults.  Then runs %d fibers,\n"
           "%d alive at once, one of which recurses without end: its overflow is\n"
           "reported like a kernel oops (on stderr), only that fiber is killed, and the\n"
           "others finish.\n",
           DEMO_STACKS, DEMO_FIBERS, DEMO_WAVE);
}

static const char *mode_note(vms_guard_mode m)
{
    switch (m) {
    case VMS_GUARD_MADVISE: return "MADV_GUARD_INSTALL: page-table markers, no memory, no extra VMA";
    case VMS_GUARD_MPROTECT: return "mprotect(PROT_NONE): two VMAs per stack";
    case VMS_GUARD_NONE: return "NO GUARDS: unsafe, for measurement only";
    default: return "";
    }
}

static int alloc_many(vms_stack *st, long n, long *got)
{
    for (*got = 0; *got < n; (*got)++) {
        if (vms_stack_alloc(&st[*got], 0)) {
            printf("  stopped after %ld stacks: %s\n", *got, vms_last_error());
            return -1;
        }
        ((char *)vms_stack_top(&st[*got]))[-64] = 1;
    }
    return 0;
}

static void show_allocation(vms_stack *st, long n)
{
    long vmas0 = proc_vmas(), rss0 = proc_rss(), got;
    vms_stats s;

    printf("\n1. allocate %ld stacks of the default size, each written on one page\n", n);
    alloc_many(st, n, &got);
    vms_stats_get(&s);
    printf("  %ld stacks live: %zu chunks mapped, VMAs +%ld, RSS +%.1f MiB (%ld bytes per stack)\n", got, s.chunks,
           proc_vmas() - vmas0, (double)(proc_rss() - rss0) / (1 << 20), got ? (proc_rss() - rss0) / got : 0);
    printf("  address space: %.1f GiB reserved, %.1f GiB mapped; a stack is %zu KiB + %zu KiB guard\n",
           (double)s.reserved_bytes / (1 << 30), (double)s.mapped_bytes / (1 << 30), st[0].size >> 10,
           st[0].guard_size >> 10);
    printf("\n2. free them all\n");
    for (long i = 0; i < got; i++)
        vms_stack_free(&st[i]);
    vms_stats_get(&s);
    printf("  %zu kept warm in per-CPU caches, %zu warm in the pool, %zu returned to the kernel "
           "in %lu batched madvise calls\n",
           s.cached, s.pooled_warm, s.pooled_cold, (unsigned long)s.release_calls);
    printf("  double free of the first stack: %s\n", vms_stack_free(&st[0]) ? vms_last_error() : "accepted (BUG)");
}

/* Touches addr in a child: returns the signal that killed it, or 0. */
static int touch_in_child(volatile char *addr)
{
    int status;
    pid_t pid;

    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        *addr = 1;
        _exit(0);
    }
    if (pid < 0 || waitpid(pid, &status, 0) < 0)
        return -1;
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

static void show_guards(void)
{
    vms_stack st;
    int below, above;

    printf("\n3. a guard hit, caught in a child process\n");
    if (vms_stack_alloc(&st, 0)) {
        printf("  %s\n", vms_last_error());
        return;
    }
    below = touch_in_child((char *)st.base - 1);
    above = touch_in_child((char *)vms_stack_top(&st));
    printf("  write to the byte below stack %p: child %s\n", st.base,
           below > 0 ? strsignal(below) : "not killed (no guard)");
    printf("  write to the byte above its top %p: child %s\n", vms_stack_top(&st),
           above > 0 ? strsignal(above) : "not killed (no guard)");
    vms_stack_free(&st);
}

/* A worker: a little recursion, a few turns, a result its joiner can check. */
__attribute__((noinline)) static uint64_t mix(uint64_t x, int depth)
{
    volatile char frame[64];

    frame[0] = (char)x;
    return depth ? mix(x * 6364136223846793005ull + 1442695040888963407ull, depth - 1) + frame[0] : x;
}

static void *worker(void *arg)
{
    uint64_t id = (uint64_t)(uintptr_t)arg;

    for (int i = 0; i < DEMO_YIELDS; i++)
        vms_yield();
    return (void *)(uintptr_t)mix(id, 16);
}

/* Recursion without (practical) end: 512 bytes a level until the guard stops it. */
static volatile int runaway_limit = 1 << 30;

__attribute__((noinline)) static int runaway(int n)
{
    volatile char frame[512];

    frame[0] = (char)n;
    return n > runaway_limit ? n : runaway(n + 1) + frame[0];
}

static void *overflower(void *arg)
{
    (void)arg;
    vms_yield();
    return (void *)(intptr_t)runaway(0);
}

struct fiber_tally {
    long finished, killed, wrong;
};

static void join_wave(vms_fiber *f, long n, long first, long bad, struct fiber_tally *t)
{
    for (long i = 0; i < n; i++) {
        vms_fiber_status st;
        if (vms_fiber_join(f[i], &st)) {
            t->wrong++;
            continue;
        }
        if (st.end == VMS_FIBER_KILLED_OVERFLOW)
            t->killed++;
        else if (st.end == VMS_FIBER_RETURNED && first + i != bad &&
                 (uint64_t)(uintptr_t)st.result == mix((uint64_t)(first + i), 16))
            t->finished++;
        else
            t->wrong++;
    }
}

static int run_wave(vms_fiber *f, long n, long first, long bad)
{
    char name[32];

    for (long i = 0; i < n; i++) {
        vms_fiber_opts o = { .name = name };
        snprintf(name, sizeof name, first + i == bad ? "runaway-%ld" : "worker-%ld", first + i);
        if (vms_fiber_spawn(&f[i], first + i == bad ? overflower : worker, (void *)(uintptr_t)(first + i), &o)) {
            printf("  spawn of fiber %ld failed: %s\n", first + i, vms_last_error());
            return -1;
        }
    }
    return vms_run();
}

static int show_fibers(void)
{
    vms_fiber *f = calloc(DEMO_WAVE, sizeof *f);
    struct fiber_tally t = { 0 };
    long bad = DEMO_FIBERS / 2 + 7, vmas0 = proc_vmas(), waves = 0;
    vms_sched_stats ss;
    vms_stats s;

    if (!f)
        return -1;
    printf("\n4. %d fibers in waves of %d, each yielding %d times; fiber %ld recurses without end\n",
           DEMO_FIBERS, DEMO_WAVE, DEMO_YIELDS, bad);
    fflush(stdout);
    for (long first = 0; first < DEMO_FIBERS; first += DEMO_WAVE, waves++) {
        if (run_wave(f, DEMO_WAVE, first, bad)) {
            free(f);
            return -1;
        }
        join_wave(f, DEMO_WAVE, first, bad, &t);
    }
    free(f);
    vms_sched_stats_get(&ss);
    vms_stats_get(&s);
    printf("  %llu fibers spawned, at most %zu alive at once, %llu context switches\n",
           (unsigned long long)ss.spawned, ss.peak_live, (unsigned long long)ss.switches);
    printf("  stacks: %zu slots in all, VMAs +%ld since the fibers started; %llu overflow caught\n", s.slots,
           proc_vmas() - vmas0, (unsigned long long)s.overflows);
    if (t.wrong)
        printf("  %ld fibers ended wrongly\n", t.wrong);
    printf("demo: %ld fibers finished, %ld killed by stack overflow\n", t.finished, t.killed);
    return t.wrong || t.killed != 1 ? -1 : 0;
}

static int no_option(void *ctx, int opt, const char *v)
{
    (void)ctx, (void)opt, (void)v;
    return CMD_USAGE;
}

int cmd_demo(int argc, char **argv)
{
    static const struct option none[] = {{0}};
    static const struct cmd_parser parser = { "demo", none, false, no_option, NULL };
    vms_stack *st;
    int first, rc;

    if ((rc = cmd_options(&parser, argc, argv, &first)) == CMD_HELP) {
        help();
        return CMD_OK;
    }
    if (rc)
        return rc;
    if (first < argc)
        return cmd_usage_error("demo", "unexpected argument '%s'", argv[first]);
    if (vms_init(NULL)) {
        fprintf(stderr, "vmstack demo: %s\n", vms_last_error());
        return CMD_FAIL;
    }
    printf("vmstack demo: virtually mapped stacks, after the kernel's CONFIG_VMAP_STACK\n");
    printf("guard mode: %s (%s)\n", vms_guard_mode_name(vms_guard_mode_active()),
           mode_note(vms_guard_mode_active()));
    st = calloc(DEMO_STACKS, sizeof *st);
    if (!st) {
        fprintf(stderr, "vmstack demo: out of memory\n");
        return CMD_FAIL;
    }
    show_allocation(st, DEMO_STACKS);
    free(st);
    show_guards();
    return show_fibers() ? CMD_FAIL : CMD_OK;
}
