/* SPDX-License-Identifier: MIT */
/*
 * Where the preload's output goes, with no descriptor of ours in the
 * program: overflow reports, the preload's notices and the table at exit
 * are written to the program's fd 2 at the time, as sanitizers do, when
 * fd 2 still is the file it was at start (device and inode); a program
 * that closed fd 2 or reopened it to a file of its own (a data file,
 * /dev/null at exit as coreutils do) neither receives them nor loses
 * them: they go into the memory the program shares with its keeper
 * (runshm.h), which holds the stderr the program started with and writes
 * them there at once, while the program waits (keeper.c).
 *
 * A stderr nobody reads (a full pipe, a stopped terminal) makes no write
 * wait for ever: a line waits at most 2 s, the table 10 s.  Once a write
 * waited that long, stderr has stalled: what does not fit at once is
 * dropped, counted, and the table says so.
 *
 * Everything but vms__out_attach and vms__out_flush is async-signal-safe
 * (fstat, write, atomics): the overflow handler writes its report through
 * it.
 */
#include "fault/fault.h"
#include "preload/preload.h"
#include "preload/runshm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static bool inited;           /* before vms__out_init (a call resolved early): fd 2 as it is */
static bool out_known;        /* fd 2 was open at start: out_dev/out_ino are its identity */
static dev_t out_dev;
static ino_t out_ino;
static struct vms_run_shm *shm; /* NULL: not under 'vmstack run', or not the program it started */
static pid_t shm_pid;

static _Atomic bool stalled;   /* a write to fd 2 waited its whole patience */
static _Atomic size_t dropped; /* bytes that did not go out for it */

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
 * The memory the keeper reads (runshm.h), by the process 'vmstack run'
 * started only: not inherited by a fork, so that a child's writes cannot
 * be taken for the program's.
 */
void vms__out_attach(void)
{
    struct vms_run_shm *m = mmap(NULL, VMS_RUN_SHM_SIZE, PROT_READ | PROT_WRITE,
                                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    struct rlimit as;

    if (m == MAP_FAILED && errno == ENOMEM && getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
        vms__out_printf("vmstack %s: cannot map the %lu MiB a table after a fatal signal is kept in: RLIMIT_AS "
                        "(ulimit -v) is %llu KiB; raise it by as much, or such a table is lost\n", vms__run_command(),
                        VMS_RUN_SHM_SIZE >> 20, (unsigned long long)as.rlim_cur >> 10);
        return;
    }
    if (m == MAP_FAILED) {
        vms__out_printf("vmstack %s: cannot map the %lu MiB a table after a fatal signal is kept in: %s; such a "
                        "table is lost\n", vms__run_command(), VMS_RUN_SHM_SIZE >> 20, strerror(errno));
        return;
    }
    madvise(m, VMS_RUN_SHM_SIZE, MADV_DONTFORK);
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
    munmap(m, VMS_RUN_SHM_SIZE);
    shm = NULL;
}

struct vms_run_shm *vms__out_shm(void)
{
    return shared();
}

/*
 * The keeper, once the program is gone or has exec'd: the memory is its
 * to write, as the program's would have been (keeper.c).
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

/* p to fd 2, waiting at most patience for its reader (none once it stalled). */
static int err_write(const char *p, size_t len, int64_t patience)
{
    int64_t left = atomic_load(&stalled) ? 0 : patience;
    struct stat sb;
    int rc;

    if (fstat(2, &sb))
        return -errno;
    rc = vms__fd_write_bounded(2, sb.st_mode & S_IFMT, p, len, &left);
    if (rc == -ETIMEDOUT) {
        atomic_store(&stalled, true);
        atomic_fetch_add(&dropped, len);
    }
    return rc;
}

size_t vms__out_dropped(void)
{
    return atomic_load(&dropped);
}

int vms__out_write(const char *p, size_t len)
{
    struct vms_run_shm *m;
    size_t at;

    if (fd2_is_ours())
        return err_write(p, len, VMS_RUN_LINE_PATIENCE_NS);
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

void vms__out_report_done(void)
{
    struct vms_run_shm *m = shared();

    if (m && atomic_load(&m->reports_len) > atomic_load(&m->reports_done))
        vms__keeper_flush();
}

void vms__out_table(const char *text, size_t len)
{
    struct vms_run_shm *m = shared();

    if (fd2_is_ours()) {
        err_write(text, len, VMS_RUN_TABLE_PATIENCE_NS);
        return;
    }
    if (!m)
        return;
    if (len > VMS_RUN_TEXT_MAX)
        len = VMS_RUN_TEXT_MAX;
    memcpy(m->text, text, len);
    m->text_len = len;
    vms__keeper_flush();
}

void vms__out_ended(void)
{
    struct vms_run_shm *m = shared();

    if (m)
        atomic_store(&m->table_done, 1);
}

bool vms__out_table_done(void)
{
    struct vms_run_shm *m = shared();

    return m && atomic_load(&m->table_done);
}

bool vms__out_reported(void)
{
    struct vms_run_shm *m = shared();

    return m && atomic_load(&m->reported);
}

bool vms__out_hand_over(const char *text, size_t len)
{
    struct vms_run_shm *m = shared();

    if (!m || atomic_load(&m->keeper_ready) != 1 || len > VMS_RUN_TEXT_MAX)
        return false;
    memcpy(m->text, text, len);
    m->text_len = len;
    atomic_store(&m->text_whole, 1);
    return true;
}

bool vms__out_handed_over(const char **text, size_t *len)
{
    struct vms_run_shm *m = shared();

    if (!m || !atomic_exchange(&m->text_whole, 0))
        return false;
    *text = m->text;
    *len = m->text_len < VMS_RUN_TEXT_MAX ? m->text_len : VMS_RUN_TEXT_MAX;
    m->text_len = 0;
    return true;
}

void vms__out_exec(bool replacing)
{
    struct vms_run_shm *m = shared();

    if (m)
        atomic_store(&m->exec_pending, replacing);
}

void vms__out_drain(struct vms_run_shm *m, void (*put)(const char *p, size_t len, int64_t patience, void *ctx),
                    void *ctx)
{
    size_t from, to = atomic_load(&m->reports_len);

    /* The program could write anything here: no more than the mapping holds. */
    to = to < VMS_RUN_REPORTS_MAX ? to : VMS_RUN_REPORTS_MAX;
    from = atomic_exchange(&m->reports_done, to);
    if (from < to)
        put(m->reports + from, to - from, VMS_RUN_LINE_PATIENCE_NS, ctx);
    if (atomic_load(&m->text_whole))
        return; /* the keeper delivers it as the program would have (vms__run_deliver_kept) */
    if (m->text_len)
        put(m->text, m->text_len < VMS_RUN_TEXT_MAX ? m->text_len : VMS_RUN_TEXT_MAX, VMS_RUN_TABLE_PATIENCE_NS, ctx);
    m->text_len = 0;
}

static void put_err(const char *p, size_t len, int64_t patience, void *ctx)
{
    (void)ctx;
    err_write(p, len, patience);
}

void vms__out_flush(void)
{
    struct vms_run_shm *m = shared();

    if (m && fd2_is_ours())
        vms__out_drain(m, put_err, NULL);
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
