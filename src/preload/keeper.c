/* SPDX-License-Identifier: MIT */
/*
 * The keeper: what outlives the program 'vmstack run' became.  The table
 * measures the threads' stacks, which go with the program's memory, and
 * nothing tells a process that it is about to be gone (Go's runtime ends
 * with a raw exit_group; abort; a signal's default action; SIGKILL).  So
 * the program gets a keeper: a task that shares its memory but not its
 * thread group (clone with CLONE_VM, not CLONE_THREAD).  exit_group and
 * fatal signals end the program's threads, not the keeper, and the memory
 * lives as long as the keeper does.
 *
 * The keeper is nobody's child but init's (or the nearest subreaper's), as
 * the tracer of 'strace -D' is: the program makes a middle task, which
 * makes the keeper and ends at once, and the program reaps the middle one
 * before its own main runs.  So the program has no child it did not make,
 * its wait() sees nothing of ours, and its parent has no child but the
 * program.  The keeper leaves the program's session and process group, so
 * that signals sent to the group (a terminal's, timeout(1)'s) reach the
 * program alone; it blocks every signal, holds no descriptor but the
 * stderr the program started with (for what waited for it: outfd.c), and
 * leaves no core file.  Its name is vmstack-keeper.
 *
 * While the program runs, the keeper shares the TLS pointer of the thread
 * that made it: it makes raw system calls only (no errno, no TLS) and
 * touches nothing else.  It sleeps on the word the kernel clears and wakes
 * when the program's main thread ends or the program execs (the thread's
 * clear_child_tid), then on the program's pidfd until the whole program is
 * gone.  The program wakes it there too, to have what waits for the
 * stderr of the start written at once (a whole report, the table made by
 * the exit handlers), and waits for it boundedly: so those lines come
 * before the program's end, in order, as they would on its own stderr.  Then, the only task left in that memory, it uses the library
 * much as a forked child would, on the memory as the killed threads left
 * it: it writes what waited for the stderr of the start, and makes the
 * table as the exit handlers would have, unless they did.  A lock a killed
 * thread held (malloc's, say) stays held: the keeper would sleep on it for
 * ever, alone, with nothing waiting for it.  When the program execs, the
 * old memory is the keeper's alone: it writes what waited and ends, and
 * the new image gets a keeper of its own.
 *
 * Not made: under valgrind, whose guest cannot clone a task that shares
 * memory outside its thread group (and says so on stderr), where clone
 * refuses (qemu-user), without pidfds (Linux < 5.3), and where the keeper
 * would become the program's own child: in the init of a PID namespace and
 * in a child subreaper.  Then the table needs the exit handlers.
 */
#include "arch/arch.h"
#include "core/internal.h"
#include "core/sanitizer.h"
#include "fault/fault.h"
#include "preload/preload.h"
#include "preload/runshm.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/kcmp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h> /* sigabbrev_np */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Its own frames only: the table is made on a side stack of its own (runtable.c). */
#define KEEPER_STACK ((size_t)64 << 10)
#define MIDDLE_STACK ((size_t)16 << 10)
/* How long the program waits for its keeper to be set up: a clone and a few calls. */
#define READY_TIMEOUT_S 5

enum { KEEPER_UP = 1, KEEPER_NONE = 2 }; /* vms_run_shm.keeper_ready */
enum { FLUSH_ASKED = 1, FLUSH_DONE = 2 }; /* vms_run_shm.flush */

struct keeper {
    struct vms_run_shm *m;
    pid_t program;
    size_t piece;    /* the most a blocking write to the keeper's fd 2 takes at once after poll */
    char *stack_top; /* the keeper's, for the middle task to start it on */
    _Atomic int *tid; /* glibc's record of the main thread's tid: the kernel zeroes it as the thread ends */
    char name[16];    /* the main thread's, for the table: the keeper's own name is its job's */
};

static struct keeper kept; /* read by the keeper: in the memory it shares */

/*
 * The exit information a pidfd keeps after its process is reaped
 * (PIDFD_GET_INFO, Linux 6.15): the layout of linux/pidfd.h, which the
 * headers of older systems lack.
 */
struct pidfd_exit_info {
    uint64_t mask, cgroupid;
    uint32_t ids[11];
    int32_t exit_code;
    uint32_t coredump_mask, spare;
};
#define PIDFD_GET_EXIT_INFO _IOWR(0xFF, 11, struct pidfd_exit_info)
#define PIDFD_INFO_EXIT_BIT (1ull << 3)

static long sys(long nr, long a, long b, long c, long d)
{
    return vms__arch_syscall4(nr, a, b, c, d);
}

static _Noreturn void task_exit(void)
{
    for (;;)
        sys(SYS_exit, 0, 0, 0, 0);
}

static void set_ready(struct vms_run_shm *m, uint32_t how)
{
    atomic_store(&m->keeper_ready, how);
    sys(SYS_futex, (long)&m->keeper_ready, FUTEX_WAKE, INT32_MAX, 0);
}

/*
 * Only the stderr of the start: 0 and 1 on /dev/null, so that a pipe's
 * reader sees its end with the program's; and its stdout when the folded
 * stacks or the flame graph go there ("-"), for the end without exit
 * handlers.
 */
static void keep_stderr_only(void)
{
    const struct run_opts *o = &vms__run_opts;
    bool stdout_wanted = (o->folded && !strcmp(o->folded, "-")) || (o->flamegraph && !strcmp(o->flamegraph, "-"));
    long null;

    sys(SYS_close_range, 3, ~0u, 0, 0);
    null = sys(SYS_openat, AT_FDCWD, (long)"/dev/null", O_RDWR, 0);
    sys(SYS_dup3, null, 0, 0, 0);
    if (!stdout_wanted)
        sys(SYS_dup3, null, 1, 0, 0);
    if (null > 2)
        sys(SYS_close, null, 0, 0, 0);
}

static int64_t now_ns(void)
{
    struct timespec t;

    sys(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&t, 0, 0);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/*
 * p to the keeper's fd 2, raw, waiting for room no longer than patience:
 * each piece waits in poll, and is then no larger than a blocking write
 * takes at once.
 */
static void raw_put(const char *p, size_t len, int64_t patience, void *ctx)
{
    const struct keeper *k = ctx;
    int64_t deadline = now_ns() + patience;

    while (len) {
        int64_t left = deadline - now_ns();
        struct timespec t = {left / 1000000000, left % 1000000000};
        struct pollfd pfd = {.fd = 2, .events = POLLOUT};
        long n;

        if (left <= 0 || sys(SYS_ppoll, (long)&pfd, 1, (long)&t, 0) <= 0)
            return;
        if ((n = sys(SYS_write, 2, (long)p, (long)(len < k->piece ? len : k->piece), 0)) <= 0)
            return;
        p += n;
        len -= (size_t)n;
    }
}

/* What the program asked to have written now (vms__keeper_flush). */
static void write_asked(const struct keeper *k)
{
    vms__out_drain(k->m, raw_put, (void *)k);
    atomic_store(&k->m->flush, FLUSH_DONE);
    sys(SYS_futex, (long)&k->m->flush, FUTEX_WAKE, INT32_MAX, 0);
}

/* Whether task tid shares the keeper's memory. */
static bool shares_memory(long tid)
{
    return sys(SYS_kcmp, tid, sys(SYS_getpid, 0, 0, 0, 0), KCMP_VM, 0) == 0;
}

/* "/proc/PID/task" into path (40 bytes), without the library: no TLS. */
static void task_dir(char *path, pid_t pid)
{
    char digits[16];
    int n = 0;

    do
        digits[n++] = (char)('0' + pid % 10);
    while ((pid /= 10) && n < 15);
    memcpy(path, "/proc/", 6);
    for (int i = 0; i < n; i++)
        path[6 + i] = digits[n - 1 - i];
    memcpy(path + 6 + n, "/task", 6);
}

/* Whether a thread of the program other than the main one shares the keeper's memory: raw calls only. */
static bool thread_shares_memory(const struct keeper *k)
{
    char path[40], buf[1024];
    bool found = false;
    long fd, n;

    task_dir(path, k->program);
    if ((fd = sys(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_DIRECTORY, 0)) < 0)
        return false;
    while (!found && (n = sys(SYS_getdents64, fd, (long)buf, sizeof buf, 0)) > 0)
        for (long at = 0; at < n && !found; at += ((struct dirent64 *)(buf + at))->d_reclen) {
            const char *name = ((struct dirent64 *)(buf + at))->d_name;
            long tid = 0;
            while (*name >= '0' && *name <= '9')
                tid = tid * 10 + *name++ - '0';
            found = tid && tid != k->program && shares_memory(tid);
        }
    sys(SYS_close, fd, 0, 0, 0);
    return found;
}

/*
 * Whether the program now runs another image: its memory is no longer
 * this one (or cannot be compared: then the keeper may end too early, but
 * never writes a table of an image that is gone).  A main thread that
 * ended alone (pthread_exit) has no memory: the other threads tell.
 */
static bool program_execd(const struct keeper *k)
{
    return !shares_memory(k->program) && !thread_shares_memory(k);
}

enum end { END_GONE, END_EXEC };

/*
 * Raw system calls only, until the program is gone or has exec'd.  The
 * kernel clears the main thread's word before an exec switches memories:
 * in an exec call, the keeper waits for the switch (or the call's
 * failure); raw execs (no call of ours) are seen within a second.
 */
static enum end wait_for_end(const struct keeper *k, int pidfd)
{
    struct timespec second = {1, 0}, tick = {0, 1000 * 1000};
    struct pollfd p = {.fd = pidfd, .events = POLLIN};

    for (;;) {
        int tid = k->tid ? atomic_load(k->tid) : 0;

        if (atomic_load(&k->m->flush) == FLUSH_ASKED)
            write_asked(k);
        if (tid) {
            sys(SYS_futex, (long)k->tid, FUTEX_WAIT, tid, 0);
        } else if (atomic_load(&k->m->exec_pending)) {
            if (program_execd(k))
                return END_EXEC;
            sys(SYS_nanosleep, (long)&tick, 0, 0, 0);
        } else if (sys(SYS_ppoll, (long)&p, 1, (long)&second, 0) > 0) {
            return END_GONE;
        } else if (program_execd(k)) {
            return END_EXEC;
        }
    }
}

/* The program's wait status from /proc while it is a zombie; -1 once reaped. */
static int zombie_status(pid_t pid)
{
    char path[40], buf[1024], *p;
    ssize_t n;
    int fd;

    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    if (!(p = strrchr(buf, ')')) || p[1] != ' ' || (p[2] != 'Z' && p[2] != 'X'))
        return -1;
    /* Field 52, exit_code: p + 1 is the space before field 3. */
    for (int field = 3; field <= 52 && p; field++)
        p = strchr(p + 1, ' ');
    return p ? atoi(p + 1) : -1;
}

/* How the program ended, as a wait status; -1 when it cannot be told. */
static int end_status(pid_t pid, int pidfd)
{
    for (int tries = 0; tries < 2; tries++) {
        struct pidfd_exit_info info = {.mask = PIDFD_INFO_EXIT_BIT};
        int status;

        if (ioctl(pidfd, PIDFD_GET_EXIT_INFO, &info) == 0 && (info.mask & PIDFD_INFO_EXIT_BIT))
            return info.exit_code;
        if ((status = zombie_status(pid)) >= 0)
            return status;
    }
    return -1;
}

/* What the table's header says of the end. */
static void end_of(int status, char *why, size_t n)
{
    if (status < 0)
        snprintf(why, n, "an end without exit handlers");
    else if (WIFSIGNALED(status))
        snprintf(why, n, "death by SIG%s", sigabbrev_np(WTERMSIG(status)));
    else
        snprintf(why, n, "exit_group");
}

static void piece_for_stderr(struct keeper *k)
{
    struct stat sb;

    k->piece = vms__fd_piece(sys(SYS_fstat, 2, (long)&sb, 0, 0) ? 0 : sb.st_mode & S_IFMT);
}

static int keeper_main(void *arg)
{
    const struct keeper *k = arg;
    struct rlimit none = {0, 0};
    char why[40];
    long pidfd;

    sys(SYS_setsid, 0, 0, 0, 0);
    sys(SYS_prctl, PR_SET_NAME, (long)"vmstack-keeper", 0, 0); /* for ps and pgrep: not the program */
    sys(SYS_prlimit64, 0, RLIMIT_CORE, (long)&none, 0);
    keep_stderr_only();
    piece_for_stderr(arg);
    pidfd = sys(SYS_pidfd_open, k->program, 0, 0, 0);
    set_ready(k->m, pidfd >= 0 ? KEEPER_UP : KEEPER_NONE);
    if (pidfd < 0)
        task_exit();
    if (wait_for_end(k, (int)pidfd) == END_EXEC) {
        vms__out_adopt();
        vms__out_flush();
        task_exit();
    }
    /*
     * The program's threads are gone: from here on, the library, as the
     * main thread whose TLS this is.  glibc's locks compare their owner
     * with that thread's tid, so it must not be the 0 left at its end.
     */
    end_of(end_status(k->program, (int)pidfd), why, sizeof why);
    if (k->tid)
        atomic_store(k->tid, k->program);
    vms__out_adopt();
    vms__out_flush();
    vms__run_deliver_kept();
    if (!vms__out_table_done())
        vms__run_keeper_table(k->program, k->name, why);
    task_exit();
}

/* Makes the keeper and ends, so that the keeper's parent is init (or the nearest subreaper), never the program. */
static int middle_main(void *arg)
{
    const struct keeper *k = arg;

    if (clone(keeper_main, k->stack_top, CLONE_VM | CLONE_UNTRACED, arg) < 0)
        set_ready(k->m, KEEPER_NONE);
    task_exit();
}

/* Where an orphan of ours would be the program's own child. */
static bool program_reaps_orphans(void)
{
    int subreaper = 0;

    return getpid() == 1 || (prctl(PR_GET_CHILD_SUBREAPER, &subreaper) == 0 && subreaper);
}

static void wait_ready(struct vms_run_shm *m)
{
    struct timespec limit = {READY_TIMEOUT_S, 0};

    while (!atomic_load(&m->keeper_ready))
        if (sys(SYS_futex, (long)&m->keeper_ready, FUTEX_WAIT, 0, (long)&limit) == -ETIMEDOUT)
            return;
}

/*
 * The program's side: the keeper is woken on the word it sleeps on (the
 * main thread's tid, which stays as it is; a wake that comes before the
 * keeper sleeps is repeated), and answers on the flush word.
 */
void vms__keeper_flush(void)
{
    struct vms_run_shm *m = kept.m;
    int64_t until = now_ns() + VMS_RUN_LINE_PATIENCE_NS + VMS_RUN_TABLE_PATIENCE_NS + 1000000000;

    if (!m || m != vms__out_shm() || atomic_load(&m->keeper_ready) != KEEPER_UP)
        return;
    atomic_store(&m->flush, FLUSH_ASKED);
    while (atomic_load(&m->flush) == FLUSH_ASKED && now_ns() < until) {
        struct timespec tick = {0, 10 * 1000 * 1000};

        if (kept.tid)
            sys(SYS_futex, (long)kept.tid, FUTEX_WAKE, INT32_MAX, 0);
        sys(SYS_futex, (long)&m->flush, FUTEX_WAIT, FLUSH_ASKED, (long)&tick);
    }
}

void vms__keeper_start(void)
{
    struct vms_run_shm *m = vms__out_shm();
    size_t guard = vms__g.page, size = guard + MIDDLE_STACK + KEEPER_STACK;
    sigset_t all, old;
    char *stack;
    pid_t pid;
    int status;

    if (!m || vms__san_on_valgrind() || program_reaps_orphans() || !(stack = vms__os_reserve(size)))
        return;
    if (vms__os_commit(stack + guard, size - guard)) {
        vms__os_release(stack, size);
        return;
    }
    kept.m = m;
    kept.program = getpid();
    kept.stack_top = stack + size;
    if (prctl(PR_GET_TID_ADDRESS, &kept.tid) || (kept.tid && *kept.tid != kept.program))
        kept.tid = NULL;
    prctl(PR_GET_NAME, kept.name);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    /* No exit signal: the program's SIGCHLD handler and its wait() never see it; reaped with __WCLONE. */
    pid = clone(middle_main, stack + guard + MIDDLE_STACK, CLONE_VM | CLONE_UNTRACED, &kept);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) {
        vms__os_release(stack, size);
        return;
    }
    while (sys(SYS_wait4, pid, (long)&status, __WCLONE, 0) == -EINTR)
        ;
    /* The keeper has its pidfd before the program can end: a pid reused meanwhile is not the program. */
    wait_ready(m);
}
