/* SPDX-License-Identifier: MIT */
/*
 * The descriptor a report goes to, from the signal handler: is it still
 * the place it was, and a write that cannot hang.
 *
 * A program may reopen fd 2 to a data file of its own (freopen, dup2), or
 * close it and get a data file at that number from its next open: a
 * report written there corrupts the program's data.  So the descriptor's
 * identity (device, inode, file type) is recorded when it becomes the
 * report's (fault handler installation, vms_set_report_fd), and a report
 * goes to it only while it is that file still, or now something that is
 * no regular file (a pipe, a terminal: a redirection of stderr, which is
 * where the program wants its diagnostics).
 *
 * A report to a pipe nobody reads, or a stopped terminal, would block the
 * handler for ever, and with it the policy: the process neither dies nor
 * goes on.  The descriptor's flags are the program's (O_NONBLOCK on it
 * would show in its own writes), so each piece waits in poll() for room
 * first, within one patience for the whole report (the time spent waiting
 * for the reader, not the time spent unwinding: that is slow under
 * emulators, and a reader who reads loses nothing to it), and is then no larger
 * than what poll's answer guarantees a blocking write to take at once: a
 * pipe's answer means a free page slot, PIPE_BUF bytes; others' less.
 *
 * Async-signal-safe: fstat, poll, write, clock_gettime.
 */
#include "fault/fault.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#define SMALL_PIECE 128 /* a terminal answers POLLOUT with this much room at least */

void vms__fd_id_take(int fd, struct vms_fd_id *id)
{
    struct stat sb;

    id->open = fstat(fd, &sb) == 0;
    id->dev = id->open ? sb.st_dev : 0;
    id->ino = id->open ? sb.st_ino : 0;
    id->type = id->open ? sb.st_mode & S_IFMT : 0;
}

enum vms_fd_state vms__fd_id_check(int fd, const struct vms_fd_id *was, mode_t *type)
{
    struct stat sb;

    if (fstat(fd, &sb))
        return VMS_FD_CLOSED;
    *type = sb.st_mode & S_IFMT;
    if (was->open && sb.st_dev == was->dev && sb.st_ino == was->ino && *type == was->type)
        return VMS_FD_SAME;
    return S_ISREG(sb.st_mode) ? VMS_FD_OTHER_FILE : VMS_FD_OTHER;
}

int64_t vms__fd_now_ns(void)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

size_t vms__fd_piece(mode_t type)
{
    return S_ISFIFO(type) || S_ISREG(type) ? PIPE_BUF : SMALL_PIECE;
}

int vms__fd_write_bounded(int fd, mode_t type, const char *p, size_t len, int64_t *patience)
{
    size_t piece = vms__fd_piece(type);

    while (len) {
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int64_t ms = *patience > 0 ? (*patience + 999999) / 1000000 : 0, start = vms__fd_now_ns();
        int r = poll(&pfd, 1, (int)(ms < INT_MAX ? ms : INT_MAX)), rc;

        *patience -= vms__fd_now_ns() - start;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r < 0 ? -errno : -ETIMEDOUT;
        if ((rc = vms__os_write_some(fd, &p, &len, piece)))
            return rc;
    }
    return 0;
}
