/* SPDX-License-Identifier: MIT */
/*
 * Where the preload's output goes, with no descriptor of ours in the
 * program: overflow reports and the preload's notices are written to the
 * program's fd 2 at the time, as sanitizers do, when fd 2 still is the
 * file it was at start (device and inode); a program that closed fd 2 or
 * reopened it to a file of its own (a data file, /dev/null at exit as
 * coreutils do) neither receives them nor loses them: they go into the
 * memory shared with 'vmstack run' (runshm.h), which writes them to its
 * own stderr, the program's as it was at start, once the program has
 * ended.  The table at exit always goes there: the launcher writes it,
 * to stderr or to --output FILE, however the program ends.
 *
 * Everything but vms__out_attach is async-signal-safe (fstat, write,
 * atomics): the overflow handler writes its report through it.
 */
#include "preload/preload.h"
#include "preload/runshm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool inited;           /* before vms__out_init (a call resolved early): fd 2 as it is */
static bool out_known;        /* fd 2 was open at start: out_dev/out_ino are its identity */
static dev_t out_dev;
static ino_t out_ino;
static struct vms_run_shm *shm; /* NULL: not under 'vmstack run', or not the program it started */
static pid_t shm_pid;

void vms__out_init(void)
{
    struct stat sb;

    inited = true;
    if (fstat(2, &sb))
        return; /* no stderr at start: nothing of ours goes to fd 2 */
    out_dev = sb.st_dev;
    out_ino = sb.st_ino;
    out_known = true;
}

/*
 * Maps the launcher's shared memory (its descriptor, through /proc: the
 * launcher is our parent) and closes it again.  Called once the options
 * are read, by the process 'vmstack run' started only.
 */
void vms__out_attach(void)
{
    const char *v = getenv(VMS_RUN_SHM_ENV);
    char path[64];
    struct vms_run_shm *m;
    int fd;

    if (!v || snprintf(path, sizeof path, "/proc/%d/fd/%s", (int)getppid(), v) >= (int)sizeof path)
        return;
    if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
        vms__out_printf("vmstack %s: cannot map the launcher's table memory (%s): %s; the table may be lost\n",
                        vms__run_command(), path, strerror(errno));
        return;
    }
    m = mmap(NULL, VMS_RUN_SHM_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED || m->magic != VMS_RUN_SHM_MAGIC) {
        if (m != MAP_FAILED)
            munmap(m, VMS_RUN_SHM_SIZE);
        return;
    }
    /* A new image of the program (it exec'd): its table replaces the last one's. */
    atomic_store(&m->table_done, 0);
    atomic_store(&m->attached, 1);
    shm_pid = getpid();
    shm = m;
}

/* The shared memory, in the process that mapped it only (not in a child forked since). */
static struct vms_run_shm *shared(void)
{
    return shm && (pid_t)syscall(SYS_getpid) == shm_pid ? shm : NULL;
}

void vms__out_detach(void)
{
    struct vms_run_shm *m = shared();

    if (!m)
        return;
    atomic_store(&m->attached, 0);
    munmap(m, VMS_RUN_SHM_SIZE);
    shm = NULL;
}

struct vms_run_shm *vms__out_shm(void)
{
    return shared();
}

/*
 * The keeper, once the program is gone: the shared memory is its to
 * write, as the program's would have been (keeper.c).
 */
void vms__out_adopt(void)
{
    shm_pid = (pid_t)syscall(SYS_getpid);
}

static bool fd2_is_ours(void)
{
    struct stat sb;

    if (!inited)
        return true;
    return out_known && fstat(2, &sb) == 0 && sb.st_dev == out_dev && sb.st_ino == out_ino;
}

int vms__out_write(const char *p, size_t len)
{
    struct vms_run_shm *m;
    size_t at;

    if (fd2_is_ours())
        return vms__os_write_all(2, p, len);
    if (!(m = shared()))
        return -EBADF;
    at = atomic_fetch_add(&m->reports_len, len);
    if (at >= VMS_RUN_REPORTS_MAX)
        return -ENOSPC;
    memcpy(m->reports + at, p, len < VMS_RUN_REPORTS_MAX - at ? len : VMS_RUN_REPORTS_MAX - at);
    return 0;
}

int vms__out_report(const char *p, size_t len)
{
    struct vms_run_shm *m = shared();

    if (m)
        atomic_store(&m->reported, 1);
    return vms__out_write(p, len);
}

int vms__out_table(const char *text, size_t len)
{
    struct vms_run_shm *m = shared();

    if (!m)
        return -1;
    if (len > VMS_RUN_TEXT_MAX)
        len = VMS_RUN_TEXT_MAX;
    memcpy(m->text, text, len);
    m->text_len = len;
    atomic_store(&m->table_done, 1);
    return 0;
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
