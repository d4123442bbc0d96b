/* SPDX-License-Identifier: MIT */
/*
 * The task layer's interfaces: fibers and their per-thread scheduler
 * (fiber.c, with arch's switch) and threads on vmstack stacks (thread.c).
 * May call core; reaches the layers above only through the hooks declared
 * here, which they register.
 */
#ifndef VMS_TASK_H
#define VMS_TASK_H

#include "arch/arch.h"
#include "core/internal.h"

/*
 * A fiber, or a thread's own context as seen by its scheduler (the "main"
 * descriptor).  Fibers on vmstack stacks keep it in their slot; nothing of
 * it is ever stored on the fiber's stack.  Only the owning thread touches
 * it, except id and owner, which other threads read to reject handles.
 */
struct vms_fiber_desc {
    void *sp;                         /* saved stack pointer while switched out; NULL until first run */
    char *base;                       /* usable stack [base, base + size) */
    size_t size;
    struct vms_fiber_desc *next, *prev; /* ring of ready fibers */
    struct vms_fiber_desc *joiner;    /* who waits in vms_fiber_join for it */
    _Atomic uint64_t id;              /* 0 once joined (or reaped, detached) */
    _Atomic uint64_t owner;           /* serial of the owning thread's scheduler */
    void *(*fn)(void *);
    void *arg;                        /* fn's argument, then its result */
    void (*on_kill)(void *);
    void *on_kill_arg;
    struct vms_task *task;            /* name and id for reports */
    vms_stack stack;                  /* the vmstack stack, when owns_stack */
    char *top;                        /* initial stack pointer, 16-byte aligned */
    uint64_t fpenv;                   /* initial MXCSR | x87 control word << 32: the spawner's */
    uint32_t ref;                     /* handle's ref: stack id, or VMS_FIBER_NOREF */
    uint8_t end;                      /* vms_fiber_end, once ended */
    bool ended, detached, owns_stack, dying;
    bool canary;                      /* VMS_STACK_END_MAGIC at base: only where no guard is below */
    void *san_fake;                   /* ASan fake stack while switched out */
    void *san_tsan;                   /* TSan fiber context */
    unsigned vg_id;                   /* valgrind stack registration, 0: none */
    /*
     * Waiting (wait.c).  wait says what the fiber sleeps on; with
     * VMS_WAIT_NONE it is running, ready, or blocked in vms_fiber_join.  The
     * other fields mean something only while wait says so.  Debuggers read
     * them by name.
     */
    uint8_t wait;                     /* enum vms_fiber_wait */
    bool wait_verify;                 /* VMS_WAIT_FD: its registration is checked VERIFY_NS after wait_since */
    bool trim_listed;                 /* in its thread's list of fibers that waited since a trim (trim.c) */
    int32_t wait_fd;                  /* VMS_WAIT_FD: the descriptor */
    uint32_t wait_events;             /* VMS_WAIT_FD: the EPOLL* events wanted */
    int32_t wait_result;              /* what the wait returns: events, 0 (timeout), -errno */
    uint32_t wait_heap;               /* position + 1 in the thread's timer heap; 0: no timer */
    uint64_t wait_deadline;           /* CLOCK_MONOTONIC ns at which the timer fires */
    _Atomic uint64_t wake;            /* id << 1 | 1 while a wake is saved for the next park */
    _Atomic(void *) wait_port;        /* the owner's port for wakes from other threads */
    struct vms_fiber_sync *sync;      /* locks held, the wait in progress, fiber-local values; NULL: none yet */
    uint64_t wait_since;              /* when it last blocked in wait.c (ns): the thread's last idle time, or
                                         for a wait_verify the time itself */
    uint32_t trim_next, trim_prev;    /* that list's links, as the neighbours' ref + 1 (0: none) */
};

/* What a fiber waits for (vms_fiber_desc.wait). */
enum vms_fiber_wait {
    VMS_WAIT_NONE = 0, /* not waiting: running, ready, or joining */
    VMS_WAIT_PARK,     /* in vms_fiber_park, until vms_fiber_wake */
    VMS_WAIT_SLEEP,    /* in vms_sleep_ns, until wait_deadline */
    VMS_WAIT_FD,       /* in vms_wait_fd on wait_fd, until ready or wait_deadline (when wait_heap) */
    VMS_WAIT_OFFLOAD,  /* in vms_offload, until a helper thread posts the call's end */
};

_Static_assert(sizeof(struct vms_fiber_desc) <= VMS_SLOT_EXT_BYTES, "a fiber descriptor fits its slot");

/* The fiber descriptor kept in a slot of the descriptor table. */
static inline struct vms_fiber_desc *vms__slot_fiber(struct vms_slot *s)
{
    return (struct vms_fiber_desc *)(void *)s->task_ext;
}

/*
 * Hooks the stack tracer registers when it is configured (NULL before):
 * start runs for a fiber about to run for the first time, end for one
 * ending, on its own stack.
 */
typedef void (*vms_fiber_hook)(const struct vms_fiber_desc *f);
extern _Atomic vms_fiber_hook vms__fiber_start_hook, vms__fiber_end_hook;

/*
 * fiber.c, for the fault handler (a call down, not a hook).  Kills the calling thread's
 * current fiber with status (a vms_fiber_end, VMS_FIBER_KILLED_*): runs its
 * on_kill hook, marks it ended, wakes its joiner, and switches to the next
 * ready fiber or the scheduler; the stack goes back to the cache when the
 * fiber is joined (at once when detached).  Never returns.
 *   - Runs as ordinary code on the dying fiber's own stack, NOT inside a
 *     signal handler: the handler redirects the faulting context into
 *     vms__fiber_kill_current(status) as the outermost frame near the
 *     stack's top, which is intact (vms__uc_redirect) and returns, so the signal mask
 *     is restored.  Anything deeper on the stack is abandoned.
 *   - Only when vms__fiber_current() is the fiber whose stack overflowed;
 *     with no current fiber it aborts.
 *   - Needs about 1 KiB of stack plus what the on_kill hook uses.
 *   - Reentrant for a fault inside the kill itself: the hook runs once.
 * vms__fiber_current() is the calling thread's running fiber (NULL on the
 * thread's own stack); a thread-local load, async-signal-safe.
 */
_Noreturn void vms__fiber_kill_current(int status);
struct vms_fiber_desc *vms__fiber_current(void);
/*
 * True while the calling thread's running fiber is in the scheduler's stack
 * probe, which touches the stack a switch will need before the scheduler
 * changes anything: a fault there finds vmstack holding nothing for the
 * fiber, so vmstack's own frames on its chain do not forbid the kill.
 * A thread-local load, async-signal-safe.
 */
bool vms__fiber_probing(void);

/*
 * fiber.c: fibers on stacks vmstack did not allocate, or on a bare vmstack
 * stack without colour, for the benchmarks' baselines (same scheduler and
 * switch, other stack; a canary unless a guard lies below; the default
 * options: joinable, named "fiber").  f and task are the caller's and must
 * stay put until vms__fiber_wait returned; the handle of such a fiber has
 * ref VMS_FIBER_NOREF and is not accepted by the public calls.
 * vms__fiber_wait is vms_fiber_join without freeing the stack.
 */
#define VMS_FIBER_NOREF UINT32_MAX
int vms__fiber_start(struct vms_fiber_desc *f, struct vms_task *task, void *base, size_t size,
                     void *(*fn)(void *), void *arg);
int vms__fiber_wait(struct vms_fiber_desc *f, vms_fiber_status *st);

/*
 * fiber.c, for wait.c: the scheduler's side of waiting.
 *   - vms__sched_block: the current fiber, its wait already recorded, stops
 *     being ready and switches away (to the next ready fiber, or to the
 *     thread's own context, which then idles); returns once made ready.
 *     May kill the fiber instead (no room to switch, broken canary), after
 *     which vms__wait_forget has undone its wait.
 *   - vms__sched_ready: makes a fiber of this thread that blocked ready.
 *   - vms__sched_owns: whether f is a fiber of the calling thread (any thread).
 * wait.c, for fiber.c:
 *   - vms__wait_idle: the thread's own context has nothing ready: sleeps in
 *     epoll_wait until a timer, an fd or a wake makes fibers ready, and
 *     readies them.  false at once when no fiber waits for anything that
 *     could come (only joins are left: a deadlock).
 *   - vms__wait_forget: f ends while waiting: takes it out of the timer
 *     heap and the fd table.
 */
void vms__sched_block(void);
/*
 * As vms__sched_block, calling then(arg) once the fiber can no longer be
 * killed before it has switched away (after the stack probe and the canary
 * check): whatever then() starts is sure to find the fiber waiting.  then()
 * runs on the fiber's stack within the probed headroom: a few small frames.
 */
void vms__sched_block_then(void (*then)(void *), void *arg);
void vms__sched_ready(struct vms_fiber_desc *f);
bool vms__sched_owns(const struct vms_fiber_desc *f);
bool vms__wait_idle(void);
void vms__wait_forget(struct vms_fiber_desc *f);
/*
 * trim.c, for fiber.c: vms__trim_note lists the current fiber, which owns
 * its stack and is about to block, among those vms_fiber_trim looks at
 * (once: a fiber listed already stays so); vms__trim_forget takes an
 * ending fiber off that list.  The list is the calling thread's own.
 */
void vms__trim_note(struct vms_fiber_desc *f);
void vms__trim_forget(struct vms_fiber_desc *f);

/*
 * Fiber synchronisation (waitq.c, mutex.c, cond.c, chan.c, waitgroup.c,
 * fls.c), between fibers of any threads.  Each object keeps its waiters in
 * a FIFO of nodes on the waiters' stacks, under a spinlock held only for a
 * few stores (never across a switch).  A waker takes the node out, sets
 * its state and result, and wakes its fiber (vms_fiber_wake, which reaches
 * other threads) before it lets the spinlock go; the fiber re-reads its
 * node under the spinlock, so a spurious return from its park is harmless.
 * While a fiber waits, its node is in sync->node: a fiber killed there
 * (no room to switch away) is taken out of the queue, or, granted a mutex
 * already, gives it on as its owner's death.
 */
struct vms_spin {
    _Atomic int v;
};

/*
 * VMS_OPAQUE_OF(name, pub, bytes, internal) defines name(p): the internal
 * struct kept in the caller's object p of the public opaque type pub
 * (vms_mutex and its kin, an array of uint64_t).  pub's size (bytes) and
 * alignment are the ABI and must not change; internal must fit in them.
 * The cast names another type for one object, which C's aliasing rule does
 * not allow in general; it is safe here because no code reads or writes
 * the object through both types: the caller's code only zeroes it
 * (VMS_MUTEX_INIT, memset) and passes its address to the library's calls,
 * which are out of line in a separately compiled library, and the library
 * touches it only through internal.
 */
#define VMS_OPAQUE_OF(name, pub, bytes, internal)                                                                   \
    _Static_assert(sizeof(pub) == (bytes) && _Alignof(pub) == 8, #pub ": its size and alignment are the ABI");       \
    _Static_assert(sizeof(internal) <= sizeof(pub) && _Alignof(internal) <= _Alignof(pub), #pub " holds " #internal); \
    static internal *name(pub *p)                                                                                      \
    {                                                                                                                  \
        return (internal *)(void *)p;                                                                                  \
    }
void vms__spin_lock(struct vms_spin *l);
void vms__spin_unlock(struct vms_spin *l);

enum vms_wq_kind { VMS_WQ_MUTEX = 1, VMS_WQ_OTHER };

struct vms_wq_node {
    struct vms_wq_node *next, *prev;
    struct vms_fiber_desc *f;
    vms_fiber h;
    void *item;                 /* a channel's item, to copy from (send) or into (recv) */
    struct vms_spin *lock;      /* of the object waited on */
    struct vms_wq *q;           /* the queue it is in while state is 0 */
    void *obj;                  /* VMS_WQ_MUTEX: the mutex, which the fiber owns once granted */
    int kind;                   /* enum vms_wq_kind */
    int state;                  /* 0 waiting, 1 granted (under lock) */
    int result;                 /* what the wait returns once granted */
};

struct vms_wq {
    struct vms_wq_node *head, *tail;
};

struct vms_fiber_sync {
    struct vms_wq_node *node;   /* the wait in progress */
    void *held;                 /* the mutexes it holds (mutex.c's struct mutex list) */
    void **keys;                /* fiber-local values, by key */
    size_t nkeys;
};

/* The current fiber's sync state (made on first use), or NULL with the error's message: -EPERM, -ENOMEM in *rc. */
struct vms_fiber_desc *vms__sync_self(struct vms_fiber_sync **sync, int *rc);
void vms__wq_push(struct vms_wq *q, struct vms_wq_node *n);
struct vms_wq_node *vms__wq_pop(struct vms_wq *q);
/* Grants n (taken out of its queue) with result and wakes its fiber; under n's lock. */
void vms__wq_grant(struct vms_wq_node *n, int result);
/*
 * The current fiber, whose node n is queued (lock held), waits until granted
 * or deadline (CLOCK_MONOTONIC ns; UINT64_MAX: none).  Returns with the lock
 * released: n's result, or -ETIMEDOUT (n out of its queue).
 */
int vms__wq_wait(struct vms_wq_node *n, struct vms_fiber_sync *sync, uint64_t deadline);
/* Takes n, queued but not waited on yet, out of its queue (a grant that came already is dropped). */
void vms__wq_cancel(struct vms_wq_node *n, struct vms_fiber_sync *sync);
uint64_t vms__deadline(int64_t timeout_ns);
/* fiber.c calls it as a fiber ends (returned or killed), on its stack: releases what it holds. */
void vms__sync_fiber_end(struct vms_fiber_desc *f, int end);
void vms__mutex_owner_died(struct vms_fiber_desc *f, void *m, bool killed);
void vms__mutex_held_add(struct vms_fiber_sync *sync, void *m);
void vms__fls_end(struct vms_fiber_sync *sync);

/*
 * wait.c, for waitq.c: vms__park_until parks the current fiber (which has
 * a handle) until vms_fiber_wake or deadline: 0, or -ETIMEDOUT.
 * vms__wake_discard drops a wake saved for f's next park.
 */
int vms__park_until(uint64_t deadline);
void vms__wake_discard(struct vms_fiber_desc *f);

/*
 * wait.c, for offload.c: a fiber waits for a call another thread makes for
 * it.  vms__offload_block blocks the current fiber (VMS_WAIT_OFFLOAD) until
 * vms__offload_post(port, p) is called with p->f and p->id naming it; *port
 * is the thread's wake port, set before submit(arg) runs, which is called as
 * vms__sched_block_then's then.  A vms_fiber_wake meanwhile stays saved for
 * the next vms_fiber_park.  Returns 0, or -ENOMEM, -EMFILE (the port; then
 * submit was not called).  p lives in the waiting fiber's frame: the fiber
 * cannot go on before its thread has taken p off the port, so the poster
 * must not touch p (nor what holds it) after the post.
 */
struct vms_wait_port;
struct vms_offload_post {
    struct vms_offload_post *next;  /* in the port's list, under its lock */
    struct vms_fiber_desc *f;
    uint64_t id;                    /* f's id when it blocked */
};
int vms__offload_block(struct vms_wait_port **port, void (*submit)(void *), void *arg);
void vms__offload_post(struct vms_wait_port *port, struct vms_offload_post *p);

/*
 * thread.c: threads on vmstack stacks.  vms__pthread holds the pthread
 * calls thread.c makes: libc's, except in libvmstack-preload.so, which
 * interposes them and points these past itself (dlsym RTLD_NEXT).
 * vms__thread_start_on creates a thread on st (which the caller keeps on
 * failure), fills its task record and puts a detached thread on the reap
 * list; entry must call vms__thread_begin() first in the new thread.
 * vms__thread_join joins with join and frees a vmstack stack;
 * vms__thread_of tells whether t runs on a vmstack stack (1, st filled),
 * not (0), or is a thread of ours that join and detach must refuse as
 * glibc would: -EINVAL when detached, -ESRCH once joined (its slot freed);
 * vms__thread_reap frees the stacks of finished detached threads.
 * vms__thread_release frees a finished thread's stack, after calling
 * vms__thread_ended on it when set (libvmstack-preload.so measures the
 * thread's final peak there and zeroes what it used, so that the next
 * thread's peak is its own).
 */
struct vms_pthread_fns {
    int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    int (*join)(pthread_t, void **);
    int (*tryjoin)(pthread_t, void **);
    int (*detach)(pthread_t);
};
extern struct vms_pthread_fns vms__pthread;
/* A thread to start: its routine, and what its task record names (name NULL: none; start: its routine). */
struct vms_thread_start {
    void *(*entry)(void *);
    void *arg;
    const char *name;
    void *start;
};
int vms__thread_start_on(pthread_t *t, const pthread_attr_t *attr, const vms_stack *st,
                         const struct vms_thread_start *how);
void vms__thread_begin(void);
int vms__thread_join(pthread_t t, void **ret, int (*join)(pthread_t, void **));
int vms__thread_of(pthread_t t, vms_stack *st);
void vms__thread_reap(void);
void vms__thread_release(vms_stack *st);
extern void (*vms__thread_ended)(vms_stack *st);
void *vms__attr_stackaddr(const pthread_attr_t *attr);

#endif
