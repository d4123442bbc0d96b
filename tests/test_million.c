/* SPDX-License-Identifier: MIT */
/*
 * A million live 64 KiB stacks, each written on one page.  With guard
 * markers (madvise mode) they cost a few VMAs in all; in mprotect mode the
 * allocator stops at the VMA limit with an error that names the limit and
 * the fix, and keeps working: free, allocate again.
 */
#include "check.h"
#include "proc.h"
#include "vmstack.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MILLION 1000000L
#define STACK (64 << 10)
#define VMA_MSG "vm.max_map_count (%ld) reached: use Linux >= 6.13 guard regions or raise the sysctl"

static long max_map_count(void)
{
    long v = -1;
    FILE *f = fopen("/proc/sys/vm/max_map_count", "r");

    CHECK(f && fscanf(f, "%ld", &v) == 1);
    fclose(f);
    return v;
}

/* Not through ASan's shadow: a million shadow pages would double the test's memory. */
__attribute__((no_sanitize_address)) static void touch(vms_stack *st)
{
    *(volatile long *)((char *)vms_stack_top(st) - 64) = st->id + 1;
}

static long fill(vms_stack *st, long n, int *err)
{
    long i;

    *err = 0;
    for (i = 0; i < n; i++) {
        if ((*err = vms_stack_alloc(&st[i], STACK)))
            break;
        touch(&st[i]);
    }
    return i;
}

static void free_all(vms_stack *st, long n)
{
    for (long i = 0; i < n; i++)
        CHECK_EQ(vms_stack_free(&st[i]), 0);
}

/* A process holding a million stacks can still fork (no commit charge for them). */
static void check_fork(void)
{
    int status;
    pid_t pid = fork();

    if (pid == 0)
        _exit(7);
    if (pid < 0)
        perror("fork with a million live stacks");
    CHECK(pid > 0);
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 7);
}

static void madvise_mode(vms_stack *st)
{
    long vmas0 = proc_vmas(), rss0 = proc_rss(), got, vmas;
    int err;

    got = fill(st, MILLION, &err);
    if (err)
        fprintf(stderr, "allocation %ld failed: %s\n", got, vms_last_error());
    CHECK_EQ(got, MILLION);
    vmas = proc_vmas() - vmas0;
    printf("madvise: %ld live stacks, VMAs added %ld, RSS per stack %ld bytes\n", got, vmas,
           (proc_rss() - rss0) / got);
    CHECK(vmas < 100);
    check_fork();
    for (long i = 0; i < got; i += 9973)
        CHECK_EQ(*(long *)((char *)vms_stack_top(&st[i]) - 64), st[i].id + 1);
    free_all(st, got);
}

/* Moves the thread to cpu (modulo the CPUs it may use). */
static void pin_to_cpu(int cpu)
{
    cpu_set_t allowed, one;

    CHECK_EQ(sched_getaffinity(0, sizeof allowed, &allowed), 0);
    cpu %= CPU_COUNT(&allowed);
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed) && cpu-- == 0) {
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            CHECK_EQ(sched_setaffinity(0, sizeof one, &one), 0);
            return;
        }
}

static void mprotect_mode(vms_stack *st)
{
    long got, again;
    int err;
    char want[160];
    vms_stats before, after;

    got = fill(st, MILLION, &err);
    printf("mprotect: stopped after %ld stacks: %s\n", got, vms_last_error());
    CHECK_EQ(err, -ENOMEM);
    CHECK(got > 1000 && got < max_map_count() / 2);
    snprintf(want, sizeof want, VMA_MSG, max_map_count());
    CHECK(strcmp(vms_last_error(), want) == 0);
    /* Still working: free half, allocate them again (from another CPU, so
       that stacks left in the first CPU's cache must be found), then all. */
    vms_stats_get(&before);
    pin_to_cpu(0);
    free_all(st, got / 2);
    pin_to_cpu(1);
    again = fill(st, got / 2, &err);
    CHECK_EQ(err, 0);
    CHECK_EQ(again, got / 2);
    vms_stats_get(&after);
    CHECK_EQ(after.slots, before.slots); /* reused, none stranded in a cache */
    free_all(st, got);
    again = fill(st, got, &err);
    CHECK_EQ(again, got);
    free_all(st, got);
    printf("mprotect: freed and allocated %ld stacks again\n", got);
}

int main(void)
{
    vms_stack *st = calloc(MILLION, sizeof *st);

    CHECK(st);
    CHECK_EQ(vms_init(NULL), 0);
    switch (vms_guard_mode_active()) {
    case VMS_GUARD_MADVISE:
        madvise_mode(st);
        break;
    case VMS_GUARD_MPROTECT:
        mprotect_mode(st);
        break;
    default:
        printf("guard mode %s: nothing to test\n", vms_guard_mode_name(vms_guard_mode_active()));
        break;
    }
    free(st);
    return 0;
}
