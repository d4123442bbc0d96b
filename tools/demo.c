/*
 * 'vmstack demo': the showcase on built-in defaults.  Every figure it prints
 * is measured in this run.
 */
#include "cmd.h"
#include "proc.h"
#include "vmstack.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define DEMO_STACKS 100000

static void help(void)
{
    printf("usage: vmstack demo\n\n"
           "Shows vmstack at work on its built-in defaults (and VMSTACK_* settings):\n"
           "allocates %d guarded stacks and counts the VMAs and memory they cost,\n"
           "frees them through the per-CPU caches and the pool, and proves in a child\n"
           "process that the byte below and above a stack faults.\n",
           DEMO_STACKS);
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

int cmd_demo(int argc, char **argv)
{
    vms_stack *st;

    if (cmd_wants_help(argc, argv)) {
        help();
        return CMD_OK;
    }
    if (argc > 1)
        return cmd_usage_error("demo", "unexpected argument '%s'", argv[1]);
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
    return CMD_OK;
}
