/* SPDX-License-Identifier: MIT */
/*
 * Stacks vmstack did not allocate but should report on: the main thread's
 * stack, glibc-allocated thread stacks under `vmstack run`.  vms__locate
 * answers for our own regions in O(1); this table answers for the rest.
 *
 * A fixed table, so that the handler never sees memory being reallocated:
 * entries are claimed with a compare-and-swap and published with a release
 * store; the handler scans only up to the highest entry ever used, so the
 * scan is bounded by the number of such stacks that were alive at once
 * (one per thread of the program), not by VMS_REGISTRY_MAX.  The scan runs
 * only for faults vms__locate did not claim, i.e. on the way to a crash.
 *
 * The handler reads an entry as a seqlock reader: the state, the copy, the
 * state again.  The state carries a count of registrations, so that an
 * entry unregistered and registered again during the copy does not read
 * as unchanged; the second look is a read-modify-write, which orders the
 * copy's reads before it where a plain acquire load would not.
 */
#include "fault/fault.h"

#include <errno.h>
#include <string.h>

enum { FREE = 0, BUSY = 1, LIVE = 2, KIND = 3, GEN = 4 }; /* state: registrations * GEN | kind */

struct entry {
    _Atomic unsigned state;
    struct vms_stack_task stack; /* owned: always */
};

static struct entry table[VMS_REGISTRY_MAX];
static _Atomic int used; /* entries [0, used) may be LIVE */

int vms__stack_register(void *lo, void *hi, size_t guard_below, const struct vms_task *task)
{
    for (int i = 0; i < VMS_REGISTRY_MAX; i++) {
        unsigned s = atomic_load_explicit(&table[i].state, memory_order_relaxed);
        int u;
        /* Acquire: the last unregister's clearing comes before our stores. */
        if ((s & KIND) != FREE ||
            !atomic_compare_exchange_strong_explicit(&table[i].state, &s, s | BUSY, memory_order_acquire,
                                                     memory_order_relaxed))
            continue;
        table[i].stack = (struct vms_stack_task){
            .lo = (uintptr_t)lo, .hi = (uintptr_t)hi, .guard_lo = (uintptr_t)lo - guard_below, .owned = true, .task = *task};
        u = atomic_load_explicit(&used, memory_order_relaxed);
        while (u < i + 1 && !atomic_compare_exchange_weak_explicit(&used, &u, i + 1, memory_order_relaxed,
                                                                   memory_order_relaxed))
            ;
        atomic_store_explicit(&table[i].state, (s + GEN) | LIVE, memory_order_release);
        return i;
    }
    return vms__fail(ENOSPC, "all %d entries for foreign stacks are in use: too many threads", VMS_REGISTRY_MAX);
}

void vms__stack_unregister(int handle)
{
    unsigned s;

    if (handle < 0 || handle >= VMS_REGISTRY_MAX)
        return;
    s = atomic_load_explicit(&table[handle].state, memory_order_relaxed) & ~KIND;
    /*
     * A read-modify-write, not a store: its acquire half keeps the clearing
     * after BUSY (a relaxed store would let it show first), and a reader's
     * second look (also one) that still sees LIVE then comes before it.
     */
    atomic_exchange_explicit(&table[handle].state, s | BUSY, memory_order_acq_rel);
    memset(&table[handle].stack.task, 0, sizeof table[handle].stack.task);
    atomic_store_explicit(&table[handle].state, s | FREE, memory_order_release);
}

bool vms__registry_find(uintptr_t addr, struct vms_stack_task *hit)
{
    int n = atomic_load_explicit(&used, memory_order_acquire);

    for (int i = 0; i < n; i++) {
        struct entry *e = &table[i];
        unsigned s = atomic_load_explicit(&e->state, memory_order_acquire);
        if ((s & KIND) != LIVE)
            continue;
        *hit = e->stack;
        /* Still the same registration after the copy? (An unregister in between would show.) */
        if (addr >= hit->guard_lo && addr < hit->hi &&
            atomic_fetch_add_explicit(&e->state, 0, memory_order_acq_rel) == s)
            return true;
    }
    return false;
}
