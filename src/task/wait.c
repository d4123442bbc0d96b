/* SPDX-License-Identifier: MIT */
/*
 * Fibers that wait: park and wake, timers, and readiness of file
 * descriptors, for the per-thread scheduler of fiber.c.
 *
 * A waiting fiber leaves the ring of ready fibers (vms__sched_block) and is
 * found again through one of three per-thread structures: a min-heap of
 * timers ordered by deadline, a table indexed by fd with the fibers waiting
 * to read and to write, and the count of parked fibers.  When no fiber is
 * ready, the thread's own context sleeps in epoll_wait with the nearest
 * deadline as timeout (vms__wait_idle), and readies whatever it reports.
 *
 * An fd is registered once, edge-triggered for every event, on its first
 * wait, and stays registered until vms_fd_close: a wait costs no system
 * call.  What epoll reports is kept in the fd's entry (pending) until a
 * wait takes it, so an edge that came while no fiber waited is not lost;
 * errors and hang-ups stay there for every later wait.  Each registration
 * has a generation, carried in the event's data with the fd number: an
 * event of an earlier registration of the same number (still in the batch
 * being handled when vms_fd_close ran) is dropped, never given to the
 * fiber that waits on the new one.
 *
 * An fd closed with plain close() and its number reused behind our back
 * looks registered but is not: the kernel dropped the old registration
 * with the old file, without an event.  A wait on a registration older
 * than the wait itself therefore gets a check after VERIFY_NS: one
 * EPOLL_CTL_MOD, which re-polls the fd (a ready fd reports at once) and
 * answers ENOENT for a new file, which is then registered afresh.  Waits
 * shorter than that, the busy case, never pay it; a long one pays one
 * system call, once.  So no wait hangs on a reused number, and one after
 * vms_fd_close is exact at once.  The checks are not timers: a wait only
 * marks itself, and while marked waits exist the thread sweeps its fd
 * table at most every VERIFY_NS / 4 for those that are due.  A timer per
 * wait cost a busy server ~300 instructions per request in heap upkeep;
 * a sweep costs a few per fd, a few times a second, and only while some
 * wait has lasted.
 *
 * A wake from another thread cannot touch the ring, which belongs to the
 * owning thread.  It saves the wake in the fiber (its wake word, tagged
 * with the fiber's id, so that a stale handle never wakes the fiber that
 * reuses the slot) and posts {fiber, id} to the owner's port: a short list
 * under a mutex plus an eventfd in the owner's epoll set, written only
 * when the owner sleeps.  The owner takes the list when it idles and
 * readies those of its fibers that are still parked; a wake that finds its
 * fiber not parked stays saved for the next vms_fiber_park.  Ports outlive
 * their threads (reused by later ones), so a late wake never writes to
 * freed memory or a closed descriptor.
 */
#include "task/task.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define MAX_EVENTS 256
#define PORT_TAG UINT64_MAX                              /* epoll data of the port's eventfd */
#define READ_SIDE (EPOLLIN | EPOLLPRI | EPOLLRDHUP)
#define WRITE_SIDE EPOLLOUT
#define ALWAYS (EPOLLERR | EPOLLHUP)                     /* reported whatever was asked */
#define STICKY (EPOLLERR | EPOLLHUP | EPOLLRDHUP)        /* once seen, true for every later wait */
#define VERIFY_NS (100 * 1000000ull)                     /* a wait this old checks its registration */

struct wake_req {
    struct vms_fiber_desc *f;
    uint64_t id;
};

/* Where other threads post wakes for a thread's fibers. */
struct vms_wait_port {
    pthread_mutex_t lock;
    int efd;                    /* eventfd in the owner's epoll set */
    bool sleeping;              /* the owner is in (or about to enter) epoll_wait */
    struct wake_req *q;         /* posted wakes, under lock */
    size_t n, cap;
    struct vms_offload_post *done; /* offloaded calls that have ended, under lock (offload.c) */
    struct vms_wait_port *next_free;
};

struct fd_entry {
    struct vms_fiber_desc *rd, *wr; /* waiting for READ_SIDE, WRITE_SIDE events */
    uint32_t gen;                   /* of the registration, in its events' data */
    uint32_t pending;               /* events reported that no wait has taken yet */
    bool added;                     /* registered in epoll (it may have been closed since) */
};

struct waiter {
    int epfd;                       /* -1 until first needed */
    struct vms_wait_port *port;     /* NULL until a fiber first parks */
    struct vms_fiber_desc **heap;   /* timers: min-heap on wait_deadline */
    uint32_t heap_n, heap_cap;
    struct fd_entry *fds;
    uint32_t nfds;
    size_t parked, fd_waits;        /* fibers in vms_fiber_park or vms_offload, in vms_wait_fd */
    size_t verify_n;                /* of those in vms_wait_fd, the ones with wait_verify */
    uint64_t verify_at;             /* when verify_n: the next sweep for due checks (ns) */
    uint64_t now;                   /* CLOCK_MONOTONIC ns when the thread last idled: a wait's start, roughly */
    struct epoll_event ev[MAX_EVENTS];
};

static _Thread_local struct waiter *me;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static pthread_mutex_t free_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vms_wait_port *free_ports;

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t deadline_after(uint64_t ns)
{
    uint64_t now = now_ns();

    return ns > UINT64_MAX - now ? UINT64_MAX : now + ns;
}

/* ---- the per-thread state ---- */

/* At thread exit: the port goes to the free list (late wakes may still find it), the rest is freed. */
static void waiter_free(void *p)
{
    struct waiter *w = p;

    if (w->port) {
        pthread_mutex_lock(&w->port->lock);
        w->port->sleeping = false;
        w->port->n = 0;
        w->port->done = NULL;
        pthread_mutex_unlock(&w->port->lock);
        pthread_mutex_lock(&free_lock);
        w->port->next_free = free_ports;
        free_ports = w->port;
        pthread_mutex_unlock(&free_lock);
    }
    if (w->epfd >= 0)
        close(w->epfd);
    free(w->heap);
    free(w->fds);
    free(w);
    me = NULL;
}

static void key_init(void)
{
    if (pthread_key_create(&key, waiter_free))
        abort(); /* only when the process has used up PTHREAD_KEYS_MAX keys: nothing to recover */
}

static struct waiter *waiter_get(void)
{
    struct waiter *w = me;

    if (__builtin_expect(w != NULL, 1))
        return w;
    pthread_once(&key_once, key_init);
    if (!(w = calloc(1, sizeof *w))) {
        vms__fail(ENOMEM, "out of memory for the thread's wait tables");
        return NULL;
    }
    w->epfd = -1;
    w->now = now_ns();
    pthread_setspecific(key, w);
    return me = w;
}

static int epoll_get(struct waiter *w)
{
    if (w->epfd >= 0)
        return 0;
    w->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (w->epfd < 0)
        return vms__fail(errno, "epoll_create1 for the fiber scheduler: %s; raise the limit of open files (ulimit -n)",
                         strerror(errno));
    return 0;
}

/* The thread's port, made on the first park: from the free list, or new with its eventfd. */
static int port_get(struct waiter *w)
{
    struct vms_wait_port *p;
    struct epoll_event ev = { .events = EPOLLIN, .data.u64 = PORT_TAG };
    int rc;

    if (w->port)
        return 0;
    if ((rc = epoll_get(w)))
        return rc;
    pthread_mutex_lock(&free_lock);
    if ((p = free_ports))
        free_ports = p->next_free;
    pthread_mutex_unlock(&free_lock);
    if (!p) {
        if (!(p = calloc(1, sizeof *p)))
            return vms__fail(ENOMEM, "out of memory for the thread's wake port");
        pthread_mutex_init(&p->lock, NULL);
        p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (p->efd < 0) {
            rc = errno;
            free(p);
            return vms__fail(rc, "eventfd for cross-thread wakes: %s; raise the limit of open files (ulimit -n)",
                             strerror(rc));
        }
    }
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, p->efd, &ev)) {
        rc = errno;
        pthread_mutex_lock(&free_lock);
        p->next_free = free_ports;
        free_ports = p;
        pthread_mutex_unlock(&free_lock);
        return vms__fail(rc, "epoll_ctl for cross-thread wakes: %s", strerror(rc));
    }
    w->port = p;
    return 0;
}

/* ---- the timer heap ---- */

static void heap_set(struct waiter *w, uint32_t i, struct vms_fiber_desc *f)
{
    w->heap[i] = f;
    f->wait_heap = i + 1;
}

static void heap_up(struct waiter *w, uint32_t i)
{
    struct vms_fiber_desc *f = w->heap[i];

    while (i > 0 && w->heap[(i - 1) / 2]->wait_deadline > f->wait_deadline) {
        heap_set(w, i, w->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    heap_set(w, i, f);
}

static void heap_down(struct waiter *w, uint32_t i)
{
    struct vms_fiber_desc *f = w->heap[i];

    for (;;) {
        uint32_t c = 2 * i + 1;

        if (c >= w->heap_n)
            break;
        if (c + 1 < w->heap_n && w->heap[c + 1]->wait_deadline < w->heap[c]->wait_deadline)
            c++;
        if (w->heap[c]->wait_deadline >= f->wait_deadline)
            break;
        heap_set(w, i, w->heap[c]);
        i = c;
    }
    heap_set(w, i, f);
}

static int timer_add(struct waiter *w, struct vms_fiber_desc *f, uint64_t deadline)
{
    if (w->heap_n == w->heap_cap) {
        uint32_t cap = w->heap_cap ? 2 * w->heap_cap : 64;
        struct vms_fiber_desc **h = realloc(w->heap, cap * sizeof *h);

        if (!h)
            return vms__fail(ENOMEM, "out of memory for the thread's timers (%u waiting)", w->heap_n);
        w->heap = h;
        w->heap_cap = cap;
    }
    f->wait_deadline = deadline;
    w->heap[w->heap_n] = f;
    heap_up(w, w->heap_n++);
    return 0;
}

static void timer_del(struct waiter *w, struct vms_fiber_desc *f)
{
    uint32_t i = f->wait_heap - 1;

    f->wait_heap = 0;
    if (i == --w->heap_n)
        return;
    w->heap[i] = w->heap[w->heap_n];
    heap_down(w, i);
    heap_up(w, w->heap[i]->wait_heap - 1);
}

/* ---- the fd table ---- */

static struct fd_entry *fd_entry(struct waiter *w, int fd)
{
    if ((uint32_t)fd >= w->nfds) {
        uint32_t n = w->nfds ? w->nfds : 64;
        struct fd_entry *t;

        while (n <= (uint32_t)fd)
            n *= 2;
        if (!(t = realloc(w->fds, n * sizeof *t))) {
            vms__fail(ENOMEM, "out of memory for the thread's fd table (fd %d)", fd);
            return NULL;
        }
        memset(t + w->nfds, 0, (n - w->nfds) * sizeof *t);
        w->fds = t;
        w->nfds = n;
    }
    return &w->fds[fd];
}

/* ---- waking ---- */

/* Undoes f's wait: out of every structure, state back to not waiting. */
static void forget(struct waiter *w, struct vms_fiber_desc *f)
{
    if (f->wait_heap)
        timer_del(w, f);
    if (f->wait == VMS_WAIT_FD) {
        struct fd_entry *e = &w->fds[f->wait_fd];

        if (e->rd == f)
            e->rd = NULL;
        if (e->wr == f)
            e->wr = NULL;
        if (f->wait_verify)
            w->verify_n--;
        f->wait_verify = false;
        w->fd_waits--;
    } else if (f->wait == VMS_WAIT_PARK || f->wait == VMS_WAIT_OFFLOAD) {
        w->parked--;
    }
    f->wait = VMS_WAIT_NONE;
}

static void wake(struct waiter *w, struct vms_fiber_desc *f, int result)
{
    forget(w, f);
    f->wait_result = result;
    vms__sched_ready(f);
}

void vms__wait_forget(struct vms_fiber_desc *f)
{
    forget(me, f);
}

static uint64_t ev_data(int fd, uint32_t gen)
{
    return (uint64_t)gen << 32 | (uint32_t)fd;
}

static int ctl_error(int fd, int err)
{
    if (err == EBADF)
        return vms__fail(EBADF, "vms_wait_fd: fd %d is not open", fd);
    if (err == EPERM)
        return vms__fail(EPERM, "vms_wait_fd: fd %d cannot be waited on (epoll refuses regular files and "
                                "directories, which are always ready)", fd);
    return vms__fail(err, "vms_wait_fd: epoll_ctl on fd %d: %s", fd, strerror(err));
}

/* A new registration of fd, for every event, edge-triggered. 0 or -errno. */
static int fd_register(struct waiter *w, int fd)
{
    struct fd_entry *e = &w->fds[fd];
    struct epoll_event ev = { .events = EPOLLET | READ_SIDE | WRITE_SIDE };
    int rc;

    e->gen++;
    e->pending = 0;
    ev.data.u64 = ev_data(fd, e->gen);
    rc = epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev);
    /* EEXIST: this very file was registered and forgotten (vms_fd_close on another thread's table). */
    if (rc && errno == EEXIST)
        rc = epoll_ctl(w->epfd, EPOLL_CTL_MOD, fd, &ev);
    e->added = !rc;
    return rc ? ctl_error(fd, errno) : 0;
}

/*
 * Whether fd's registration is still that of the file now open as fd: MOD
 * answers ENOENT for another file, which gets a registration of its own.
 * MOD also re-polls, so a ready fd reports in the next epoll_wait.
 */
static int fd_verify(struct waiter *w, int fd)
{
    struct fd_entry *e = &w->fds[fd];
    struct epoll_event ev = { .events = EPOLLET | READ_SIDE | WRITE_SIDE, .data.u64 = ev_data(fd, e->gen) };

    if (!epoll_ctl(w->epfd, EPOLL_CTL_MOD, fd, &ev))
        return 0;
    if (errno == ENOENT)
        return fd_register(w, fd);
    e->added = false;
    return ctl_error(fd, errno);
}

/* Takes the reported events a wait for `events` returns; errors and hang-ups stay. */
static int fd_take(struct fd_entry *e, uint32_t events)
{
    uint32_t got = e->pending & (events | ALWAYS);

    e->pending &= ~(got & ~(uint32_t)STICKY);
    return (int)got;
}

/* Keeps what epoll reported for fd and readies the waiters it satisfies. */
static void fd_ready(struct waiter *w, uint64_t data, uint32_t revents)
{
    uint32_t fd = (uint32_t)data;
    struct fd_entry *e;
    int got;

    if (fd >= w->nfds)
        return;
    e = &w->fds[fd];
    if (!e->added || e->gen != (uint32_t)(data >> 32))
        return; /* an event of a registration vms_fd_close has ended */
    e->pending |= revents;
    if (e->rd && (got = fd_take(e, e->rd->wait_events)))
        wake(w, e->rd, got);
    if (e->wr && (got = fd_take(e, e->wr->wait_events)))
        wake(w, e->wr, got);
}

/* f's registration check is due: an error ends the waits on its fd; a timeout it has stays. */
static void verify_due(struct waiter *w, struct vms_fiber_desc *f)
{
    int rc, fd = f->wait_fd;

    f->wait_verify = false;
    w->verify_n--;
    if ((rc = fd_verify(w, fd)) < 0) {
        struct fd_entry *e = &w->fds[fd];

        if (e->rd)
            wake(w, e->rd, rc);
        if (e->wr)
            wake(w, e->wr, rc);
    }
}

/* Checks the registrations of the waits that have lasted VERIFY_NS, and sets the next sweep. */
static void verify_sweep(struct waiter *w, uint64_t now)
{
    uint64_t next = UINT64_MAX;

    for (uint32_t fd = 0; fd < w->nfds && w->verify_n; fd++) {
        struct fd_entry *e = &w->fds[fd];

        for (int side = 0; side < 2; side++) {
            struct vms_fiber_desc *f = side ? e->wr : e->rd;

            if (!f || !f->wait_verify)
                continue;
            if (now - f->wait_since >= VERIFY_NS)
                verify_due(w, f);
            else if (f->wait_since + VERIFY_NS < next)
                next = f->wait_since + VERIFY_NS;
        }
    }
    w->verify_at = next > now + VERIFY_NS / 4 ? next : now + VERIFY_NS / 4;
}

/* Posted wakes: ready those still parked; the others keep the saved wake for their next park. */
static bool take_wake(struct vms_fiber_desc *f);

/*
 * Offloaded calls that ended: ready their fibers.  A post names a fiber
 * that is sure to wait in vms_offload, unless its thread exited and the
 * port went to another thread (the fiber leaked): the check is for that.
 */
static void offload_drain(struct waiter *w, struct vms_offload_post *p)
{
    while (p) {
        struct vms_offload_post *next = p->next;
        struct vms_fiber_desc *f = p->f;

        if (atomic_load(&f->id) == p->id && vms__sched_owns(f) && f->wait == VMS_WAIT_OFFLOAD)
            wake(w, f, 0);
        p = next;
    }
}

static void port_drain(struct waiter *w)
{
    struct vms_wait_port *p = w->port;
    struct vms_offload_post *done;
    struct wake_req *q;
    size_t n;

    pthread_mutex_lock(&p->lock);
    p->sleeping = false;
    q = p->q;
    n = p->n;
    p->q = NULL;
    p->n = p->cap = 0;
    done = p->done;
    p->done = NULL;
    pthread_mutex_unlock(&p->lock);
    offload_drain(w, done);
    for (size_t i = 0; i < n; i++) {
        struct vms_fiber_desc *f = q[i].f;

        if (atomic_load(&f->id) == q[i].id && vms__sched_owns(f) && f->wait == VMS_WAIT_PARK && take_wake(f))
            wake(w, f, 0);
    }
    free(q);
}

static void port_post(struct vms_wait_port *p, struct vms_fiber_desc *f, uint64_t id)
{
    uint64_t one = 1;

    pthread_mutex_lock(&p->lock);
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 16;
        struct wake_req *q = realloc(p->q, cap * sizeof *q);

        if (!q) {
            /* The wake stays saved in the fiber; the owner sees it at its next park. */
            pthread_mutex_unlock(&p->lock);
            return;
        }
        p->q = q;
        p->cap = cap;
    }
    p->q[p->n++] = (struct wake_req){ f, id };
    if (p->sleeping) {
        p->sleeping = false;
        (void)!write(p->efd, &one, sizeof one);
    }
    pthread_mutex_unlock(&p->lock);
}

/* ---- the idle scheduler ---- */

/* How long epoll_wait may sleep: until the nearest deadline, or for ever (NULL). */
static struct timespec *idle_timeout(struct waiter *w, struct timespec *ts)
{
    uint64_t now, at, d;

    if (!w->heap_n && !w->verify_n)
        return NULL;
    at = w->heap_n ? w->heap[0]->wait_deadline : UINT64_MAX;
    if (w->verify_n && w->verify_at < at)
        at = w->verify_at;
    now = now_ns();
    d = at > now ? at - now : 0;
    ts->tv_sec = (time_t)(d / 1000000000u);
    ts->tv_nsec = (long)(d % 1000000000u);
    return ts;
}

/* epoll_pwait2 answered ENOSYS once: epoll_wait from then on. */
static _Atomic bool no_pwait2;

bool vms__wait_idle(void)
{
    struct waiter *w = me;
    struct timespec ts, zero = { 0, 0 }, *tmo;
    uint64_t now;
    int n;

    if (!w || (!w->heap_n && !w->fd_waits && !w->parked))
        return false;
    if (epoll_get(w))
        return false;
    tmo = idle_timeout(w, &ts);
    if (w->port) {
        pthread_mutex_lock(&w->port->lock);
        if (w->port->n || w->port->done)
            tmo = &zero; /* wakes are waiting already: only look */
        else
            w->port->sleeping = true;
        pthread_mutex_unlock(&w->port->lock);
    }
    n = no_pwait2 ? -1 : epoll_pwait2(w->epfd, w->ev, MAX_EVENTS, tmo, NULL);
    if (no_pwait2 || (n < 0 && errno == ENOSYS)) {
        /* Kernels before 5.11, and valgrind: millisecond timeouts; asked once. */
        no_pwait2 = true;
        n = epoll_wait(w->epfd, w->ev, MAX_EVENTS, tmo ? (int)(tmo->tv_sec * 1000 + (tmo->tv_nsec + 999999) / 1000000) : -1);
    }
    for (int i = 0; i < n; i++) {
        if (w->ev[i].data.u64 == PORT_TAG) {
            uint64_t v;

            (void)!read(w->port->efd, &v, sizeof v);
        } else {
            fd_ready(w, w->ev[i].data.u64, w->ev[i].events);
        }
    }
    if (w->port)
        port_drain(w);
    w->now = now = now_ns();
    while (w->heap_n && w->heap[0]->wait_deadline <= now) {
        struct vms_fiber_desc *f = w->heap[0];

        wake(w, f, f->wait == VMS_WAIT_PARK ? -ETIMEDOUT : 0);
    }
    if (w->verify_n && w->verify_at <= now)
        verify_sweep(w, now);
    return true;
}

/* ---- park and wake ---- */

/* Takes the wake saved in f, if any; a word left by an earlier fiber of the slot is reset. */
static bool take_wake(struct vms_fiber_desc *f)
{
    uint64_t id = atomic_load(&f->id), w = atomic_load(&f->wake);

    for (;;) {
        if (w == (id << 1 | 1)) {
            if (atomic_compare_exchange_weak(&f->wake, &w, id << 1))
                return true;
        } else if (w == id << 1) {
            return false;
        } else if (atomic_compare_exchange_weak(&f->wake, &w, id << 1)) {
            return false;
        }
    }
}

/* Saves a wake in the fiber of id; false when it has ended (the slot holds another or none). */
static bool save_wake(struct vms_fiber_desc *f, uint64_t id, bool *saved)
{
    uint64_t w = atomic_load(&f->wake);

    *saved = false;
    for (;;) {
        uint64_t want = id << 1 | 1;

        if (atomic_load(&f->id) != id)
            return false;
        if (w == want)
            return true;
        if (atomic_compare_exchange_weak(&f->wake, &w, want)) {
            *saved = true;
            return true;
        }
    }
}

uint64_t vms__deadline(int64_t timeout_ns)
{
    return timeout_ns < 0 ? UINT64_MAX : deadline_after((uint64_t)timeout_ns);
}

int vms__park_until(uint64_t deadline)
{
    struct vms_fiber_desc *f = vms__fiber_current();
    struct waiter *w;
    int rc;

    if (!f)
        return vms__fail(EPERM, "vms_fiber_park outside a fiber: only a fiber can park; the thread's own stack runs "
                                "the scheduler (vms_run)");
    if (f->ref == VMS_FIBER_NOREF)
        return vms__fail(EINVAL, "vms_fiber_park: this fiber has no handle to be woken by");
    if (!(w = waiter_get()))
        return -ENOMEM;
    if ((rc = port_get(w)))
        return rc;
    /* Published before the saved wake is looked at: a waker that saves one after this finds the port. */
    atomic_store(&f->wait_port, w->port);
    if (take_wake(f))
        return 0;
    if (deadline != UINT64_MAX && (rc = timer_add(w, f, deadline)))
        return rc;
    f->wait = VMS_WAIT_PARK;
    f->wait_result = 0;
    w->parked++;
    f->wait_since = w->now;
    vms__sched_block();
    return f->wait_result;
}

void vms__wake_discard(struct vms_fiber_desc *f)
{
    (void)take_wake(f);
}

/* ---- calls made by other threads (offload.c) ---- */

int vms__offload_block(struct vms_wait_port **port, void (*submit)(void *), void *arg)
{
    struct vms_fiber_desc *f = vms__fiber_current();
    struct waiter *w;
    int rc;

    if (!(w = waiter_get()))
        return -ENOMEM;
    if ((rc = port_get(w)))
        return rc;
    *port = w->port;
    f->wait = VMS_WAIT_OFFLOAD;
    f->wait_result = 0;
    w->parked++;
    f->wait_since = w->now;
    /* Submitted only once nothing can kill the fiber before it waits: the call never outlives its caller. */
    vms__sched_block_then(submit, arg);
    return 0;
}

void vms__offload_post(struct vms_wait_port *p, struct vms_offload_post *post)
{
    uint64_t one = 1;

    pthread_mutex_lock(&p->lock);
    post->next = p->done;
    p->done = post;
    if (p->sleeping) {
        p->sleeping = false;
        (void)!write(p->efd, &one, sizeof one);
    }
    pthread_mutex_unlock(&p->lock);
}

int vms_fiber_park(void)
{
    int rc = vms__park_until(UINT64_MAX);

    /* Not a tail call: a debugger without debug information (vms_debug_table)
     * then still shows the call a parked fiber is waiting in. */
    __asm__ volatile("" ::: "memory");
    return rc;
}

int vms_fiber_wake(vms_fiber h)
{
    struct vms_slot *slot = h.ref == VMS_FIBER_NOREF ? NULL : vms__slot_of_id(h.ref);
    struct vms_fiber_desc *f;
    struct vms_wait_port *port;
    bool saved;

    if (!slot || h.id == 0)
        return vms__fail(EINVAL, "vms_fiber_wake: not a fiber handle (id %llu): never spawned, or corrupted",
                         (unsigned long long)h.id);
    f = vms__slot_fiber(slot);
    if (!save_wake(f, h.id, &saved))
        return vms__fail(EALREADY, "vms_fiber_wake: fiber %llu has ended (stale handle)", (unsigned long long)h.id);
    if (!saved)
        return 0; /* a wake was saved already: one is enough */
    if (vms__sched_owns(f)) {
        if (f->wait == VMS_WAIT_PARK && take_wake(f))
            wake(me, f, 0);
        return 0;
    }
    if ((port = atomic_load(&f->wait_port)))
        port_post(port, f, h.id);
    return 0;
}

/* ---- timers and fds ---- */

int vms_sleep_ns(uint64_t ns)
{
    struct vms_fiber_desc *f = vms__fiber_current();
    struct waiter *w;
    int rc;

    if (!f)
        return vms__fail(EPERM, "vms_sleep_ns outside a fiber: only a fiber can sleep; use nanosleep on the "
                                "thread's own stack");
    if (!(w = waiter_get()))
        return -ENOMEM;
    if ((rc = timer_add(w, f, deadline_after(ns))))
        return rc;
    f->wait = VMS_WAIT_SLEEP;
    f->wait_since = w->now;
    vms__sched_block();
    return 0;
}

/* A timeout of 0: readiness now, as poll() sees it. */
static int poll_now(int fd, uint32_t events)
{
    struct pollfd p = { .fd = fd, .events = (short)events };

    if (poll(&p, 1, 0) < 0)
        return vms__fail(errno, "vms_wait_fd: poll on fd %d: %s", fd, strerror(errno));
    if (p.revents & POLLNVAL)
        return vms__fail(EBADF, "vms_wait_fd: fd %d is not open", fd);
    return p.revents & (int)(events | ALWAYS);
}

static int busy(int fd, const struct vms_fiber_desc *other, const char *side)
{
    return vms__fail(EBUSY, "vms_wait_fd: fiber %llu '%s' already waits on fd %d for %s; one fiber per fd and "
                            "direction", (unsigned long long)other->task->id, other->task->name, fd, side);
}

int vms_wait_fd(int fd, uint32_t events, int64_t timeout_ns)
{
    struct vms_fiber_desc *f = vms__fiber_current();
    struct waiter *w;
    struct fd_entry *e;
    bool old;
    int rc;

    if (!f)
        return vms__fail(EPERM, "vms_wait_fd outside a fiber: only a fiber can wait; the thread's own stack runs "
                                "the scheduler (vms_run)");
    if (fd < 0)
        return vms__fail(EBADF, "vms_wait_fd: %d is not a file descriptor", fd);
    if (!events || (events & ~(uint32_t)(READ_SIDE | WRITE_SIDE)))
        return vms__fail(EINVAL, "vms_wait_fd: events 0x%x: wait for EPOLLIN, EPOLLPRI, EPOLLRDHUP and/or EPOLLOUT",
                         events);
    if (timeout_ns == 0)
        return poll_now(fd, events);
    if (!(w = waiter_get()) || !(e = fd_entry(w, fd)))
        return -ENOMEM;
    if ((rc = epoll_get(w)))
        return rc;
    if ((events & READ_SIDE) && e->rd)
        return busy(fd, e->rd, "reading");
    if ((events & WRITE_SIDE) && e->wr)
        return busy(fd, e->wr, "writing");
    if (!(old = e->added) && (rc = fd_register(w, fd)))
        return rc;
    if ((rc = fd_take(e, events)))
        return rc; /* reported since the last wait took its events */
    if (events & READ_SIDE)
        e->rd = f;
    if (events & WRITE_SIDE)
        e->wr = f;
    f->wait = VMS_WAIT_FD;
    f->wait_fd = fd;
    f->wait_events = events;
    f->wait_result = 0;
    f->wait_verify = false;
    w->fd_waits++;
    if (timeout_ns > 0 && (rc = timer_add(w, f, deadline_after((uint64_t)timeout_ns)))) {
        forget(w, f);
        return rc;
    }
    /* A check must not come early because the thread has not idled for a while: the time itself. */
    f->wait_since = old ? now_ns() : w->now;
    if (old) {
        f->wait_verify = true;
        if (!w->verify_n++)
            w->verify_at = f->wait_since + VERIFY_NS;
    }
    vms__sched_block();
    return f->wait_result;
}

int vms_fd_close(int fd)
{
    struct waiter *w = me;
    struct fd_entry *e;

    if (w && fd >= 0 && (uint32_t)fd < w->nfds) {
        e = &w->fds[fd];
        /* Before the close: a duplicate of fd elsewhere would keep the registration alive. */
        if (e->added)
            epoll_ctl(w->epfd, EPOLL_CTL_DEL, fd, NULL);
        e->added = false;
        e->pending = 0;
        e->gen++; /* events of this registration still in the batch being handled are dropped */
        if (e->rd)
            wake(w, e->rd, -EBADF);
        if (e->wr)
            wake(w, e->wr, -EBADF);
    }
    if (close(fd))
        return vms__fail(errno, "vms_fd_close: fd %d: %s", fd, strerror(errno));
    return 0;
}
