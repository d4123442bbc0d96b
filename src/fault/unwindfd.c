/* SPDX-License-Identifier: MIT */
/*
 * libunwind's descriptors, kept out of the program's way.
 *
 * Before it reads a word of a stack, libunwind checks that the address is
 * readable by writing a byte from it into a pipe of its own (a write
 * fails with EFAULT where a read would fault).  It opens that pipe with
 * pipe2 on first use, at the lowest free numbers: fds 3 and 4 in most
 * programs, which then get 5 from their first open(), and which may
 * dup2 a file of their own onto "their" 3 or 4, after which libunwind
 * reads a byte from the program's descriptor and writes stack bytes into
 * its file.  When the read fails, libunwind closes both numbers and opens
 * a new pipe: a program that closed them and reused the numbers would
 * lose its own descriptors.
 *
 * So pipe2 is interposed.  Called while vmstack is unwinding (a flag of
 * the thread's, set around every use of libunwind), the pipe is moved to
 * the top of the descriptor range, as the preload's output descriptor is;
 * any other call goes straight to the system call, as glibc's wrapper
 * does.  Before each unwinding the pipe's identity is checked (close-on-
 * exec, same inode): if the program has taken one of those numbers, there
 * is no unwinding, rather than I/O on the program's file.
 *
 * The same bracket keeps fork() from copying a thread's unwinding half
 * done: libunwind looks up each frame with dl_iterate_phdr, which holds
 * the dynamic loader's lock, and a child forked at that moment has the
 * lock held forever (its first unwinding, or dlopen, then hangs).  Before
 * fork, new unwinding is refused and the unwinding in progress is waited
 * for; a report that comes in those microseconds says so instead of a
 * backtrace.  Everything here but the fork handlers is async-signal-safe.
 */
#include "fault/fault.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static __thread __attribute__((tls_model("initial-exec"))) bool unwinding;
static int pipe_fd[2] = {-1, -1};
static ino_t pipe_ino;
static _Atomic int inside;      /* threads between begin and end */
static _Atomic bool forking;

/* Ours, or closed (libunwind then reopens it, through us). */
static bool ours_or_closed(int fd)
{
    struct stat sb;
    int flags = fcntl(fd, F_GETFD);

    if (flags < 0)
        return true;
    return (flags & FD_CLOEXEC) && fstat(fd, &sb) == 0 && S_ISFIFO(sb.st_mode) && sb.st_ino == pipe_ino;
}

const char *vms__unwind_begin(void)
{
    int r = __atomic_load_n(&pipe_fd[0], __ATOMIC_ACQUIRE), w = __atomic_load_n(&pipe_fd[1], __ATOMIC_ACQUIRE);

    if (r >= 0 && (!ours_or_closed(r) || !ours_or_closed(w)))
        return "the program took libunwind's descriptors";
    atomic_fetch_add_explicit(&inside, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&forking, memory_order_seq_cst)) {
        atomic_fetch_sub_explicit(&inside, 1, memory_order_release);
        return "another thread is forking";
    }
    unwinding = true;
    return NULL;
}

void vms__unwind_end(void)
{
    unwinding = false;
    atomic_fetch_sub_explicit(&inside, 1, memory_order_release);
}

static void drain_for_fork(void)
{
    atomic_store_explicit(&forking, true, memory_order_seq_cst);
    while (atomic_load_explicit(&inside, memory_order_seq_cst) > 0)
        sched_yield();
}

static void after_fork(void)
{
    atomic_store_explicit(&forking, false, memory_order_release);
}

/* In the child the counter may count threads that are gone: none is inside. */
static void after_fork_child(void)
{
    atomic_store_explicit(&inside, 0, memory_order_relaxed);
    after_fork();
}

__attribute__((constructor)) static void unwind_at_fork(void)
{
    vms__fork_hook(VMS_FORK_UNWIND, drain_for_fork, after_fork, after_fork_child);
}

static void keep_high(int fds[2])
{
    struct stat sb;

    for (int i = 0; i < 2; i++) {
        int high = vms__os_dup_high(fds[i]);
        if (high > fds[i]) {
            close(fds[i]);
            fds[i] = high;
        } else if (high >= 0) {
            close(high);
        }
    }
    if (fstat(fds[0], &sb) == 0)
        pipe_ino = sb.st_ino;
    __atomic_store_n(&pipe_fd[0], fds[0], __ATOMIC_RELEASE);
    __atomic_store_n(&pipe_fd[1], fds[1], __ATOMIC_RELEASE);
}

__attribute__((visibility("default"))) int pipe2(int fds[2], int flags)
{
    int rc = (int)syscall(SYS_pipe2, fds, flags);

    if (rc == 0 && unwinding)
        keep_high(fds);
    return rc;
}
