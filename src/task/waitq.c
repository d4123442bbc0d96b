/* SPDX-License-Identifier: MIT */
/*
 * The wait queue under every fiber synchronisation object (task.h says how
 * waiters and wakers meet), the spinlock that guards it, and what a fiber
 * that ends leaves behind: its wait, its mutexes, its fiber-local values.
 */
#include "task/task.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>

/* Held for a few stores, never across a switch: spin a little, then let the holder's thread run. */
void vms__spin_lock(struct vms_spin *l)
{
    for (unsigned n = 0; atomic_exchange_explicit(&l->v, 1, memory_order_acquire); n++) {
        while (atomic_load_explicit(&l->v, memory_order_relaxed)) {
            if (++n < 64)
                vms__arch_cpu_relax();
            else
                sched_yield();
        }
    }
}

void vms__spin_unlock(struct vms_spin *l)
{
    atomic_store_explicit(&l->v, 0, memory_order_release);
}

struct vms_fiber_desc *vms__sync_self(struct vms_fiber_sync **sync, int *rc)
{
    struct vms_fiber_desc *f = vms__fiber_current();

    if (!f) {
        *rc = vms__fail(EPERM, "only a fiber can wait on a vms_mutex, vms_cond, vms_chan or vms_waitgroup; the "
                               "thread's own stack runs the scheduler (vms_run)");
        return NULL;
    }
    if (f->ref == VMS_FIBER_NOREF) {
        *rc = vms__fail(EINVAL, "this fiber has no handle to be woken by");
        return NULL;
    }
    if (!f->sync && !(f->sync = calloc(1, sizeof *f->sync))) {
        *rc = vms__fail(ENOMEM, "out of memory for a fiber's lock and fiber-local state");
        return NULL;
    }
    *sync = f->sync;
    return f;
}

void vms__wq_push(struct vms_wq *q, struct vms_wq_node *n)
{
    n->next = NULL;
    n->prev = q->tail;
    if (q->tail)
        q->tail->next = n;
    else
        q->head = n;
    q->tail = n;
    n->q = q;
    n->state = 0;
}

static void wq_unlink(struct vms_wq_node *n)
{
    struct vms_wq *q = n->q;

    if (n->prev)
        n->prev->next = n->next;
    else
        q->head = n->next;
    if (n->next)
        n->next->prev = n->prev;
    else
        q->tail = n->prev;
    n->q = NULL;
}

struct vms_wq_node *vms__wq_pop(struct vms_wq *q)
{
    struct vms_wq_node *n = q->head;

    if (n)
        wq_unlink(n);
    return n;
}

void vms__wq_grant(struct vms_wq_node *n, int result)
{
    n->result = result;
    n->state = 1;
    /* Under the lock: the fiber cannot have seen its grant and gone on, so the wake is for this wait. */
    (void)vms_fiber_wake(n->h);
}

int vms__wq_wait(struct vms_wq_node *n, struct vms_fiber_sync *sync, uint64_t deadline)
{
    struct vms_fiber_desc *f = n->f;
    bool stray = false;
    int rc;

    sync->node = n;
    vms__spin_unlock(n->lock);
    for (;;) {
        int p = vms__park_until(deadline);

        vms__spin_lock(n->lock);
        if (n->state) {
            rc = n->result;
            /* A mutex is the fiber's from here: on its list before anything can kill it. */
            if (n->kind == VMS_WQ_MUTEX)
                vms__mutex_held_add(sync, n->obj);
            /* Granted while the timer fired: the grant's wake is saved, and is ours. */
            if (p == -ETIMEDOUT)
                vms__wake_discard(f);
            break;
        }
        if (p < 0) {
            wq_unlink(n);
            rc = p;
            break;
        }
        vms__spin_unlock(n->lock);
        stray = true; /* a vms_fiber_wake of the program's own, meant for a later vms_fiber_park */
    }
    sync->node = NULL;
    vms__spin_unlock(n->lock);
    if (stray)
        (void)vms_fiber_wake(n->h);
    return rc;
}

void vms__wq_cancel(struct vms_wq_node *n, struct vms_fiber_sync *sync)
{
    vms__spin_lock(n->lock);
    if (!n->state)
        wq_unlink(n);
    sync->node = NULL;
    vms__spin_unlock(n->lock);
}

/* f's wait, if it ended in one: out of its queue, or, when granted a mutex already, the mutex is f's. */
static void end_wait(struct vms_fiber_sync *sync)
{
    struct vms_wq_node *n = sync->node;

    sync->node = NULL;
    vms__spin_lock(n->lock);
    if (!n->state)
        wq_unlink(n);
    else if (n->kind == VMS_WQ_MUTEX)
        vms__mutex_held_add(sync, n->obj);
    vms__spin_unlock(n->lock);
}

void vms__sync_fiber_end(struct vms_fiber_desc *f, int end)
{
    struct vms_fiber_sync *sync = f->sync;

    if (sync->node)
        end_wait(sync);
    vms__fls_end(sync);
    while (sync->held)
        vms__mutex_owner_died(f, sync->held, end != VMS_FIBER_RETURNED);
    /* Taken last: a destructor may lock and wait, which needs it. */
    f->sync = NULL;
    free(sync->keys);
    free(sync);
}
