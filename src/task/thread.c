/* SPDX-License-Identifier: MIT */
/*
 * Threads on vmstack stacks: pthread_create with pthread_attr_setstack on a
 * guarded, cached stack, the task record filled for overflow reports, and
 * the stack freed once the thread is really gone.
 *
 * glibc places the thread's descriptor (struct pthread) and its static TLS
 * at the top of a stack given with pthread_attr_setstack, as it does on
 * the stacks it maps itself, so a thread gets the same usable bytes either
 * way.  It also means that glibc keeps writing to the stack until the
 * kernel has cleared the descriptor's tid at the very end of the thread:
 * the stack may be freed only after that.
 *
 * Joinable threads: pthread_join returns only after the kernel cleared the
 * tid (CLONE_CHILD_CLEARTID), so vms_thread_join frees the stack right
 * after it.  pthread_t is the address of the descriptor, which lies on the
 * stack, so the stack of a thread is found with vms_on_stack(): no table.
 *
 * Detached threads: they are never detached in glibc's eyes.  A thread
 * created detached, or detached later, stays joinable and goes on a reap
 * list; every later thread creation tries pthread_tryjoin_np on a few
 * (REAP_PER_CALL) entries of the list, round robin, which succeeds only
 * once the kernel cleared the tid, and frees their stacks.  That is the
 * kernel's own test (glibc's stack cache uses it too), through a public
 * call: no knowledge of struct pthread's layout, no extra thread, no
 * syscall.  A finished detached thread's stack waits for the next create,
 * which is exactly when a stack is wanted again.  (Should that list not
 * grow for want of memory, the thread's stack is never freed: a leak, not
 * a use after free.)  The task record remembers that the thread is
 * detached, so that join and detach answer EINVAL as glibc does, and a
 * handle whose stack was freed (a thread already joined) gets ESRCH,
 * never a call into glibc with a descriptor that is gone.
 */
#include "task/task.h"
#include "core/sanitizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define REAP_PER_CALL 4 /* detached threads looked at per create */

struct vms_pthread_fns vms__pthread = {
    .create = pthread_create,
    .join = pthread_join,
    .tryjoin = pthread_tryjoin_np,
    .detach = pthread_detach,
};

void (*vms__thread_ended)(vms_stack *st);

/*
 * What the new thread needs from its creator, its start routine and
 * argument, waits in the task layer's record of the thread's stack slot,
 * in the fields a fiber keeps its own in: no malloc, which would make the
 * new thread set up malloc's per-thread cache only to free the record.
 */
static struct vms_fiber_desc *start_record(struct vms_task *task)
{
    return vms__slot_fiber((struct vms_slot *)(void *)((char *)task - offsetof(struct vms_slot, task)));
}

/* A finished thread's stack back to the caches (the kernel cleared its tid: glibc is done with it). */
void vms__thread_release(vms_stack *st)
{
    if (vms__thread_ended)
        vms__thread_ended(st);
    vms_stack_free(st);
}

/* ---- the reap list of detached threads ---- */

static pthread_mutex_t reap_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t *reap;
static size_t reap_n, reap_cap, reap_next;
static _Atomic size_t reap_count; /* reap_n, read without the lock */

/* A child after fork has none of these threads: they will never end there. */
static void reap_forget(void)
{
    reap_n = 0;
    atomic_store_explicit(&reap_count, 0, memory_order_relaxed);
}

static void reap_lock_take(void)
{
    pthread_mutex_lock(&reap_lock);
}

static void reap_lock_release(void)
{
    pthread_mutex_unlock(&reap_lock);
}

static void reap_child(void)
{
    reap_forget();
    reap_lock_release();
}

/* Free and whole in a child after fork (core/fork.c). */
__attribute__((constructor)) static void reap_at_fork(void)
{
    vms__fork_hook(VMS_FORK_TASK, reap_lock_take, reap_lock_release, reap_child);
}

static int reap_push(pthread_t t)
{
    int rc = 0;

    pthread_mutex_lock(&reap_lock);
    if (reap_n == reap_cap) {
        size_t cap = reap_cap ? 2 * reap_cap : 64;
        pthread_t *p = realloc(reap, cap * sizeof *p);
        if (p) {
            reap = p;
            reap_cap = cap;
        }
    }
    if (reap_n < reap_cap) {
        reap[reap_n++] = t;
        atomic_store_explicit(&reap_count, reap_n, memory_order_relaxed);
    } else {
        rc = vms__fail(ENOMEM, "out of memory for the list of detached threads");
    }
    pthread_mutex_unlock(&reap_lock);
    return rc;
}

/* Joins and frees what finished among a few detached threads, round robin. */
void vms__thread_reap(void)
{
    if (!atomic_load_explicit(&reap_count, memory_order_relaxed))
        return;
    pthread_mutex_lock(&reap_lock);
    for (int k = 0; k < REAP_PER_CALL && reap_n; k++) {
        size_t i = reap_next++ % reap_n;
        vms_stack st;
        int ours = vms_on_stack((void *)reap[i], &st);
        if (ours && vms__pthread.tryjoin(reap[i], NULL))
            continue; /* still running, or glibc still on its way out */
        if (ours)
            vms__thread_release(&st);
        reap[i] = reap[--reap_n];
    }
    atomic_store_explicit(&reap_count, reap_n, memory_order_relaxed);
    pthread_mutex_unlock(&reap_lock);
}

/* ---- creating, joining, detaching ---- */

/* The tid is not asked for: the fault handler looks it up when a report needs it. */
void vms__thread_begin(void)
{
    vms__thread_ready();
}

static void *thread_entry(void *p)
{
    struct vms_task *task = p;
    struct vms_fiber_desc *start = start_record(task);

    vms__thread_begin();
    if (task->name[0])
        prctl(PR_SET_NAME, task->name);
    return start->fn(start->arg);
}

/* The top of the stack set with pthread_attr_setstack, or NULL. */
void *vms__attr_stackaddr(const pthread_attr_t *attr)
{
    void *lo;
    size_t size;

    /* glibc computes lo as top - size even when no stack was set, with a NULL top. */
    if (!attr || pthread_attr_getstack(attr, &lo, &size))
        return NULL;
    return (void *)((uintptr_t)lo + size);
}

int vms__thread_start_on(pthread_t *t, const pthread_attr_t *attr, const vms_stack *st,
                         const struct vms_thread_start *how)
{
    struct vms_task *task = vms__task_of(st);
    pthread_attr_t a;
    int detached = PTHREAD_CREATE_JOINABLE, rc;

    /*
     * A copy of the caller's attributes, not a rebuilt set: glibc keeps the
     * CPU set and signal mask in a separately allocated extension, which the
     * copy shares.  The copy is never destroyed, so nothing is freed twice.
     */
    if (attr) {
        memcpy(&a, attr, sizeof a);
        pthread_attr_getdetachstate(attr, &detached);
    } else {
        pthread_attr_init(&a);
    }
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_JOINABLE);
    if ((rc = pthread_attr_setstack(&a, st->base, st->size)))
        return vms__fail(rc, "pthread_attr_setstack refused a %zu KiB stack: %s", st->size >> 10, strerror(rc));
    if (task) {
        task->kind = VMS_TASK_THREAD;
        task->start = how->start;
        if (how->name)
            strncpy(task->name, how->name, sizeof task->name - 1);
        /* Before the thread runs: its pthread_getattr_np must see it. */
        task->detached = detached == PTHREAD_CREATE_DETACHED;
    }
    vms__thread_reap();
    vms__san_accessible(st->base, st->size);
    if ((rc = vms__pthread.create(t, &a, how->entry, how->arg)))
        return rc == EINVAL ? vms__fail(rc, "pthread_create refused a %zu KiB stack: too small for the static TLS "
                                            "of this program? ask for a larger one", st->size >> 10)
                            : vms__fail(rc, "pthread_create: %s", strerror(rc));
    if (detached == PTHREAD_CREATE_DETACHED)
        reap_push(*t);
    return 0;
}

/* The attr's stack size rounded up to what vmstack accepts; 0 for the default. */
static size_t stack_size_of(const pthread_attr_t *attr)
{
    size_t size = 0, pg = (size_t)sysconf(_SC_PAGESIZE);

    if (attr)
        pthread_attr_getstacksize(attr, &size);
    if (size == 0)
        return 0;
    size = (size + pg - 1) & ~(pg - 1);
    return size < VMS_MIN_STACK ? VMS_MIN_STACK : size;
}

int vms_thread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg, const char *name)
{
    struct vms_thread_start how = { .entry = thread_entry, .name = name, .start = (void *)fn };
    struct vms_fiber_desc *start;
    struct vms_task *task;
    vms_stack st;
    int rc;

    if (vms__attr_stackaddr(attr))
        return vms__fail(EINVAL, "vms_thread_create: attr has a stack of its own (pthread_attr_setstack): "
                                 "use pthread_create for that thread");
    if ((rc = vms_stack_alloc(&st, stack_size_of(attr))))
        return rc;
    /* A stack just handed out is live: it has its record. */
    task = vms__task_of(&st);
    start = start_record(task);
    start->fn = fn;
    start->arg = arg;
    how.arg = task;
    if ((rc = vms__thread_start_on(t, attr, &st, &how)))
        vms_stack_free(&st);
    return rc;
}

/*
 * pthread_t is the address of glibc's descriptor, at the top of the thread's
 * stack: a stale handle points into a slot of ours that is free, or live
 * for something else than a thread.
 */
int vms__thread_of(pthread_t t, vms_stack *st)
{
    struct vms_loc loc;
    struct vms_slot *s;

    /* One lookup: the slot's state and record say the rest. */
    vms__locate((void *)t, &loc);
    if (loc.where == VMS_AT_NONE)
        return 0;
    if (loc.where != VMS_AT_STACK)
        return -ESRCH;
    s = &loc.region->slots[loc.slot];
    if ((uint32_t)atomic_load_explicit(&s->state, memory_order_acquire) != VMS_SLOT_LIVE ||
        s->task.kind != VMS_TASK_THREAD)
        return -ESRCH;
    vms__fill_handle(loc.region, loc.slot, st);
    return s->task.detached ? -EINVAL : 1;
}

int vms__thread_join(pthread_t t, void **ret, int (*join)(pthread_t, void **))
{
    vms_stack st;
    int ours = vms__thread_of(t, &st), rc;

    if (ours < 0)
        return ours;
    if ((rc = join(t, ret)))
        return vms__fail(rc, "pthread_join: %s", strerror(rc));
    if (ours)
        vms__thread_release(&st);
    return 0;
}

int vms_thread_join(pthread_t t, void **ret)
{
    return vms__thread_join(t, ret, vms__pthread.join);
}

int vms_thread_detach(pthread_t t)
{
    vms_stack st;
    int ours = vms__thread_of(t, &st), rc;

    if (ours < 0)
        return ours;
    if (ours) {
        /* Marked first: once on the reap list, the stack may be freed by another thread at any time. */
        struct vms_task *task = vms__task_of(&st);
        task->detached = true;
        if ((rc = reap_push(t)))
            task->detached = false;
        return rc;
    }
    if ((rc = vms__pthread.detach(t)))
        return vms__fail(rc, "pthread_detach: %s", strerror(rc));
    return 0;
}
