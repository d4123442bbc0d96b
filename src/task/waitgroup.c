/* SPDX-License-Identifier: MIT */
/*
 * vms_waitgroup: a counter that fibers of any threads wait on until it
 * comes down to zero (Go's sync.WaitGroup).  add and done may be called
 * from anywhere; only wait needs a fiber.
 */
#include "task/task.h"

#include <errno.h>

struct waitgroup {
    struct vms_spin lock;
    int64_t count;
    struct vms_wq q;
};

VMS_OPAQUE_OF(waitgroup_of, vms_waitgroup, 32, struct waitgroup)

int vms_waitgroup_add(vms_waitgroup *wgp, int64_t delta)
{
    struct waitgroup *wg = waitgroup_of(wgp);
    struct vms_wq_node *n;
    int64_t count;

    vms__spin_lock(&wg->lock);
    if (__builtin_add_overflow(wg->count, delta, &count) || count < 0) {
        vms__spin_unlock(&wg->lock);
        return vms__fail(EINVAL, "vms_waitgroup_add: the count %lld %+lld would go below zero (or overflow): more "
                                 "done than added", (long long)wg->count, (long long)delta);
    }
    wg->count = count;
    while (!count && (n = vms__wq_pop(&wg->q)))
        vms__wq_grant(n, 0);
    vms__spin_unlock(&wg->lock);
    return 0;
}

int vms_waitgroup_done(vms_waitgroup *wg)
{
    return vms_waitgroup_add(wg, -1);
}

int vms_waitgroup_wait(vms_waitgroup *wgp, int64_t timeout_ns)
{
    struct waitgroup *wg = waitgroup_of(wgp);
    struct vms_fiber_sync *sync;
    struct vms_fiber_desc *f;
    struct vms_wq_node n;
    int rc;

    vms__spin_lock(&wg->lock);
    if (!wg->count) {
        vms__spin_unlock(&wg->lock);
        return 0;
    }
    vms__spin_unlock(&wg->lock);
    if (!timeout_ns)
        return -ETIMEDOUT;
    if (!(f = vms__sync_self(&sync, &rc)))
        return rc;
    n = (struct vms_wq_node){ .f = f, .h = vms_fiber_current(), .lock = &wg->lock, .kind = VMS_WQ_OTHER };
    vms__spin_lock(&wg->lock);
    if (!wg->count) {
        vms__spin_unlock(&wg->lock);
        return 0;
    }
    vms__wq_push(&wg->q, &n);
    return vms__wq_wait(&n, sync, vms__deadline(timeout_ns));
}
