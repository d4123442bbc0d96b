/* SPDX-License-Identifier: MIT */
/*
 * The preload's one descriptor: where the usage table, the overflow
 * reports and the preload's own notices go.  It is the program's stderr
 * as it was at start, so that a program that closes or reopens fd 2 (as a
 * data file, or to /dev/null at exit as coreutils do) neither swallows
 * our output nor receives it.
 *
 * Holding a descriptor means a program can collide with it: a shell's
 * 'exec 200>lock' or a dup2 onto "its" number would write our table into
 * the program's file.  So the copy sits at the top of the descriptor
 * range, where open() hands out numbers last, and before every write its
 * identity is checked: still close-on-exec (dup2 onto it clears the flag)
 * and still the same file (device and inode).  When it is not, fd 2 is
 * used if fd 2 still is that same file, and otherwise nothing is written:
 * never into a file that is not the one we found at start.
 *
 * Everything here is async-signal-safe (fcntl, fstat, write): the overflow
 * handler writes its report through it.
 */
#include "preload/preload.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static int out_fd = -1;
static bool inited;           /* before vms__out_init (a call resolved early): fd 2 as it is */
static bool out_known;        /* fd 2 was open at start: out_dev/out_ino are its identity */
static dev_t out_dev;
static ino_t out_ino;

static bool is_out_file(int fd)
{
    struct stat sb;

    return out_known && fstat(fd, &sb) == 0 && sb.st_dev == out_dev && sb.st_ino == out_ino;
}

void vms__out_init(void)
{
    struct stat sb;

    inited = true;
    if (fstat(2, &sb))
        return; /* no stderr: nothing of ours is ever written */
    out_dev = sb.st_dev;
    out_ino = sb.st_ino;
    out_known = true;
    out_fd = vms__os_dup_high(2);
}

/* The descriptor to write to now, or -1. */
static int out_now(void)
{
    int flags;

    if (!inited)
        return 2;
    if (out_fd >= 0 && (flags = fcntl(out_fd, F_GETFD)) >= 0 && (flags & FD_CLOEXEC) && is_out_file(out_fd))
        return out_fd;
    return is_out_file(2) ? 2 : -1;
}

int vms__out_write(const char *p, size_t len)
{
    int fd = out_now();

    return fd < 0 ? -EBADF : vms__os_write_all(fd, p, len);
}

void vms__out_printf(const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        vms__out_write(line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}
