/* SPDX-License-Identifier: MIT */
/*
 * vms_mutex: a lock for fibers of any threads.  A fiber that finds it held
 * queues and parks; unlock hands the mutex straight to the first in the
 * queue (FIFO, no barging).  Each fiber keeps a list of the mutexes it
 * holds, so that when it ends holding one (killed by an overflow, or
 * returned) the mutex goes on to the next waiter, or to the next locker,
 * with -EOWNERDEAD, as a robust pthread mutex does.
 */
#include "task/task.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

struct mutex {
    struct vms_spin lock;
    struct vms_fiber_desc *owner;       /* NULL: free */
    uint64_t dead;                      /* id of a fiber that ended holding it, until the next lock */
    struct vms_wq q;
    struct mutex *held_next;       /* in the owner's list */
};

VMS_OPAQUE_OF(mutex_of, vms_mutex, 48, struct mutex)

void vms__mutex_held_add(struct vms_fiber_sync *sync, void *mp)
{
    struct mutex *m = mp;

    m->held_next = sync->held;
    sync->held = m;
}

static void held_del(struct vms_fiber_sync *sync, struct mutex *m)
{
    struct mutex **p = (struct mutex **)&sync->held;

    while (*p && *p != m)
        p = &(*p)->held_next;
    if (*p)
        *p = m->held_next;
    m->held_next = NULL;
}

static int owner_dead(struct mutex *m, uint64_t id)
{
    return vms__fail(EOWNERDEAD, "vms_mutex_lock: fiber %llu ended holding the mutex %p; the caller holds it now, "
                                 "and should make what it guards consistent", (unsigned long long)id, (void *)m);
}

/* m is free (lock held): f takes it. */
static int take(struct mutex *m, struct vms_fiber_desc *f, struct vms_fiber_sync *sync)
{
    uint64_t dead = m->dead;

    m->owner = f;
    m->dead = 0;
    vms__mutex_held_add(sync, m);
    return dead ? owner_dead(m, dead) : 0;
}

int vms_mutex_lock(vms_mutex *mu)
{
    struct mutex *m = mutex_of(mu);
    struct vms_fiber_sync *sync;
    struct vms_fiber_desc *f;
    struct vms_wq_node n;
    int rc;

    if (!(f = vms__sync_self(&sync, &rc)))
        return rc;
    vms__spin_lock(&m->lock);
    if (!m->owner) {
        rc = take(m, f, sync);
        vms__spin_unlock(&m->lock);
        return rc;
    }
    if (m->owner == f) {
        vms__spin_unlock(&m->lock);
        return vms__fail(EDEADLK, "vms_mutex_lock: fiber %llu '%s' holds the mutex %p already",
                         (unsigned long long)f->task->id, f->task->name, (void *)m);
    }
    n = (struct vms_wq_node){ .f = f, .h = vms_fiber_current(), .lock = &m->lock, .obj = m, .kind = VMS_WQ_MUTEX };
    vms__wq_push(&m->q, &n);
    rc = vms__wq_wait(&n, sync, UINT64_MAX);
    return rc == -EOWNERDEAD ? owner_dead(m, (uint64_t)(uintptr_t)n.item) : rc;
}

int vms_mutex_trylock(vms_mutex *mu)
{
    struct mutex *m = mutex_of(mu);
    struct vms_fiber_sync *sync;
    struct vms_fiber_desc *f;
    int rc;

    if (!(f = vms__sync_self(&sync, &rc)))
        return rc;
    vms__spin_lock(&m->lock);
    if (!m->owner)
        rc = take(m, f, sync);
    else
        rc = m->owner == f ? -EDEADLK : -EBUSY;
    vms__spin_unlock(&m->lock);
    return rc;
}

/* Gives m (held by its owner, lock held) to the first waiter, or frees it. */
static void give_on(struct mutex *m)
{
    struct vms_wq_node *n = vms__wq_pop(&m->q);

    m->owner = n ? n->f : NULL;
    if (n)
        vms__wq_grant(n, 0);
}

int vms_mutex_unlock(vms_mutex *mu)
{
    struct mutex *m = mutex_of(mu);
    struct vms_fiber_desc *f = vms__fiber_current();

    vms__spin_lock(&m->lock);
    if (!f || m->owner != f) {
        vms__spin_unlock(&m->lock);
        return vms__fail(EPERM, "vms_mutex_unlock: the mutex %p is not held by the calling fiber", (void *)m);
    }
    held_del(f->sync, m);
    give_on(m);
    vms__spin_unlock(&m->lock);
    return 0;
}

void vms__mutex_owner_died(struct vms_fiber_desc *f, void *mp, bool killed)
{
    struct mutex *m = mp;
    uint64_t id = atomic_load_explicit(&f->id, memory_order_relaxed);
    struct vms_wq_node *n;

    held_del(f->sync, m);
    vms__spin_lock(&m->lock);
    if ((n = vms__wq_pop(&m->q))) {
        m->owner = n->f;
        n->item = (void *)(uintptr_t)id; /* for the new owner's message */
        vms__wq_grant(n, -EOWNERDEAD);
    } else {
        m->owner = NULL;
        m->dead = id; /* for the next lock */
    }
    vms__spin_unlock(&m->lock);
    if (killed) {
        char line[200];
        int len = snprintf(line, sizeof line,
                           "vmstack: fiber '%s' (id %llu) was killed holding vms_mutex %p: its next lock returns "
                           "EOWNERDEAD\n", f->task->name, (unsigned long long)id, (void *)m);

        if (len > (int)sizeof line - 1)
            len = (int)sizeof line - 1;
        (void)!write(STDERR_FILENO, line, (size_t)len);
    }
}
