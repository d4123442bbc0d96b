/* SPDX-License-Identifier: MIT */
/*
 * Idle fibers give memory back.  A fiber that once went deep keeps the
 * pages it touched for as long as it lives; while it waits, everything
 * below its saved stack pointer (and the red zone under it) holds nothing
 * live.  Those whole pages are released with MADV_DONTNEED: touched again
 * they fault in as zeros, as a fresh stack's do.  Only the calling
 * thread's own fibers are trimmed, since a fiber of another thread could
 * resume and write there while the pages go.
 */
#include "task/task.h"

#include <time.h>

#define RED_ZONE 128                       /* the x86-64 ABI's, below the saved stack pointer */
#define DEFAULT_IDLE_NS (1000 * 1000000ull)

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Releases the pages of f's stack below its stack pointer; whether there were any. */
static bool trim_fiber(struct vms_fiber_desc *f)
{
    uintptr_t page = vms__g.page, lo = (uintptr_t)f->base, hi = ((uintptr_t)f->sp - RED_ZONE) & ~(page - 1);

    /* Where a canary guards the lowest word (no guard below), its page stays. */
    if (f->canary)
        lo += page;
    if (hi <= lo)
        return false;
    return vms__os_release((void *)lo, hi - lo) == 0;
}

long vms_fiber_trim(uint64_t idle_ns)
{
    unsigned n = atomic_load_explicit(&vms__g.nregions, memory_order_acquire);
    uint64_t now = now_ns();
    long trimmed = 0;

    for (unsigned i = 0; i < n; i++) {
        struct vms_region *r = vms__g.regions[i];
        size_t slots = (size_t)atomic_load_explicit(&r->nchunks, memory_order_acquire) * r->chunk_slots;

        if (slots > r->max_slots)
            slots = r->max_slots;
        for (size_t j = 0; j < slots; j++) {
            struct vms_fiber_desc *f = vms__slot_fiber(&r->slots[j]);

            /*
             * Another thread's fibers, free slots and ended fibers are not looked at further.
             * Acquire: the owner read next is the one stored with this id (vms_fiber_spawn).
             */
            if (!atomic_load_explicit(&f->id, memory_order_acquire) || !vms__sched_owns(f))
                continue;
            if (f->ended || !f->owns_stack || f->wait == VMS_WAIT_NONE || !f->sp || now - f->wait_since < idle_ns)
                continue;
            trimmed += trim_fiber(f);
        }
    }
    return trimmed;
}

static long trim_idle(void)
{
    return vms_fiber_trim(DEFAULT_IDLE_NS);
}

__attribute__((constructor)) static void trim_register(void)
{
    atomic_store(&vms__trim_hook, trim_idle);
}
