/* SPDX-License-Identifier: MIT */
/*
 * Fiber-local storage: keys shared by the process, a value per key in each
 * fiber (in its sync state, grown to the highest key it set), and a
 * destructor per key, run for the fiber's non-NULL values when it ends,
 * returned or killed, on its own stack.
 */
#include "task/task.h"

#include <errno.h>
#include <stdlib.h>

typedef void (*dtor_fn)(void *);

static _Atomic bool used[VMS_FIBER_KEYS_MAX];
static _Atomic dtor_fn dtors[VMS_FIBER_KEYS_MAX];

int vms_fiber_key_create(vms_fiber_key *key, void (*destructor)(void *))
{
    for (unsigned i = 0; i < VMS_FIBER_KEYS_MAX; i++) {
        bool no = false;

        if (atomic_compare_exchange_strong(&used[i], &no, true)) {
            atomic_store(&dtors[i], destructor);
            *key = i;
            return 0;
        }
    }
    return vms__fail(EAGAIN, "vms_fiber_key_create: all %d fiber-local keys are in use; delete one first",
                     VMS_FIBER_KEYS_MAX);
}

static int bad_key(const char *what, vms_fiber_key key)
{
    return vms__fail(EINVAL, "%s: %u is not a fiber-local key (made by vms_fiber_key_create)", what, key);
}

int vms_fiber_key_delete(vms_fiber_key key)
{
    if (key >= VMS_FIBER_KEYS_MAX || !atomic_load(&used[key]))
        return bad_key("vms_fiber_key_delete", key);
    atomic_store(&dtors[key], NULL);
    atomic_store(&used[key], false);
    return 0;
}

void *vms_fiber_key_get(vms_fiber_key key)
{
    struct vms_fiber_desc *f = vms__fiber_current();

    if (!f || !f->sync || key >= f->sync->nkeys)
        return NULL;
    return f->sync->keys[key];
}

int vms_fiber_key_set(vms_fiber_key key, const void *value)
{
    struct vms_fiber_sync *sync;
    int rc;

    if (key >= VMS_FIBER_KEYS_MAX || !atomic_load(&used[key]))
        return bad_key("vms_fiber_key_set", key);
    if (!vms__sync_self(&sync, &rc))
        return rc;
    if (key >= sync->nkeys) {
        size_t n = key + 1u < 8 ? 8 : (size_t)key + 1u;
        void **k = realloc(sync->keys, n * sizeof *k);

        if (!k)
            return vms__fail(ENOMEM, "vms_fiber_key_set: out of memory for the fiber's values");
        for (size_t i = sync->nkeys; i < n; i++)
            k[i] = NULL;
        sync->keys = k;
        sync->nkeys = n;
    }
    sync->keys[key] = (void *)value;
    return 0;
}

/* As pthread's: a destructor may set values again; a few rounds, then the rest are dropped. */
void vms__fls_end(struct vms_fiber_sync *sync)
{
    for (int round = 0; round < 4; round++) {
        bool ran = false;

        for (size_t i = 0; i < sync->nkeys; i++) {
            void *v = sync->keys[i];
            dtor_fn d = atomic_load(&dtors[i]);

            sync->keys[i] = NULL;
            if (v && d) {
                d(v);
                ran = true;
            }
        }
        if (!ran)
            return;
    }
}
