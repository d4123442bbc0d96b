/* SPDX-License-Identifier: MIT */
/*
 * The stack area: one reserved region of address space per stack geometry,
 * mapped in chunks as it fills, with a guard below every slot and a
 * trailing guard after every chunk; and the O(1) address -> slot lookup.
 *
 * Why a region per size rather than one region for all sizes: with fixed
 * geometry the slot of an address is one division, with no lock and no
 * search, which the fault handler needs; neighbouring guards line up; and a
 * freed slot fits any later request of its region.  Requested sizes are
 * rounded up to a size class (sizeclass.c), so a region per class (and
 * guard size in use) covers every size.
 */
#include "core/internal.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

static struct vms_region *find_region(size_t stack_size, size_t guard_size)
{
    unsigned n = atomic_load_explicit(&vms__g.nregions, memory_order_acquire);

    for (unsigned i = 0; i < n; i++)
        if (vms__g.regions[i]->stack_size == stack_size && vms__g.regions[i]->guard_size == guard_size)
            return vms__g.regions[i];
    return NULL;
}

/* Chunks of about VMS_CHUNK_TARGET bytes, and as many as the reserve holds. */
static void set_geometry(struct vms_region *r, size_t stack_size, size_t guard_size)
{
    size_t reserve = vms__g.cfg.reserve;

    r->stack_size = stack_size;
    r->guard_size = guard_size;
    r->slot_size = r->guard_size + stack_size;
    r->chunk_slots = VMS_CHUNK_TARGET / r->slot_size;
    if (r->chunk_slots == 0)
        r->chunk_slots = 1;
    if (r->chunk_slots * r->slot_size + r->guard_size > reserve)
        r->chunk_slots = (reserve - r->guard_size) / r->slot_size;
    r->chunk_bytes = r->chunk_slots * r->slot_size + r->guard_size;
    r->max_slots = (uint32_t)((reserve / r->chunk_bytes) * r->chunk_slots);
    if (r->max_slots > (1u << VMS_SLOT_BITS) - r->chunk_slots)
        r->max_slots = (uint32_t)((((1u << VMS_SLOT_BITS) - r->chunk_slots) / r->chunk_slots) * r->chunk_slots);
    r->reserve = (r->max_slots / r->chunk_slots) * r->chunk_bytes;
    r->chunk_recip = UINT64_MAX / r->chunk_bytes;
    r->slot_recip = UINT64_MAX / r->slot_size;
}

static int region_fail(struct vms_region *r, size_t stack_size, size_t cache_bytes)
{
    size_t reserve = r->reserve;

    if (r->base)
        munmap(r->base, r->reserve);
    if (r->slots)
        munmap(r->slots, (size_t)r->max_slots * sizeof(struct vms_slot));
    if (r->cache)
        munmap(r->cache, cache_bytes);
    munmap(r, sizeof *r);
    return vms__fail(ENOMEM, "could not reserve %zu MiB of address space for %zu KiB stacks: the address space "
                             "is used up or RLIMIT_AS (ulimit -v) leaves too little of it; lower VMSTACK_RESERVE",
                     reserve >> 20, stack_size >> 10);
}

static int region_create(size_t stack_size, size_t guard_size, struct vms_region **out)
{
    unsigned n = atomic_load_explicit(&vms__g.nregions, memory_order_relaxed);
    struct vms_region *r;
    size_t cache_bytes;

    if (n == VMS_MAX_REGIONS)
        return vms__fail(ENOSPC, "%u regions (size classes times guard sizes) are in use already: use fewer "
                                 "guard sizes", VMS_MAX_REGIONS);
    if (vms__g.cfg.reserve < stack_size + 2 * guard_size)
        return vms__fail(ENOSPC, "the reserve of address space per stack size (VMSTACK_RESERVE, %zu KiB) cannot "
                                 "hold one %zu KiB stack and its guards: raise VMSTACK_RESERVE",
                         vms__g.cfg.reserve >> 10, stack_size >> 10);
    r = vms__os_alloc(sizeof *r);
    if (!r)
        return vms__fail(ENOMEM, "out of memory for the descriptor of a stack region");
    set_geometry(r, stack_size, guard_size);
    r->index = n;
    /* Whole cache lines per CPU, so CPUs do not share a magazine's lines. */
    r->cache_stride = vms__magazine_bytes(vms__g.cfg.cache);
    cache_bytes = (size_t)vms__g.ncpu * r->cache_stride;
    r->base = vms__os_reserve(r->reserve);
    r->slots = vms__os_alloc((size_t)r->max_slots * sizeof(struct vms_slot));
    r->cache = vms__os_alloc(cache_bytes);
    if (!r->base || !r->slots || !r->cache)
        return region_fail(r, stack_size, cache_bytes);
    pthread_mutex_init(&r->lock, NULL);
    vms__g.regions[n] = r;
    atomic_store_explicit(&vms__g.nregions, n + 1, memory_order_release);
    *out = r;
    return 0;
}

/*
 * The last size asked for with the configured guard, and its region, are
 * kept per thread (vms__hot, vms__region_cached): a runtime asks for one
 * size again and again, and regions live as long as the process.  The
 * guard size is kept with them because a later vms_init may change the
 * configured one.
 */
TLS_IE struct vms_thread_hot vms__hot;

struct vms_region *vms__region_for(size_t stack_size, size_t guard_size, int *err)
{
    struct vms_region *r;
    size_t size;
    int rc;

    if ((rc = vms__ensure_init())) {
        *err = rc;
        return NULL;
    }
    /* Most stacks are of the default size: its region is remembered, no class or search. */
    if (!stack_size && !guard_size && (r = atomic_load_explicit(&vms__g.default_region, memory_order_acquire)))
        return r;
    if (!guard_size && (r = vms__region_cached(stack_size)))
        return r;
    size = vms__size_class(stack_size ? stack_size : vms__g.cfg.stack_size);
    if (size == 0) {
        *err = vms__fail(EINVAL, "stack size %zu: at most 1 GiB", stack_size);
        return NULL;
    }
    /* Larger pages (16 or 64 KiB on arm64): a class is whole pages, so that its guards are too. */
    size = (size + vms__g.page - 1) & ~(vms__g.page - 1);
    if (!guard_size || vms__g.mode == VMS_GUARD_NONE)
        guard_size = vms__g.cfg.guard_size;
    if (guard_size % vms__g.page) {
        *err = vms__fail(EINVAL, "guard size %zu: not a multiple of the page size (%zu)", guard_size, vms__g.page);
        return NULL;
    }
    if (!(r = find_region(size, guard_size))) {
        pthread_mutex_lock(&vms__g.lock);
        r = find_region(size, guard_size);
        if (!r && (rc = region_create(size, guard_size, &r)))
            *err = rc;
        pthread_mutex_unlock(&vms__g.lock);
    }
    if (r && !stack_size && guard_size == vms__g.cfg.guard_size)
        atomic_store_explicit(&vms__g.default_region, r, memory_order_release);
    if (r && stack_size && guard_size == vms__g.cfg.guard_size) {
        vms__hot.asked = stack_size;
        vms__hot.guard = guard_size;
        vms__hot.r = r;
    }
    return r;
}

/*
 * VMAs we may still add in mprotect mode, leaving VMS_VMA_HEADROOM to the
 * rest of the process (malloc, threads, libraries).  /proc/self/maps is
 * counted only when our running estimate gets near the limit.
 */
static long vma_room(long need)
{
    long limit = vms__g.max_map_count - VMS_VMA_HEADROOM;

    if (vms__g.vmas_counted == 0 || vms__g.vmas_counted + vms__g.vmas_added + need > limit) {
        vms__g.vmas_counted = vms__os_count_vmas();
        vms__g.vmas_added = 0;
    }
    return limit - vms__g.vmas_counted - vms__g.vmas_added;
}

/* How many slots of a new chunk may get guards, as far as VMAs go. */
static size_t slots_within_vma_limit(const struct vms_region *r)
{
    long room;

    if (vms__g.mode != VMS_GUARD_MPROTECT)
        return r->chunk_slots;
    pthread_mutex_lock(&vms__g.lock);
    /* Each guard splits the read-write mapping: two VMAs, plus the chunk's own. */
    room = vma_room(2 * (long)r->chunk_slots + 4);
    room = (room - 4) / 2 - 1;
    if (room > 0)
        vms__g.vmas_added += 2 * (room < (long)r->chunk_slots ? room : (long)r->chunk_slots) + 4;
    pthread_mutex_unlock(&vms__g.lock);
    if (room <= 0)
        return 0;
    return (size_t)room < r->chunk_slots ? (size_t)room : r->chunk_slots;
}

/*
 * Installs guards at the bottom of slots 0..n-1 of a chunk and a cap above
 * slot n-1 (the next slot's guard, or the trailing guard).  Returns how many
 * slots have a guard on both sides.
 */
static size_t guard_chunk(const struct vms_region *r, char *chunk, size_t n)
{
    size_t i;

    if (vms__g.mode == VMS_GUARD_NONE)
        return n;
    for (i = 0; i <= n; i++)
        if (vms__os_guard(chunk + i * r->slot_size, r->guard_size, vms__g.mode))
            break;
    return i ? i - 1 : 0;
}

static int vma_limit_error(void)
{
    return vms__fail(ENOMEM, "vm.max_map_count (%ld) reached: use Linux >= 6.13 guard regions or raise the sysctl",
                     vms__g.max_map_count);
}

/* Maps and guards the next chunk; called with r->lock held. */
int vms__region_grow(struct vms_region *r)
{
    uint32_t c = atomic_load_explicit(&r->nchunks, memory_order_relaxed);
    char *chunk = r->base + (size_t)c * r->chunk_bytes;
    size_t want, got;
    int rc;

    if ((size_t)(c + 1) * r->chunk_slots > r->max_slots)
        return vms__fail(ENOSPC, "the %zu MiB reserved for %zu KiB stacks are used up (%u stacks; VMSTACK_RESERVE "
                         "is %zu MiB, used in whole chunks): raise VMSTACK_RESERVE",
                         r->reserve >> 20, r->stack_size >> 10, r->max_slots, vms__g.cfg.reserve >> 20);
    want = slots_within_vma_limit(r);
    if (want == 0)
        return vma_limit_error();
    if ((rc = vms__os_commit(chunk, r->chunk_bytes)))
        return vms__fail(-rc, "the kernel refused %zu MiB of memory for stacks (%s): free stacks, add memory "
                              "or relax vm.overcommit_memory",
                         r->chunk_bytes >> 20, strerror(-rc));
    got = guard_chunk(r, chunk, want);
    if (got == 0) {
        vms__os_decommit(chunk, r->chunk_bytes);
        return vms__g.mode == VMS_GUARD_MPROTECT
                   ? vma_limit_error()
                   : vms__fail(ENOMEM, "madvise(MADV_GUARD_INSTALL) failed on a new chunk: is memory locked (mlockall)?");
    }
    r->next_fresh = c * (uint32_t)r->chunk_slots;
    r->fresh_end = r->next_fresh + (uint32_t)got;
    for (uint32_t i = r->next_fresh; i < r->fresh_end; i++) {
        r->slots[i].id = r->index << VMS_SLOT_BITS | i;
        r->slots[i].base = vms__slot_base(r, i);
    }
    r->slots_guarded += (uint32_t)got;
    atomic_store_explicit(&r->nchunks, c + 1, memory_order_release);
    return 0;
}

void vms__locate(const void *addr, struct vms_loc *loc)
{
    uintptr_t a = (uintptr_t)addr;
    unsigned n = atomic_load_explicit(&vms__g.nregions, memory_order_acquire);

    loc->where = VMS_AT_NONE;
    for (unsigned i = 0; i < n; i++) {
        struct vms_region *r = vms__g.regions[i];
        uintptr_t base = (uintptr_t)r->base;
        size_t mapped = atomic_load_explicit(&r->nchunks, memory_order_acquire) * r->chunk_bytes;
        size_t off, in, s;

        if (a < base || a - base >= mapped)
            continue;
        off = a - base;
        in = off % r->chunk_bytes;
        s = in / r->slot_size;
        loc->region = r;
        if (s == r->chunk_slots) {
            loc->where = VMS_AT_GUARD_ABOVE;
            loc->slot = (uint32_t)((off / r->chunk_bytes + 1) * r->chunk_slots - 1);
        } else {
            loc->where = in % r->slot_size < r->guard_size ? VMS_AT_GUARD_BELOW : VMS_AT_STACK;
            loc->slot = (uint32_t)((off / r->chunk_bytes) * r->chunk_slots + s);
        }
        return;
    }
}

void vms__fill_handle(struct vms_region *r, uint32_t idx, vms_stack *st)
{
    uint64_t state = atomic_load_explicit(&r->slots[idx].state, memory_order_acquire);

    st->base = r->slots[idx].base;
    st->size = r->stack_size;
    st->guard_size = r->guard_size;
    st->id = r->index << VMS_SLOT_BITS | idx;
    st->gen = (uint32_t)(state >> 32);
}

int vms_on_stack(const void *ptr, vms_stack *st)
{
    struct vms_loc loc;

    vms__locate(ptr, &loc);
    if (loc.where != VMS_AT_STACK ||
        (uint32_t)atomic_load_explicit(&loc.region->slots[loc.slot].state, memory_order_acquire) != VMS_SLOT_LIVE)
        return 0;
    if (st)
        vms__fill_handle(loc.region, loc.slot, st);
    return 1;
}

void vms__stack_taint(const void *addr)
{
    struct vms_loc loc;
    struct vms_slot *s;
    uint64_t state;

    vms__locate(addr, &loc);
    if (loc.where != VMS_AT_STACK)
        return;
    s = &loc.region->slots[loc.slot];
    state = atomic_load_explicit(&s->state, memory_order_acquire);
    if ((uint32_t)state == VMS_SLOT_LIVE)
        atomic_store_explicit(&s->tainted, state, memory_order_release);
}

int vms_stack_tainted(const vms_stack *st)
{
    struct vms_region *r;
    struct vms_slot *s = vms__handle_slot(st, &r);
    uint64_t live = (uint64_t)st->gen << 32 | VMS_SLOT_LIVE;

    if (!s || atomic_load_explicit(&s->state, memory_order_acquire) != live)
        return vms__fail(EINVAL, "%p is not a live vmstack stack: stale or foreign handle", st->base);
    return atomic_load_explicit(&s->tainted, memory_order_acquire) == live;
}

bool vms__slot_at(uintptr_t a, struct vms_region **rp, uint32_t *idx)
{
    unsigned n = atomic_load_explicit(&vms__g.nregions, memory_order_acquire);
    bool ok = false;

    for (unsigned i = 0; i < n; i++)
        if (vms__slot_in(vms__g.regions[i], a, idx, &ok)) {
            *rp = vms__g.regions[i];
            return ok;
        }
    return false;
}

/*
 * By the handle's id, checked against its base and generation: no address
 * lookup, no division.  Not its size: a thread's stack is handed to
 * vms__thread_start_on with the part its user sees.
 */
struct vms_task *vms__task_of(const vms_stack *st)
{
    uint32_t ri = st->id >> VMS_SLOT_BITS, idx = st->id & ((1u << VMS_SLOT_BITS) - 1);
    struct vms_region *r;

    if (ri >= atomic_load_explicit(&vms__g.nregions, memory_order_acquire))
        return NULL;
    r = vms__g.regions[ri];
    /* Slots never handed out have no base yet: they fail the comparison. */
    if (idx >= r->max_slots || !st->base || r->slots[idx].base != st->base ||
        atomic_load_explicit(&r->slots[idx].state, memory_order_acquire) != ((uint64_t)st->gen << 32 | VMS_SLOT_LIVE))
        return NULL;
    vms__record_take(&r->slots[idx]);
    return &r->slots[idx].task;
}
