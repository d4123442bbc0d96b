/* SPDX-License-Identifier: MIT */
/*
 * fork() from a multithreaded process: the child gets one thread and a
 * copy of every lock as it was, so a lock some other thread held at that
 * moment stays held forever in the child, whose first use of it hangs
 * (pre-forking servers, Python's multiprocessing).  The cure is glibc's
 * own for malloc: take every lock before fork, release it on both sides
 * after, so the child's copies are free and the data they guard whole.
 *
 * Locks of several layers nest (the preload's output lock around the
 * snapshot and the rows, the reap list around a stack's release and its
 * row, a region around the global lock), so they must be taken in one
 * order; pthread_atfork's own order (prepare handlers LIFO) cannot express
 * one across layers that register at different times.  So there is one
 * atfork handler, here, and each layer registers its part with a rank
 * (enum vms_fork_rank in internal.h): prepares run in rank order, parent
 * and child parts in the reverse order.
 */
#include "core/internal.h"

struct fork_hook {
    void (*prepare)(void), (*parent)(void), (*child)(void);
    pthread_mutex_t *mutex; /* or just a lock, taken and released */
};

static struct fork_hook hooks[VMS_FORK_RANKS];
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void prepare(void)
{
    for (int i = 0; i < VMS_FORK_RANKS; i++) {
        if (hooks[i].mutex)
            pthread_mutex_lock(hooks[i].mutex);
        if (hooks[i].prepare)
            hooks[i].prepare();
    }
}

static void parent(void)
{
    for (int i = VMS_FORK_RANKS - 1; i >= 0; i--) {
        if (hooks[i].parent)
            hooks[i].parent();
        if (hooks[i].mutex)
            pthread_mutex_unlock(hooks[i].mutex);
    }
}

static void child(void)
{
    for (int i = VMS_FORK_RANKS - 1; i >= 0; i--) {
        if (hooks[i].child)
            hooks[i].child();
        if (hooks[i].mutex)
            pthread_mutex_unlock(hooks[i].mutex);
    }
}

static void register_atfork(void)
{
    pthread_atfork(prepare, parent, child);
}

void vms__fork_hook(enum vms_fork_rank rank, void (*pre)(void), void (*par)(void), void (*chi)(void))
{
    pthread_once(&atfork_once, register_atfork);
    hooks[rank] = (struct fork_hook){pre, par, chi, NULL};
}

void vms__fork_mutex(enum vms_fork_rank rank, pthread_mutex_t *m)
{
    pthread_once(&atfork_once, register_atfork);
    hooks[rank] = (struct fork_hook){NULL, NULL, NULL, m};
}

/* ---- core's own locks: the regions', then the global one, then the thread caches' list ---- */

static unsigned locked_regions;

static void core_prepare(void)
{
    locked_regions = atomic_load_explicit(&vms__g.nregions, memory_order_acquire);
    /* A region's lock is held while it grows, and growing takes the global lock. */
    for (unsigned i = 0; i < locked_regions; i++)
        pthread_mutex_lock(&vms__g.regions[i]->lock);
    pthread_mutex_lock(&vms__g.lock);
    vms__cache_fork_lock(true);
}

static void core_release(void)
{
    vms__cache_fork_lock(false);
    pthread_mutex_unlock(&vms__g.lock);
    for (unsigned i = locked_regions; i-- > 0;)
        pthread_mutex_unlock(&vms__g.regions[i]->lock);
}

__attribute__((constructor(101))) static void core_fork_register(void)
{
    vms__fork_hook(VMS_FORK_CORE, core_prepare, core_release, core_release);
}
