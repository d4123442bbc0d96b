/* SPDX-License-Identifier: MIT */
/*
 * vms_chan: a bounded channel of fixed-size items between fibers of any
 * threads.  Items are copied: into the ring buffer, or straight into a
 * waiting receiver's buffer, or out of a waiting sender's item, so that a
 * channel of capacity 0 is a rendezvous.  Senders and receivers that find
 * no room or no item queue in FIFO order.  Sends and receives that need
 * not wait (or are asked not to: timeout 0) work outside fibers too.
 */
#include "task/task.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct chan {
    struct vms_spin lock;
    bool closed, ready;
    size_t isz, cap, head, count;
    char *buf;
    struct vms_wq sendq, recvq;
};

VMS_OPAQUE_OF(chan_of, vms_chan, 80, struct chan)

int vms_chan_init(vms_chan *cp, size_t item_size, size_t capacity)
{
    struct chan *c = chan_of(cp);

    memset(cp, 0, sizeof *cp);
    if (!item_size || (capacity && item_size > SIZE_MAX / capacity))
        return vms__fail(EINVAL, "vms_chan_init: items of %zu bytes, %zu of them: the item size must be at least 1 "
                                 "and the buffer must fit in memory", item_size, capacity);
    if (capacity && !(c->buf = malloc(item_size * capacity)))
        return vms__fail(ENOMEM, "vms_chan_init: out of memory for %zu items of %zu bytes", capacity, item_size);
    c->isz = item_size;
    c->cap = capacity;
    c->ready = true;
    return 0;
}

int vms_chan_destroy(vms_chan *cp)
{
    struct chan *c = chan_of(cp);

    vms__spin_lock(&c->lock);
    if (c->sendq.head || c->recvq.head) {
        vms__spin_unlock(&c->lock);
        return vms__fail(EBUSY, "vms_chan_destroy: fibers still wait on the channel %p; close it first and let "
                                "them go", (void *)c);
    }
    vms__spin_unlock(&c->lock);
    free(c->buf);
    memset(cp, 0, sizeof *cp);
    return 0;
}

static int not_ready(const char *what)
{
    return vms__fail(EINVAL, "%s: the channel was not made with vms_chan_init (or was destroyed)", what);
}

static int closed(const char *what)
{
    return vms__fail(EPIPE, "%s: the channel is closed", what);
}

static char *at(struct chan *c, size_t i)
{
    return c->buf + ((c->head + i) % c->cap) * c->isz;
}

/*
 * The caller found it must wait (lock held): with timeout 0 it does not;
 * outside a fiber it cannot; a fiber met for the first time here gets its
 * sync state made without the lock held, then looks again (1); otherwise
 * its node goes on q and it waits.  The lock is let go on every path.
 */
static int wait_on(struct chan *c, struct vms_wq *q, void *item, int64_t timeout_ns, const char *what)
{
    struct vms_fiber_desc *f = vms__fiber_current();
    struct vms_fiber_sync *sync = f ? f->sync : NULL;
    struct vms_wq_node n;
    int rc;

    if (!timeout_ns || !sync) {
        vms__spin_unlock(&c->lock);
        if (!timeout_ns)
            return -EAGAIN;
        return vms__sync_self(&sync, &rc) ? 1 : rc;
    }
    n = (struct vms_wq_node){ .f = f, .h = vms_fiber_current(), .lock = &c->lock, .item = item,
                              .kind = VMS_WQ_OTHER };
    vms__wq_push(q, &n);
    rc = vms__wq_wait(&n, sync, vms__deadline(timeout_ns));
    return rc == -EPIPE ? closed(what) : rc;
}

int vms_chan_send(vms_chan *cp, const void *item, int64_t timeout_ns)
{
    struct chan *c = chan_of(cp);
    struct vms_wq_node *n;
    int rc = 0;

    if (!c->ready)
        return not_ready("vms_chan_send");
    do {
        vms__spin_lock(&c->lock);
        if (c->closed) {
            vms__spin_unlock(&c->lock);
            return closed("vms_chan_send");
        }
        if ((n = vms__wq_pop(&c->recvq))) {
            memcpy(n->item, item, c->isz);
            vms__wq_grant(n, 0);
        } else if (c->count < c->cap) {
            memcpy(at(c, c->count++), item, c->isz);
        } else {
            /* Granted means sent: a receiver took the item from our node, into its buffer or the ring. */
            rc = wait_on(c, &c->sendq, (void *)item, timeout_ns, "vms_chan_send");
            continue;
        }
        vms__spin_unlock(&c->lock);
        return 0;
    } while (rc == 1);
    return rc;
}

int vms_chan_recv(vms_chan *cp, void *item, int64_t timeout_ns)
{
    struct chan *c = chan_of(cp);
    struct vms_wq_node *n;
    int rc = 0;

    if (!c->ready)
        return not_ready("vms_chan_recv");
    do {
        vms__spin_lock(&c->lock);
        if (c->count) {
            memcpy(item, at(c, 0), c->isz);
            c->head = (c->head + 1) % c->cap;
            c->count--;
            /* The first waiting sender's item takes the place freed. */
            if ((n = vms__wq_pop(&c->sendq))) {
                memcpy(at(c, c->count++), n->item, c->isz);
                vms__wq_grant(n, 0);
            }
        } else if ((n = vms__wq_pop(&c->sendq))) {
            memcpy(item, n->item, c->isz);
            vms__wq_grant(n, 0);
        } else if (c->closed) {
            vms__spin_unlock(&c->lock);
            return closed("vms_chan_recv");
        } else {
            rc = wait_on(c, &c->recvq, item, timeout_ns, "vms_chan_recv");
            continue;
        }
        vms__spin_unlock(&c->lock);
        return 0;
    } while (rc == 1);
    return rc;
}

int vms_chan_close(vms_chan *cp)
{
    struct chan *c = chan_of(cp);
    struct vms_wq_node *n;

    if (!c->ready)
        return not_ready("vms_chan_close");
    vms__spin_lock(&c->lock);
    if (c->closed) {
        vms__spin_unlock(&c->lock);
        return vms__fail(EALREADY, "vms_chan_close: the channel %p is closed already", (void *)c);
    }
    c->closed = true;
    while ((n = vms__wq_pop(&c->recvq)))
        vms__wq_grant(n, -EPIPE);
    while ((n = vms__wq_pop(&c->sendq)))
        vms__wq_grant(n, -EPIPE);
    vms__spin_unlock(&c->lock);
    return 0;
}
