/* SPDX-License-Identifier: MIT */
/*
 * vms_cond: a condition variable for fibers of any threads, used with a
 * vms_mutex.  The waiter queues before it lets the mutex go, so a signal
 * sent after the unlock always finds it.
 */
#include "task/task.h"

#include <errno.h>

struct cond {
    struct vms_spin lock;
    struct vms_wq q;
};

VMS_OPAQUE_OF(cond_of, vms_cond, 24, struct cond)

int vms_cond_wait(vms_cond *cv, vms_mutex *mu, int64_t timeout_ns)
{
    struct cond *c = cond_of(cv);
    struct vms_fiber_sync *sync;
    struct vms_fiber_desc *f;
    struct vms_wq_node n;
    uint64_t deadline = vms__deadline(timeout_ns);
    int rc, lrc;

    if (!(f = vms__sync_self(&sync, &rc)))
        return rc;
    n = (struct vms_wq_node){ .f = f, .h = vms_fiber_current(), .lock = &c->lock, .kind = VMS_WQ_OTHER };
    vms__spin_lock(&c->lock);
    vms__wq_push(&c->q, &n);
    sync->node = &n; /* from here a kill takes it out of the queue */
    vms__spin_unlock(&c->lock);
    if ((rc = vms_mutex_unlock(mu))) {
        vms__wq_cancel(&n, sync);
        return rc;
    }
    vms__spin_lock(&c->lock);
    rc = vms__wq_wait(&n, sync, deadline);
    lrc = vms_mutex_lock(mu);
    return lrc ? lrc : rc;
}

int vms_cond_signal(vms_cond *cv)
{
    struct cond *c = cond_of(cv);
    struct vms_wq_node *n;

    vms__spin_lock(&c->lock);
    if ((n = vms__wq_pop(&c->q)))
        vms__wq_grant(n, 0);
    vms__spin_unlock(&c->lock);
    return 0;
}

int vms_cond_broadcast(vms_cond *cv)
{
    struct cond *c = cond_of(cv);
    struct vms_wq_node *n;

    vms__spin_lock(&c->lock);
    while ((n = vms__wq_pop(&c->q)))
        vms__wq_grant(n, 0);
    vms__spin_unlock(&c->lock);
    return 0;
}
