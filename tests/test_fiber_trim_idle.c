/* SPDX-License-Identifier: MIT */
/*
 * A trim costs nothing when there is nothing to trim: 1,000 fibers park,
 * a first vms_fiber_trim(0) gives back the stack below each one's stack
 * pointer, and a second, with none of them run since, makes no system
 * call at all.  Woken and parked again, each is trimmed once more (once
 * per wait).  The system calls are counted by a tracer (the test's parent,
 * with ptrace), between two marker calls around each trim.
 */
#include "check.h"
#include "vmstack.h"

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIBERS 1000
#define MARK SYS_getppid /* a call neither vmstack nor the C library makes here */

static vms_fiber fibers[FIBERS];
static int rounds_left;

static void *idler(void *arg)
{
    (void)arg;
    while (rounds_left)
        CHECK_EQ(vms_fiber_park(), 0);
    return NULL;
}

/* One trim between two marks, for the tracer to count what it calls. */
static long traced_trim(void)
{
    long n;

    syscall(MARK);
    n = vms_fiber_trim(0);
    syscall(MARK);
    return n;
}

static void wake_all(void)
{
    for (int i = 0; i < FIBERS; i++)
        CHECK_EQ(vms_fiber_wake(fibers[i]), 0);
}

static void *controller(void *arg)
{
    long *trimmed = arg;

    trimmed[0] = traced_trim();
    trimmed[1] = traced_trim();
    wake_all();
    CHECK_EQ(vms_yield(), 0); /* every idler runs, and parks again */
    trimmed[2] = traced_trim();
    rounds_left = 0;
    wake_all();
    return NULL;
}

/* The traced side: the fibers, and the trims' results. */
static int child(void)
{
    long trimmed[3];
    vms_fiber c;

    CHECK_EQ(vms_init(NULL), 0);
    raise(SIGSTOP); /* the tracer looks from here on */
    rounds_left = 1;
    for (int i = 0; i < FIBERS; i++)
        CHECK_EQ(vms_fiber_spawn(&fibers[i], idler, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&c, controller, trimmed, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(c, NULL), 0);
    for (int i = 0; i < FIBERS; i++)
        CHECK_EQ(vms_fiber_join(fibers[i], NULL), 0);
    printf("fibers trimmed: first trim %ld, second %ld, after a wake and a park %ld\n", trimmed[0], trimmed[1],
           trimmed[2]);
    CHECK_EQ(trimmed[0], FIBERS);
    CHECK_EQ(trimmed[1], 0);
    CHECK_EQ(trimmed[2], FIBERS);
    return 0;
}

/* Counts the child's system calls between marks, per window, until it exits; its exit status. */
static int trace(pid_t pid, long *calls, int windows)
{
    int status, window = -1;
    bool inside = false;

    CHECK_EQ(waitpid(pid, &status, 0), pid);
    CHECK(WIFSTOPPED(status));
    CHECK_EQ(ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL), 0);
    for (;;) {
        struct __ptrace_syscall_info info;
        int sig = 0;

        CHECK_EQ(ptrace(PTRACE_SYSCALL, pid, 0, sig), 0);
        CHECK_EQ(waitpid(pid, &status, 0), pid);
        if (WIFEXITED(status) || WIFSIGNALED(status))
            return status;
        if (WSTOPSIG(status) != (SIGTRAP | 0x80))
            continue; /* a signal of its own: none is expected, and it is not passed on */
        CHECK(ptrace(PTRACE_GET_SYSCALL_INFO, pid, sizeof info, &info) > 0);
        if (info.op != PTRACE_SYSCALL_INFO_ENTRY)
            continue;
        if (info.entry.nr == MARK) {
            if ((inside = !inside))
                window++;
        } else if (inside) {
            CHECK(window < windows);
            calls[window]++;
        }
    }
}

int main(void)
{
    long calls[3] = { 0 };
    int status;
    pid_t pid;

    fflush(NULL);
    if ((pid = fork()) == 0) {
        CHECK_EQ(ptrace(PTRACE_TRACEME, 0, 0, 0), 0);
        return child();
    }
    CHECK(pid > 0);
    status = trace(pid, calls, 3);
    printf("system calls: first trim %ld, second %ld, after a wake and a park %ld\n", calls[0], calls[1], calls[2]);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK_EQ(calls[0], FIBERS);
    CHECK_EQ(calls[1], 0);
    CHECK_EQ(calls[2], FIBERS);
    return 0;
}
