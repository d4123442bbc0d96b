/* SPDX-License-Identifier: MIT */
/*
 * Blocking calls that do not stall a thread's fibers: vms_offload runs a
 * call on a small pool of helper threads while the calling fiber waits
 * (VMS_WAIT_OFFLOAD, wait.c) and its thread runs its other fibers, or
 * sleeps in epoll_wait; vms_pread and vms_pwrite are such calls.
 *
 * The pool: helpers are made when a call finds none idle, up to POOL_MAX,
 * on guarded vmstack stacks (an overflow in a library call is reported),
 * with every signal blocked but the synchronous ones, so that the
 * program's signals go to its own threads and a helper's call never sees
 * EINTR.  A helper idle for IDLE_S seconds exits: a program that offloads
 * once does not keep threads.  The queue is FIFO under one mutex; the
 * call's record lives in the waiting fiber's frame, which stays put until
 * the fiber's thread has taken the call's end off its wake port.
 *
 * A call is handed to the pool only once its fiber can no longer be
 * killed before it waits (vms__sched_block_then): a call never outlives
 * the fiber whose stack holds its record and, often, its argument.
 *
 * fork: the child has no helpers and no queue.  The calls it inherits
 * belong to fibers of the parent's threads; their records point at wake
 * ports whose locks another thread may have held at the fork, so a helper
 * that served one could hang.  They are dropped: such fibers, copies the
 * child should not run anyway (see the note on fork in vmstack.h), wait
 * for ever.  The child's own calls get new helpers.
 */
#include "task/task.h"
#include "core/sanitizer.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define POOL_MAX 16                  /* helpers at most: blocked calls beyond wait in the queue */
#define IDLE_S 10                    /* a helper idle this long exits */
/* getaddrinfo with NSS modules fits; pages are committed as touched.  TSan puts ~900 KiB of TLS there. */
#if defined(VMS_SAN_THREAD) || defined(VMS_SAN_ADDRESS)
#define HELPER_STACK (4u << 20)
#else
#define HELPER_STACK (256u << 10)
#endif

struct job {
    struct vms_offload_post post;    /* how the helper hands the end back */
    struct job *next;                /* in the queue */
    void *(*fn)(void *);
    void *arg, *result;
    struct vms_wait_port *port;      /* the waiting fiber's thread's */
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t work;             /* idle helpers wait here */
    struct job *head, *tail;
    unsigned threads, idle, queued;
} pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, 0, 0, 0 };

/* ---- the helpers ---- */

/* Waits (lock held) for a job, up to IDLE_S; false when none came. */
static bool idle_wait(void)
{
    struct timespec until;
    int rc = 0;

    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += IDLE_S;
    pool.idle++;
    while (!pool.head && rc != ETIMEDOUT)
        rc = pthread_cond_clockwait(&pool.work, &pool.lock, CLOCK_MONOTONIC, &until);
    pool.idle--;
    return pool.head != NULL;
}

static void *helper(void *unused)
{
    (void)unused;
    pthread_mutex_lock(&pool.lock);
    for (;;) {
        struct job *j;

        if (!pool.head && !idle_wait())
            break;
        j = pool.head;
        if (!(pool.head = j->next))
            pool.tail = NULL;
        pool.queued--;
        pthread_mutex_unlock(&pool.lock);
        j->result = j->fn(j->arg);
        /* The last touch of j: the fiber may go on (and its frame be reused) from here. */
        vms__offload_post(j->port, &j->post);
        pthread_mutex_lock(&pool.lock);
    }
    pool.threads--;
    pthread_mutex_unlock(&pool.lock);
    return NULL;
}

/* A detached helper, with the signals it must not take blocked from its first instruction on. */
static int helper_start(void)
{
    static const int sync_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS, SIGABRT };
    pthread_attr_t attr;
    sigset_t block, old;
    pthread_t t;
    int rc;

    sigfillset(&block);
    for (size_t i = 0; i < sizeof sync_signals / sizeof *sync_signals; i++)
        sigdelset(&block, sync_signals[i]);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, HELPER_STACK);
    pthread_sigmask(SIG_SETMASK, &block, &old);
    rc = vms_thread_create(&t, &attr, helper, NULL, "vmstack-offload");
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    return rc;
}

/* One more helper when none is idle for the job about to come; an error only when there is none at all. */
static int pool_grow(void)
{
    unsigned have;
    bool grow;
    int rc;

    pthread_mutex_lock(&pool.lock);
    grow = pool.threads < POOL_MAX && pool.idle <= pool.queued;
    if (grow)
        pool.threads++;
    pthread_mutex_unlock(&pool.lock);
    if (!grow || !(rc = helper_start()))
        return 0;
    pthread_mutex_lock(&pool.lock);
    have = --pool.threads;
    pthread_mutex_unlock(&pool.lock);
    if (have)
        return 0; /* the others will serve it */
    return vms__fail(-rc, "vms_offload: no helper thread could be started (%s)", strerror(-rc));
}

/* Runs as the fiber blocks (vms__sched_block_then), on its stack: small. */
static void submit(void *p)
{
    struct job *j = p;

    j->next = NULL;
    pthread_mutex_lock(&pool.lock);
    if (pool.tail)
        pool.tail->next = j;
    else
        pool.head = j;
    pool.tail = j;
    pool.queued++;
    if (pool.idle)
        pthread_cond_signal(&pool.work);
    pthread_mutex_unlock(&pool.lock);
}

/* ---- fork ---- */

static void fork_prepare(void)
{
    pthread_mutex_lock(&pool.lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&pool.lock);
}

/* The helpers are gone, and the calls queued are the parent's threads'. */
static void fork_child(void)
{
    pool.head = pool.tail = NULL;
    pool.threads = pool.idle = pool.queued = 0;
    pthread_cond_init(&pool.work, NULL);
    pthread_mutex_unlock(&pool.lock);
}

__attribute__((constructor)) static void offload_fork_register(void)
{
    vms__fork_hook(VMS_FORK_OFFLOAD, fork_prepare, fork_parent, fork_child);
}

/* ---- the calls ---- */

int vms_offload(void *(*fn)(void *), void *arg, void **result)
{
    struct vms_fiber_desc *f = vms__fiber_current();
    struct job j = { .fn = fn, .arg = arg };
    int rc;

    if (!fn)
        return vms__fail(EINVAL, "vms_offload: fn is NULL");
    if (!f) {
        /* No fibers to keep running: the thread may as well block. */
        j.result = fn(arg);
    } else {
        if ((rc = pool_grow()))
            return rc;
        j.post.f = f;
        j.post.id = atomic_load(&f->id);
        if ((rc = vms__offload_block(&j.port, submit, &j)))
            return rc;
    }
    if (result)
        *result = j.result;
    return 0;
}

struct io {
    int fd;
    bool write;
    void *buf;
    size_t count;
    off_t offset;
    ssize_t n;      /* what pread or pwrite returned */
    int err;        /* its errno when n < 0 */
};

static void *io_call(void *p)
{
    struct io *io = p;

    io->n = io->write ? pwrite(io->fd, io->buf, io->count, io->offset) : pread(io->fd, io->buf, io->count, io->offset);
    io->err = io->n < 0 ? errno : 0;
    return NULL;
}

static ssize_t io_fail(const struct io *io, int err)
{
    return vms__fail(err, "%s: fd %d: %s", io->write ? "vms_pwrite" : "vms_pread", io->fd, strerror(err));
}

/* The call, on a helper when called from a fiber (there is nothing else to run otherwise). */
static ssize_t io_run(struct io *io)
{
    int rc = vms_offload(io_call, io, NULL);

    if (rc)
        return rc;
    return io->n < 0 ? io_fail(io, io->err) : io->n;
}

/*
 * What the page cache holds is read at once, without blocking
 * (RWF_NOWAIT): that costs no helper and no switch.  The rest (pages not
 * cached, a file system or kernel without RWF_NOWAIT) is read by a helper.
 * Errors that no helper would cure (EBADF, ESPIPE, EFAULT) are answered at
 * once.
 */
static bool nowait_missed(int err)
{
    return err == EAGAIN || err == EOPNOTSUPP || err == ENOSYS || err == EINVAL;
}

ssize_t vms_pread(int fd, void *buf, size_t count, off_t offset)
{
    struct io io = { .fd = fd, .buf = buf, .count = count, .offset = offset };
    struct iovec iov = { buf, count };
    ssize_t n, rest;

    if (!vms__fiber_current())
        return io_run(&io);
    n = preadv2(fd, &iov, 1, offset, RWF_NOWAIT);
    if (n < 0 && !nowait_missed(errno))
        return io_fail(&io, errno);
    if (n == 0 || (size_t)n == count)
        return n; /* the end of the file, or all of it */
    if (n < 0)
        n = 0;
    io.buf = (char *)buf + n;
    io.count = count - (size_t)n;
    io.offset = offset + n;
    rest = io_run(&io);
    /* As read(2) after part was read: what was read; the error comes again with the next call. */
    return rest < 0 ? (n ? n : rest) : n + rest;
}

ssize_t vms_pwrite(int fd, const void *buf, size_t count, off_t offset)
{
    struct io io = { .fd = fd, .write = true, .buf = (void *)buf, .count = count, .offset = offset };

    /* Buffered writes wait on dirty-page throttling and journal locks, which RWF_NOWAIT does not cover on every
       file system: always a helper's. */
    return io_run(&io);
}
