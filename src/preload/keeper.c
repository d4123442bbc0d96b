/* SPDX-License-Identifier: MIT */
/*
 * The keeper: the table of a program that ends without its exit handlers
 * (Go's runtime ends with a raw exit_group; abort; a signal's default
 * action; SIGKILL).  The table measures the threads' stacks, which go
 * with the program's memory, and nothing tells a process that it is about
 * to be gone.  So the process 'vmstack run' started gets a keeper: a task
 * that shares its memory but not its thread group (clone with CLONE_VM,
 * not CLONE_THREAD).  exit_group and fatal signals end the program's
 * threads, not the keeper, and the memory lives as long as the keeper
 * does.  It is the launcher's child (CLONE_PARENT), never the program's,
 * so the program's wait() cannot see it.  It sleeps on a futex in the
 * memory shared with the launcher (runshm.h) until the launcher has
 * reaped the program; then, the only task left in that memory, it makes
 * the table as the exit handlers would have, and ends.  When the exit
 * handlers did make it, it just ends.
 *
 * While the program runs, the keeper shares the TLS pointer of the thread
 * that made it: it makes raw system calls only (no errno, no TLS) and
 * touches nothing else.  Once the program is gone, it uses the library
 * much as a forked child would, on the memory as the killed threads left
 * it: a lock one of them held stays held (malloc's, say), so the launcher
 * gives it a time limit and says so when it is not met.  It holds no
 * descriptor (it closes its copies first), blocks every signal, leaves
 * no core file, and dies with the launcher.  Its name is vmstack-keeper;
 * its command line, read from the memory it shares, is the program's.
 * When the program execs, the new image's keeper replaces it (runshm.h:
 * generation).
 *
 * Not made: under valgrind, whose guest cannot clone a task that shares
 * memory outside its thread group (and says so on stderr), nor where
 * clone refuses (qemu-user, the init of a PID namespace): then the table
 * needs the exit handlers, as before, and the launcher says when they did
 * not run.
 */
#include "arch/arch.h"
#include "core/internal.h"
#include "core/sanitizer.h"
#include "preload/preload.h"
#include "preload/runshm.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h> /* sigabbrev_np */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Its own frames only: the table is made on a side stack of its own (runtable.c). */
#define KEEPER_STACK ((size_t)64 << 10)

struct keeper {
    struct vms_run_shm *m;
    uint32_t generation;
    pid_t program, launcher;
    int *tid; /* glibc's record of the main thread's tid: the kernel zeroes it as the thread ends */
    char name[16]; /* the main thread's, for the table: the keeper's own name is its job's */
};

static struct keeper kept; /* read by the keeper: in the memory it shares */

static long sys(long nr, long a, long b, long c, long d)
{
    return vms__arch_syscall4(nr, a, b, c, d);
}

static _Noreturn void keeper_exit(void)
{
    for (;;)
        sys(SYS_exit, 0, 0, 0, 0);
}

/* Raw system calls only, until the launcher says the program is gone: true then, false for a newer image's keeper. */
static bool sleep_until_the_end(const struct keeper *k)
{
    for (;;) {
        uint32_t e = atomic_load(&k->m->events);

        if (atomic_load(&k->m->generation) != k->generation)
            return false;
        if (atomic_load(&k->m->ended))
            return true;
        sys(SYS_futex, (long)&k->m->events, FUTEX_WAIT, (long)e, 0);
    }
}

/* What the table's header says of the end, from the program's wait status. */
static void end_of(int status, char *why, size_t n)
{
    if (WIFSIGNALED(status))
        snprintf(why, n, "death by SIG%s", sigabbrev_np(WTERMSIG(status)));
    else
        snprintf(why, n, "exit_group");
}

static int keeper_main(void *arg)
{
    const struct keeper *k = arg;
    struct rlimit none = {0, 0};
    char why[32];

    sys(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0);
    sys(SYS_prctl, PR_SET_NAME, (long)"vmstack-keeper", 0, 0); /* for ps and pgrep: not the program */
    if (sys(SYS_getppid, 0, 0, 0, 0) != k->launcher)
        keeper_exit(); /* the launcher is gone already */
    sys(SYS_close_range, 0, ~0u, 0, 0);
    sys(SYS_prlimit64, 0, RLIMIT_CORE, (long)&none, 0);
    if (!sleep_until_the_end(k) || atomic_load(&k->m->table_done))
        keeper_exit();
    /*
     * The program's threads are gone: from here on, the library, as the
     * main thread whose TLS this is.  glibc's locks compare their owner
     * with that thread's tid, so it must not be the 0 left at its end.
     */
    if (k->tid)
        *k->tid = k->program;
    end_of(k->m->end_status, why, sizeof why);
    vms__out_adopt();
    vms__run_keeper_table(k->program, k->name, why);
    keeper_exit();
}

void vms__keeper_start(void)
{
    struct vms_run_shm *m = vms__out_shm();
    size_t guard = vms__g.page;
    sigset_t all, old;
    char *stack;
    pid_t pid;

    if (!m)
        return;
    /* The last image's keeper, if any, sees the new generation and ends: its memory is gone. */
    kept.generation = atomic_fetch_add(&m->generation, 1) + 1;
    atomic_store(&m->keeper, 0);
    atomic_fetch_add(&m->events, 1);
    syscall(SYS_futex, &m->events, FUTEX_WAKE, INT32_MAX);
    if (vms__san_on_valgrind() || !(stack = vms__os_reserve(guard + KEEPER_STACK)))
        return;
    if (vms__os_commit(stack + guard, KEEPER_STACK)) {
        vms__os_release(stack, guard + KEEPER_STACK);
        return;
    }
    kept.m = m;
    kept.program = getpid();
    kept.launcher = getppid();
    if (prctl(PR_GET_TID_ADDRESS, &kept.tid) || (kept.tid && *kept.tid != kept.program))
        kept.tid = NULL;
    prctl(PR_GET_NAME, kept.name);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = clone(keeper_main, stack + guard + KEEPER_STACK, CLONE_VM | CLONE_PARENT | CLONE_UNTRACED, &kept);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        vms__os_release(stack, guard + KEEPER_STACK);
        return;
    }
    atomic_store(&m->keeper, pid);
}
