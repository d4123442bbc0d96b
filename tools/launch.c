/* SPDX-License-Identifier: MIT */
/*
 * The launcher of 'vmstack run' and 'vmstack trace': it forks the program
 * and stays, so that the table is written however the program ends.  The
 * program's exit handlers leave the table in memory shared with the
 * launcher (src/preload/runshm.h); the launcher writes it, and the
 * overflow reports that could not go to the program's fd 2, once the
 * program has ended, to its own stderr (the program's as it was at start)
 * or to --output FILE, which it replaces (src/preload/outfile.c).  When
 * no exit handler ran (exit_group, a signal, SIGKILL), the program's
 * keeper makes the table from the memory the program left; without a
 * keeper, the launcher says so and why.
 * Then it ends as the program ended: its exit status, or death by its
 * signal (with no core file of the launcher's own).
 *
 * While it waits, the launcher passes on to the program the signals sent
 * to it (kill, timeout(1)); those the terminal sends reach the program in
 * its process group anyway and are not passed twice.  The program gets
 * the signal mask and SIGCHLD disposition the launcher was started with.
 */
#include "cmd.h"
#include "runpost.h"
#include "preload/outfile.h"
#include "preload/runshm.h"

#include <errno.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The signals passed on: all but those that stop or are about this process's own faults. */
static void passed_on(sigset_t *set)
{
    static const int not_passed[] = {SIGKILL, SIGSTOP, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS,
                                     SIGTSTP, SIGTTIN, SIGTTOU};

    sigemptyset(set);
    for (int sig = 1; sig < 32; sig++)
        sigaddset(set, sig);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        sigaddset(set, sig);
    for (size_t i = 0; i < sizeof not_passed / sizeof not_passed[0]; i++)
        sigdelset(set, not_passed[i]);
}

/* Why there is no table: the program ended without running its exit handlers. */
static void no_table(const char *sub, const char *prog, pid_t pid, int status)
{
    if (WIFSIGNALED(status))
        cmd_say("vmstack %s: no stack usage table: %s (pid %d) was killed by SIG%s before its exit "
                "handlers ran\n", sub, prog, (int)pid, sigabbrev_np(WTERMSIG(status)));
    else
        cmd_say("vmstack %s: no stack usage table: %s (pid %d) exited with status %d without running "
                "its exit handlers (exit_group)\n", sub, prog, (int)pid, WEXITSTATUS(status));
}

/*
 * How long the keeper may take to make the table of a program that ended
 * without its exit handlers: symbolising chains takes seconds at most; a
 * lock held by a killed thread (malloc's) takes forever.
 */
#define KEEPER_TIMEOUT_S 30

/* Waits for the keeper to end, KEEPER_TIMEOUT_S at most; false when it had to be killed. */
static bool keeper_done(pid_t keeper)
{
    struct timespec tick = {0, 50 * 1000 * 1000};
    sigset_t chld;
    int status;

    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    for (int i = 0; i < KEEPER_TIMEOUT_S * 20; i++) {
        pid_t got = waitpid(keeper, &status, WNOHANG);
        if (got == keeper || (got < 0 && errno != EINTR))
            return true;
        sigtimedwait(&chld, NULL, &tick);
    }
    kill(keeper, SIGKILL);
    while (waitpid(keeper, &status, 0) < 0 && errno == EINTR)
        ;
    return false;
}

/*
 * Tells the program's keeper (src/preload/keeper.c) that the program has
 * ended.  When its exit handlers left no table, the keeper makes it, on
 * the memory that is still there; then it ends.
 */
static void wake_keeper(struct vms_run_shm *m, int status, const char *sub, const char *prog)
{
    pid_t keeper = atomic_load(&m->keeper);

    if (!keeper)
        return;
    m->end_status = status;
    atomic_store(&m->ended, 1);
    atomic_fetch_add(&m->events, 1);
    syscall(SYS_futex, &m->events, FUTEX_WAKE, INT32_MAX);
    if (atomic_load(&m->table_done))
        return; /* it ends by itself */
    if (!keeper_done(keeper))
        cmd_say("vmstack %s: the table of %s was not made within %d s, perhaps for a lock a killed thread "
                "held\n", sub, prog, KEEPER_TIMEOUT_S);
}

/* Writes what the program left; -1 when --output FILE could not be written. */
static int write_results(struct vms_run_shm *m, const char *sub, const char *prog, pid_t pid, int status,
                         const char *output, const struct run_post *post)
{
    size_t n;

    wake_keeper(m, status, sub, prog);
    n = atomic_load(&m->reports_len);

    fflush(stdout);
    if (n && fwrite(m->reports, 1, n < VMS_RUN_REPORTS_MAX ? n : VMS_RUN_REPORTS_MAX, stderr) == 0)
        return 0; /* stderr gone */
    if (!atomic_load(&m->attached))
        return 0; /* vmstack did not run in it, and said why */
    if (!atomic_load(&m->table_done)) {
        /* After an overflow report, the report is why: its last line must stay last. */
        if (!(WIFSIGNALED(status) && atomic_load(&m->reported)))
            no_table(sub, prog, pid, status);
        return 0;
    }
    if (output && vms__run_write_output(sub, output, m->text, m->text_len, cmd_say))
        return -1;
    if (!output) {
        fwrite(m->text, 1, m->text_len, stderr);
        fflush(stderr);
    }
    return run_post_write(m->text, m->text_len, post);
}

/* Ends as the program ended, without the exit handlers of the libraries linked into the tool. */
static _Noreturn void end_as(int status, int rc, const sigset_t *mask)
{
    fflush(NULL);
    if (WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        struct rlimit none = {0, 0};
        sigset_t only;
        /* The program dumped its core already; the launcher's must not replace it. */
        setrlimit(RLIMIT_CORE, &none);
        signal(sig, SIG_DFL);
        sigemptyset(&only);
        sigaddset(&only, sig);
        sigprocmask(SIG_UNBLOCK, &only, NULL);
        raise(sig);
        sigprocmask(SIG_SETMASK, mask, NULL);
        _exit(128 + sig);
    }
    _exit(WEXITSTATUS(status) == 0 && rc < 0 ? CMD_FAIL : WEXITSTATUS(status));
}

static _Noreturn void wait_for(pid_t pid, const sigset_t *set, const sigset_t *mask, struct vms_run_shm *m,
                               const char *sub, const char *prog, const char *output, const struct run_post *post)
{
    for (;;) {
        siginfo_t si;
        int sig = sigwaitinfo(set, &si), status;
        pid_t got;

        if (sig < 0)
            continue;
        if (sig != SIGCHLD) {
            /* From the terminal (the program has it too) or from the program itself: not passed. */
            if (si.si_code != SI_KERNEL && si.si_pid != pid)
                kill(pid, sig);
            continue;
        }
        /* The program, or a keeper of an image it exec'd from (keeper.c). */
        while ((got = waitpid(-1, &status, WNOHANG)) > 0 || (got < 0 && errno == EINTR))
            if (got == pid && (WIFEXITED(status) || WIFSIGNALED(status)))
                end_as(status, write_results(m, sub, prog, pid, status, output, post), mask);
        if (got < 0) {
            cmd_say("vmstack %s: lost %s (pid %d): %s\n", sub, prog, (int)pid, strerror(errno));
            exit(CMD_FAIL);
        }
    }
}

int cmd_launch(const char *sub, const char *path, const char *output, const struct run_post *post)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL}, chld;
    const char *prog = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    struct vms_run_shm *m;
    struct rlimit as;
    sigset_t set, mask;
    char num[16];
    pid_t pid;
    int fd = memfd_create("vmstack-run", MFD_CLOEXEC);

    if (fd < 0 || ftruncate(fd, (off_t)VMS_RUN_SHM_SIZE) ||
        (m = mmap(NULL, VMS_RUN_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
        if (errno == ENOMEM && getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
            cmd_say("vmstack %s: cannot map the %lu MiB the table is kept in: RLIMIT_AS (ulimit -v) is %llu KiB; "
                    "raise it by as much\n", sub, VMS_RUN_SHM_SIZE >> 20, (unsigned long long)as.rlim_cur >> 10);
        else
            cmd_say("vmstack %s: cannot make the memory the table is kept in: %s\n", sub, strerror(errno));
        return -1;
    }
    m->magic = VMS_RUN_SHM_MAGIC;
    snprintf(num, sizeof num, "%d", fd);
    passed_on(&set);
    sigemptyset(&dfl.sa_mask);
    /* SIGCHLD ignored would reap the program unseen: the default here, the program's own there. */
    sigaction(SIGCHLD, &dfl, &chld);
    sigprocmask(SIG_BLOCK, &set, &mask);
    if ((pid = fork()) < 0) {
        cmd_say("vmstack %s: cannot start %s: %s\n", sub, prog, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        munmap(m, VMS_RUN_SHM_SIZE);
        sigaction(SIGCHLD, &chld, NULL);
        sigprocmask(SIG_SETMASK, &mask, NULL);
        return setenv(VMS_RUN_SHM_ENV, num, 1);
    }
    wait_for(pid, &set, &mask, m, sub, prog, output, post);
}
