/* SPDX-License-Identifier: MIT */
/*
 * 'vmstack run --output FILE': the table replaces FILE as a whole, written
 * by the launcher at the end (tools/launch.c builds this file too) and by
 * the program on --report-signal, so FILE
 * never holds half a table.  'vmstack run' may run as root and FILE may
 * sit in a directory others can write (/tmp), so the temporary file gets
 * a name nobody can predict and is created, never opened: mkostemp in
 * FILE's own directory (O_CREAT|O_EXCL, which refuses a symlink planted
 * there), then rename over FILE.  What is not a regular file (a FIFO,
 * /dev/stdout, a terminal) is written into instead, since a rename would
 * replace it; without blocking forever: a FIFO nobody reads is an error,
 * and a reader that stops reading for WRITE_TIMEOUT_MS is one too.  "-"
 * is the stdout of whoever writes: the program's fd 1 at its end, or the
 * keeper's, which kept the stdout of the start for it (keeper.c).
 * Every failure is a message and a return of -1: 'vmstack run' then ends
 * with exit status 1 if the program itself succeeded.
 */
#include "preload/outfile.h"
#include "core/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define WRITE_TIMEOUT_MS 10000

static void (*say)(const char *fmt, ...); /* where failures are told, set by the caller */
static const char *command;                /* the command they name */

static int fail(const char *what, const char *path, int err)
{
    say("vmstack %s: cannot %s %s: %s\n", command, what, path, strerror(err));
    return -1;
}

/* Writes all of it to a non-blocking fd, waiting for room at most WRITE_TIMEOUT_MS at a time. */
static int write_waiting(int fd, const char *p, size_t len)
{
    while (len) {
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int rc = vms__os_write_some(fd, &p, &len, len), r;

        if (rc != -EAGAIN) {
            if (rc)
                return rc;
            continue;
        }
        r = poll(&pfd, 1, WRITE_TIMEOUT_MS);
        if (r == 0)
            return -ETIMEDOUT;
        if (r < 0 && errno != EINTR)
            return -errno;
    }
    return 0;
}

/*
 * Into fd, a FIFO, a terminal, /dev/null...  SIGPIPE (the reader went
 * away) is held back while writing, then discarded: it is our write's,
 * not the program's.
 */
static int write_fd(int fd, const char *path, const char *text, size_t len)
{
    sigset_t pipe_set, old;
    struct timespec now = {0, 0};
    int rc;

    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    rc = write_waiting(fd, text, len);
    if (!sigismember(&old, SIGPIPE))
        while (sigtimedwait(&pipe_set, NULL, &now) == SIGPIPE)
            ;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc ? fail("write", path, -rc) : 0;
}

static int write_special(const char *path, const char *text, size_t len)
{
    int fd, rc;

    if ((fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)) < 0 && errno == ENXIO) {
        say("vmstack %s: cannot write %s: a FIFO that nobody reads\n", command, path);
        return -1;
    }
    if (fd < 0)
        return fail("write", path, errno);
    rc = write_fd(fd, path, text, len);
    close(fd);
    return rc;
}

/* The mode FILE keeps (when it exists) or gets: 0666 less the umask, as open() would. */
static mode_t file_mode(const char *path)
{
    struct stat sb;
    mode_t mask;

    if (stat(path, &sb) == 0)
        return sb.st_mode & 0777; /* never a set-id bit: another user may have planted the file */
    mask = umask(022); /* read it: there is no other way; put back at once */
    umask(mask);
    return 0666 & ~mask;
}

/* Not reentered: the launcher has one thread, the library holds its table's lock. */
static int write_replacing(const char *path, const char *text, size_t len)
{
    static char tmp[PATH_MAX]; /* not on the stack: the launcher may have 16 KiB in all */
    const char *slash = strrchr(path, '/');
    int fd, rc;

    if (!slash || snprintf(tmp, sizeof tmp, "%.*s/.%s.vmstack-XXXXXX", (int)(slash - path), path, slash + 1) >=
                      (int)sizeof tmp)
        return fail("write", path, ENAMETOOLONG);
    if ((fd = mkostemp(tmp, O_CLOEXEC)) < 0)
        return fail("create a temporary file for", path, errno);
    rc = fchmod(fd, file_mode(path)) ? -errno : 0;
    if (!rc)
        rc = write_waiting(fd, text, len);
    if (close(fd) && !rc)
        rc = -errno;
    if (!rc && rename(tmp, path))
        rc = -errno;
    if (rc) {
        unlink(tmp);
        return fail("write", path, -rc);
    }
    return 0;
}

int vms__run_write_output(const char *sub, const char *path, const char *text, size_t len,
                          void (*tell)(const char *fmt, ...))
{
    struct stat sb;

    say = tell;
    command = sub;
    if (!strcmp(path, "-"))
        return write_fd(1, "stdout", text, len);
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return write_special(path, text, len);
    return write_replacing(path, text, len);
}
