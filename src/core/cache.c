/* SPDX-License-Identifier: MIT */
/*
 * Handing stacks out and taking them back: per-CPU caches in front of a
 * global pool per region, as Linus asked for in front of vmalloc'd kernel
 * stacks.  Each CPU's cache is a magazine (after Bonwick's slab
 * allocator): a count and a stack of slot numbers on cache lines of their
 * own, behind a one-word lock that only threads on that CPU take (and one
 * that migrated meanwhile, which is why there is a lock at all).  A hit is
 * one exchange, one store and the count; a miss refills half a magazine
 * from the pool under one hold of the pool's lock, and a full magazine
 * flushes half of itself the same way, so that the pool's lock is taken
 * once per batch, not once per stack.  A magazine found locked is skipped
 * for the pool: nobody ever waits for a per-CPU lock.
 *
 * In front of the per-CPU caches sits a LIFO per size class and thread:
 * a warm stack is taken and given back there by a few plain loads and
 * stores, with no CPU number, no division, no lock and no atomic
 * read-modify-write, as a malloc'd block of a thread cache is.  The
 * magazines, and behind them the pool, are met only when the LIFO is empty
 * (one stack from them) or full (its older half to them); they balance
 * stacks between threads.
 *
 * The pool keeps cfg.pool warm stacks; stacks beyond that go back to the
 * kernel with MADV_DONTNEED in batches, oldest first, coalescing adjacent
 * slots into one call, and come back zero-filled.
 */
#include "core/internal.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

/*
 * The per-thread caches: a LIFO of slots per region, a count and 15
 * entries on two cache lines.  The count is atomic only so that
 * statistics may read it from another thread; the owner uses plain loads
 * and stores.  Made when a thread first gives a stack back (taken from the
 * caches of threads that ended, or mapped: untouched classes cost no
 * memory), since an empty LIFO has nothing to give: a thread that only
 * takes (under 'vmstack run', every thread takes its alternate signal
 * stack, which goes back with its thread stack, freed by another thread)
 * costs no page for one.  Listed, so that statistics can count its stacks,
 * which go back to the shared caches when the thread exits.
 * vms__hot.cache is the thread's.
 */
#define THREAD_CACHE 15
struct thread_lifo {
    _Atomic uint32_t n;
    struct vms_slot *slot[THREAD_CACHE];
};
struct vms_thread_cache {
    struct thread_lifo lifo[VMS_MAX_REGIONS];
    struct vms_thread_cache *next, *prev; /* the list of threads' caches, or of spare ones (next) */
};
static pthread_mutex_t tcache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vms_thread_cache *tcache_list, *tcache_spare;
static pthread_key_t tcache_key;
static pthread_once_t tcache_once = PTHREAD_ONCE_INIT;

static bool cache_put(struct vms_region *r, uint32_t idx);
static void pool_put(struct vms_region *r, uint32_t idx);

void vms__cache_fork_lock(bool take)
{
    if (take)
        pthread_mutex_lock(&tcache_lock);
    else
        pthread_mutex_unlock(&tcache_lock);
}

/* A stack that leaves a thread's cache: this CPU's magazine, or the pool. */
static void shared_put(struct vms_region *r, const struct vms_slot *s)
{
    uint32_t idx = s->id & ((1u << VMS_SLOT_BITS) - 1);

    if (!cache_put(r, idx))
        pool_put(r, idx);
}

/* Gives every stack of a thread's cache to the shared caches. */
static void tcache_flush(struct vms_thread_cache *t)
{
    unsigned n = atomic_load_explicit(&vms__g.nregions, memory_order_acquire);

    for (unsigned ri = 0; t && ri < n; ri++) {
        struct thread_lifo *l = &t->lifo[ri];
        uint32_t have = atomic_load_explicit(&l->n, memory_order_relaxed);

        atomic_store_explicit(&l->n, 0, memory_order_relaxed);
        for (uint32_t i = 0; i < have; i++)
            shared_put(vms__g.regions[ri], l->slot[i]);
    }
}

static void tcache_exit(void *arg)
{
    struct vms_thread_cache *t = arg;

    vms__hot.cache = NULL;
    vms__hot.ready = false; /* it promises a cache too */
    tcache_flush(t);
    pthread_mutex_lock(&tcache_lock);
    if (t->prev)
        t->prev->next = t->next;
    else
        tcache_list = t->next;
    if (t->next)
        t->next->prev = t->prev;
    t->next = tcache_spare;
    tcache_spare = t;
    pthread_mutex_unlock(&tcache_lock);
}

static void tcache_key_create(void)
{
    pthread_key_create(&tcache_key, tcache_exit);
}

/* Once per thread: its cache, listed, and a call back at its exit; NULL when no memory is left for it. */
static struct vms_thread_cache *tcache_make(void)
{
    struct vms_thread_cache *t;

    pthread_once(&tcache_once, tcache_key_create);
    pthread_mutex_lock(&tcache_lock);
    if ((t = tcache_spare))
        tcache_spare = t->next;
    pthread_mutex_unlock(&tcache_lock);
    if (!t && !(t = vms__os_alloc(sizeof *t)))
        return NULL;
    pthread_mutex_lock(&tcache_lock);
    t->next = tcache_list;
    t->prev = NULL;
    if (tcache_list)
        tcache_list->prev = t;
    tcache_list = t;
    pthread_mutex_unlock(&tcache_lock);
    pthread_setspecific(tcache_key, t);
    return vms__hot.cache = t;
}

/* The calling thread's LIFO for stacks of r, made if need be; NULL without one (no memory for it). */
static struct thread_lifo *lifo_of(const struct vms_region *r)
{
    struct vms_thread_cache *t = vms__hot.cache;

    if (!t && !(t = tcache_make()))
        return NULL;
    return &t->lifo[r->index];
}

static size_t tcache_count(void)
{
    size_t n = 0;

    pthread_mutex_lock(&tcache_lock);
    for (struct vms_thread_cache *t = tcache_list; t; t = t->next)
        for (unsigned ri = 0; ri < VMS_MAX_REGIONS; ri++)
            n += atomic_load_explicit(&t->lifo[ri].n, memory_order_relaxed);
    pthread_mutex_unlock(&tcache_lock);
    return n;
}

/* One CPU's cache: lock, count, and up to cfg.cache slot numbers (valid below n, under the lock). */
struct vms_magazine {
    _Atomic uint32_t lock;
    _Atomic uint32_t n;       /* atomic only so that statistics may read it */
    uint32_t slot[];
};

size_t vms__magazine_bytes(unsigned entries)
{
    return (sizeof(struct vms_magazine) + entries * sizeof(uint32_t) + 63) & ~(size_t)63;
}

static struct vms_magazine *magazine(struct vms_region *r, unsigned cpu)
{
    return (struct vms_magazine *)(void *)((char *)r->cache + (size_t)cpu * r->cache_stride);
}

static struct vms_magazine *this_cpu_magazine(struct vms_region *r)
{
    int cpu = sched_getcpu();

    return magazine(r, (unsigned)(cpu < 0 ? 0 : cpu) % vms__g.ncpu);
}

static bool mag_trylock(struct vms_magazine *m)
{
    return !atomic_load_explicit(&m->lock, memory_order_relaxed) &&
           !atomic_exchange_explicit(&m->lock, 1, memory_order_acquire);
}

static void mag_unlock(struct vms_magazine *m)
{
    atomic_store_explicit(&m->lock, 0, memory_order_release);
}

/* Half a magazine, at least one stack: what a refill takes and a flush gives. */
static uint32_t batch_size(void)
{
    return vms__g.cfg.cache / 2 ? vms__g.cfg.cache / 2 : 1;
}

static uint32_t pool_take_batch(struct vms_region *r, uint32_t *idx, uint32_t n);
static void pool_put_batch(struct vms_region *r, const uint32_t *idx, uint32_t n);

static bool cache_take(struct vms_region *r, uint32_t *idx)
{
    struct vms_magazine *m;
    uint32_t n;
    bool ok;

    if (!vms__g.cfg.cache || !mag_trylock(m = this_cpu_magazine(r)))
        return false;
    n = atomic_load_explicit(&m->n, memory_order_relaxed);
    if (n == 0)
        n = pool_take_batch(r, m->slot, batch_size());
    if ((ok = n != 0))
        *idx = m->slot[--n];
    atomic_store_explicit(&m->n, n, memory_order_relaxed);
    mag_unlock(m);
    return ok;
}

static bool cache_put(struct vms_region *r, uint32_t idx)
{
    struct vms_magazine *m;
    uint32_t n;

    if (!vms__g.cfg.cache || !mag_trylock(m = this_cpu_magazine(r)))
        return false;
    n = atomic_load_explicit(&m->n, memory_order_relaxed);
    if (n == vms__g.cfg.cache) {
        n -= batch_size();
        pool_put_batch(r, m->slot + n, batch_size());
    }
    m->slot[n++] = idx;
    atomic_store_explicit(&m->n, n, memory_order_relaxed);
    mag_unlock(m);
    return true;
}

/* ---- pool lists, all under r->lock; links are slot index + 1 ---- */

static void warm_push(struct vms_region *r, uint32_t idx)
{
    struct vms_slot *s = &r->slots[idx];

    s->prev = 0;
    s->next = r->warm_head;
    if (r->warm_head)
        r->slots[r->warm_head - 1].prev = idx + 1;
    else
        r->warm_tail = idx + 1;
    r->warm_head = idx + 1;
    r->warm_n++;
}

static void warm_unlink(struct vms_region *r, uint32_t idx)
{
    struct vms_slot *s = &r->slots[idx];

    if (s->prev)
        r->slots[s->prev - 1].next = s->next;
    else
        r->warm_head = s->next;
    if (s->next)
        r->slots[s->next - 1].prev = s->prev;
    else
        r->warm_tail = s->prev;
    r->warm_n--;
}

static void cold_push(struct vms_region *r, uint32_t idx)
{
    r->slots[idx].next = r->cold_head;
    r->cold_head = idx + 1;
    r->cold_n++;
}

static uint32_t cold_pop(struct vms_region *r)
{
    uint32_t idx = r->cold_head - 1;

    r->cold_head = r->slots[idx].next;
    r->cold_n--;
    return idx;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

    return (x > y) - (x < y);
}

/* Returns the memory of a sorted batch, one madvise per run of adjacent slots. */
static unsigned release_runs(struct vms_region *r, const uint32_t *idx, unsigned n)
{
    unsigned calls = 0;

    for (unsigned i = 0; i < n;) {
        unsigned j = i + 1;
        while (j < n && idx[j] == idx[j - 1] + 1 && idx[j] / r->chunk_slots == idx[i] / r->chunk_slots)
            j++;
        vms__os_release(vms__slot_base(r, idx[i]), (size_t)(idx[j - 1] - idx[i]) * r->slot_size + r->stack_size);
        calls++;
        i = j;
    }
    return calls;
}

/*
 * Moves the oldest warm stacks beyond keep to the cold list, returning their
 * memory.  Called and returns with r->lock held; drops it around madvise.
 */
static unsigned long release_excess(struct vms_region *r, uint32_t keep)
{
    unsigned long total = 0;

    while (r->warm_n > keep) {
        uint32_t batch[4 * VMS_RELEASE_BATCH];
        unsigned n = 0, calls;

        while (n < 4 * VMS_RELEASE_BATCH && r->warm_n > keep) {
            batch[n] = r->warm_tail - 1;
            warm_unlink(r, batch[n++]);
        }
        r->releasing += n;
        pthread_mutex_unlock(&r->lock);
        qsort(batch, n, sizeof batch[0], cmp_u32);
        calls = release_runs(r, batch, n);
        pthread_mutex_lock(&r->lock);
        for (unsigned i = 0; i < n; i++)
            cold_push(r, batch[i]);
        r->releasing -= n;
        r->released += n;
        r->release_calls += calls;
        total += n;
    }
    return total;
}

/* Takes a stack from any CPU's magazine: before growing, stranded stacks are used. */
static bool steal_cached(struct vms_region *r, uint32_t *idx)
{
    for (unsigned cpu = 0; vms__g.cfg.cache && cpu < vms__g.ncpu; cpu++) {
        struct vms_magazine *m = magazine(r, cpu);
        uint32_t n;
        bool got;
        if (!atomic_load_explicit(&m->n, memory_order_relaxed) || !mag_trylock(m))
            continue;
        n = atomic_load_explicit(&m->n, memory_order_relaxed);
        if ((got = n != 0))
            *idx = m->slot[--n];
        atomic_store_explicit(&m->n, n, memory_order_relaxed);
        mag_unlock(m);
        if (got)
            return true;
    }
    return false;
}

static bool pool_pop(struct vms_region *r, uint32_t *idx)
{
    if (r->warm_n) {
        *idx = r->warm_head - 1;
        warm_unlink(r, *idx);
    } else if (r->cold_n) {
        *idx = cold_pop(r);
    } else if (r->next_fresh < r->fresh_end) {
        *idx = r->next_fresh++;
        r->taken++;
    } else {
        return false;
    }
    return true;
}

static int pool_take(struct vms_region *r, uint32_t *idx)
{
    int rc = 0;

    pthread_mutex_lock(&r->lock);
    if (!pool_pop(r, idx)) {
        pthread_mutex_unlock(&r->lock);
        if (steal_cached(r, idx))
            return 0;
        pthread_mutex_lock(&r->lock);
        /* Another thread may have freed or grown meanwhile. */
        if (!pool_pop(r, idx) && (rc = vms__region_grow(r)) == 0)
            pool_pop(r, idx);
    }
    pthread_mutex_unlock(&r->lock);
    return rc;
}

static void pool_put(struct vms_region *r, uint32_t idx)
{
    pthread_mutex_lock(&r->lock);
    warm_push(r, idx);
    /* Batched: only once the excess is a whole batch. */
    if (r->warm_n >= vms__g.cfg.pool + VMS_RELEASE_BATCH)
        release_excess(r, vms__g.cfg.pool);
    pthread_mutex_unlock(&r->lock);
}

/* Up to n warm (or cold, or fresh) stacks under one hold of the pool's lock; how many. */
static uint32_t pool_take_batch(struct vms_region *r, uint32_t *idx, uint32_t n)
{
    uint32_t got = 0;

    pthread_mutex_lock(&r->lock);
    while (got < n && pool_pop(r, &idx[got]))
        got++;
    pthread_mutex_unlock(&r->lock);
    return got;
}

static void pool_put_batch(struct vms_region *r, const uint32_t *idx, uint32_t n)
{
    pthread_mutex_lock(&r->lock);
    for (uint32_t i = 0; i < n; i++)
        warm_push(r, idx[i]);
    if (r->warm_n >= vms__g.cfg.pool + VMS_RELEASE_BATCH)
        release_excess(r, vms__g.cfg.pool);
    pthread_mutex_unlock(&r->lock);
}

/*
 * We own the slot exclusively now; publish it as live, in the next
 * generation (from FREE or UNUSED: its low bit set, one up).  The handle
 * comes from the slot: no division.
 */
static inline int stack_publish(struct vms_region *r, struct vms_slot *s, vms_stack *st)
{
    uint64_t live = (atomic_load_explicit(&s->state, memory_order_relaxed) | VMS_SLOT_FREE) +
                    ((uint64_t)1 << 32 | (VMS_SLOT_LIVE - VMS_SLOT_FREE));

    atomic_store_explicit(&s->state, live, memory_order_release);
    atomic_store_explicit(&s->bare, (uint32_t)(live >> 32), memory_order_relaxed);
    st->base = s->base;
    st->size = r->stack_size;
    st->guard_size = r->guard_size;
    st->id = s->id;
    st->gen = (uint32_t)(live >> 32);
    return 0;
}

/* A miss of the thread's LIFO (or no LIFO yet): this CPU's magazine, then the pool. */
static __attribute__((noinline)) int stack_take_miss(struct vms_region *r, vms_stack *st)
{
    struct thread_lifo *l = vms__hot.cache ? &vms__hot.cache->lifo[r->index] : NULL;
    uint32_t n, idx;
    int err;

    if (l && (n = atomic_load_explicit(&l->n, memory_order_relaxed)) != 0) {
        atomic_store_explicit(&l->n, --n, memory_order_relaxed);
        return stack_publish(r, l->slot[n], st);
    }
    if (!cache_take(r, &idx) && (err = pool_take(r, &idx)))
        return err;
    return stack_publish(r, &r->slots[idx], st);
}

/* The hot path: the thread's LIFO for r, and the slot's generation; the rest out of line. */
static inline int stack_take(struct vms_thread_cache *t, struct vms_region *r, vms_stack *st)
{
    struct thread_lifo *l = &t->lifo[r->index];
    uint32_t n = atomic_load_explicit(&l->n, memory_order_relaxed);

    if (__builtin_expect(!n, 0))
        return stack_take_miss(r, st);
    atomic_store_explicit(&l->n, --n, memory_order_relaxed);
    return stack_publish(r, l->slot[n], st);
}

int vms__stack_take(struct vms_region *r, vms_stack *st)
{
    struct vms_thread_cache *t = vms__hot.cache;

    return t ? stack_take(t, r, st) : stack_take_miss(r, st);
}

int vms__stack_alloc(vms_stack *st, size_t size, size_t guard)
{
    int err = 0;
    struct vms_region *r = vms__region_for(size, guard, &err);

    if (!r)
        return err;
    /* The allocating thread gets the overflow handler and its alternate stack. */
    if ((err = vms__thread_ready()) || (err = vms__stack_take(r, st)))
        return err;
    /* Its caller writes the record (vms_stack_alloc_opts, 'vmstack run''s threads). */
    vms__record_take(&r->slots[st->id & ((1u << VMS_SLOT_BITS) - 1)]);
    return 0;
}

/*
 * vms__hot.ready: vms__thread_ready() said yes on this thread, which has
 * its cache (since the first stack it gave back), and no alternate signal
 * stack was freed on it since (vms_thread_unattach, a failed set-up: the
 * thread is not report-ready any more).  The hot path makes no call to
 * ask again.
 */
static __attribute__((noinline)) int stack_alloc_slow(vms_stack *st, size_t size)
{
    int err = 0;
    struct vms_region *r = vms__region_for(size, 0, &err);

    if (!r)
        return err;
    if ((err = vms__thread_ready()) || (err = vms__stack_take(r, st)))
        return err;
    vms__hot.ready = vms__hot.cache != NULL;
    return 0;
}

int vms_stack_alloc(vms_stack *st, size_t size)
{
    struct vms_region *r = vms__region_cached(size);

    if (__builtin_expect(!r || !vms__hot.ready, 0))
        return stack_alloc_slow(st, size);
    return stack_take(vms__hot.cache, r, st);
}

/* Its older half to this CPU's magazine, or the pool: room for the stack being freed.  The count left. */
static uint32_t lifo_spill(struct vms_region *r, struct thread_lifo *l)
{
    const uint32_t half = (THREAD_CACHE + 1) / 2;

    for (uint32_t i = 0; i < half; i++)
        shared_put(r, l->slot[i]);
    memmove(l->slot, l->slot + half, (THREAD_CACHE - half) * sizeof l->slot[0]);
    return THREAD_CACHE - half;
}

static void slot_put(struct vms_region *r, struct vms_slot *s)
{
    struct thread_lifo *l = lifo_of(r);
    uint32_t n;

    if (!l) {
        shared_put(r, s);
        return;
    }
    n = atomic_load_explicit(&l->n, memory_order_relaxed);
    if (n == THREAD_CACHE)
        n = lifo_spill(r, l);
    l->slot[n] = s;
    atomic_store_explicit(&l->n, n + 1, memory_order_relaxed);
}

static void companion_free(uint64_t c);

/*
 * A record someone wrote goes back clean: no task, no guard inside.  The
 * stack freed with it (a thread's alternate signal stack), or 0.
 */
static uint64_t record_clear(struct vms_slot *s)
{
    uint64_t companion = s->task.companion;

    if (s->task.inner_len)
        vms__inner_guard_drop(&s->task, s->base);
    memset(&s->task, 0, sizeof s->task);
    return companion;
}

/* Everything but a bare stack going back to the thread's LIFO with room in it. */
static __attribute__((noinline)) int slot_free_slow(struct vms_region *r, struct vms_slot *s, uint32_t gen,
                                                    bool user)
{
    uint64_t live = (uint64_t)gen << 32 | VMS_SLOT_LIVE, companion = 0;
    int kind = s->task.kind;

    if (!s->base)
        return vms__fail(EINVAL, "%p is not a vmstack stack: foreign pointer or corrupted handle", (void *)s->base);
    if (atomic_load_explicit(&s->state, memory_order_relaxed) != live)
        return vms__fail(EALREADY, "stack %p (id %u) was already freed: double free or stale handle", s->base, s->id);
    if (kind == VMS_TASK_FIBER && user)
        return vms__fail(EBUSY, "stack %p belongs to fiber %llu '%s', whose end (and join) gives it back", s->base,
                         (unsigned long long)s->task.id, s->task.name);
    if (kind == VMS_TASK_ALTSTACK)
        vms__hot.ready = false;
    /* A record taken (bare is 0) is cleared; a bare one is clear already. */
    if (atomic_load_explicit(&s->bare, memory_order_relaxed) != gen)
        companion = record_clear(s);
    atomic_store_explicit(&s->bare, 0, memory_order_relaxed);
    atomic_store_explicit(&s->state, live - VMS_SLOT_LIVE + VMS_SLOT_FREE, memory_order_release);
    if (atomic_load_explicit(&vms__g.scrub, memory_order_relaxed)) {
        size_t used = vms__used_bytes(s->base, r->stack_size);
        memset(s->base + r->stack_size - used, 0, used);
    }
    slot_put(r, s);
    if (companion)
        companion_free(companion);
    return 0;
}

/*
 * The hot path: one compare of the handle's generation with the slot's
 * bare word (bare, as read: live, and its record untouched), the slot marked free by a
 * plain store after that plain check (no locked instruction; only two
 * threads freeing the same handle at the same instant could both pass
 * it, as vmstack.h says), and pushed on the thread's LIFO.  The record of
 * a bare stack was never written: nothing to clear.
 */
static inline int slot_free(struct vms_region *r, struct vms_slot *s, uint32_t gen, uint32_t bare, bool user)
{
    struct vms_thread_cache *t = vms__hot.cache;
    struct thread_lifo *l;
    uintptr_t n;

    if (__builtin_expect(!t || bare != gen || atomic_load_explicit(&vms__g.scrub, memory_order_relaxed) ||
                             (n = atomic_load_explicit(&(l = &t->lifo[r->index])->n, memory_order_relaxed)) ==
                                 THREAD_CACHE,
                         0))
        return slot_free_slow(r, s, gen, user);
    atomic_store_explicit(&s->bare, 0, memory_order_relaxed);
    atomic_store_explicit(&s->state, (uint64_t)gen << 32 | VMS_SLOT_FREE, memory_order_release);
    atomic_store_explicit(&l->n, (uint32_t)n + 1, memory_order_relaxed);
    *(l->slot + n) = s;
    return 0;
}

int vms__slot_free(struct vms_region *r, uint32_t idx, uint32_t gen, bool user)
{
    return slot_free(r, &r->slots[idx], gen, atomic_load_explicit(&r->slots[idx].bare, memory_order_relaxed), user);
}

static void companion_free(uint64_t c)
{
    uint32_t id = (uint32_t)(c >> 32), idx = id & ((1u << VMS_SLOT_BITS) - 1);
    struct vms_region *r = vms__g.regions[id >> VMS_SLOT_BITS];

    if (r->slots[idx].task.kind == VMS_TASK_ALTSTACK)
        atomic_fetch_sub_explicit(&vms__g.altstacks, 1, memory_order_relaxed);
    vms__slot_free(r, idx, (uint32_t)c, false);
}

int vms__stack_give(vms_stack *st)
{
    return vms__slot_free(vms__g.regions[st->id >> VMS_SLOT_BITS], st->id & ((1u << VMS_SLOT_BITS) - 1), st->gen,
                          false);
}

/* vms_stack_free_sp in any region, and of a stack whose record was taken. */
static __attribute__((noinline)) int free_sp_slow(void *addr)
{
    struct vms_region *r;
    struct vms_slot *s;
    uint32_t idx, gen;
    uint64_t state;

    if (!vms__slot_at((uintptr_t)addr, &r, &idx))
        goto none;
    s = &r->slots[idx];
    if ((gen = atomic_load_explicit(&s->bare, memory_order_relaxed)))
        return slot_free(r, s, gen, gen, true);
    if ((uint32_t)(state = atomic_load_explicit(&s->state, memory_order_acquire)) == VMS_SLOT_LIVE)
        return slot_free_slow(r, s, (uint32_t)(state >> 32), true);
none:
    return vms__fail(EINVAL, "%p is on no live vmstack stack: foreign pointer, or freed already", addr);
}

/*
 * The hot path: in the region of the size this thread last asked for, a
 * live bare stack, whose generation is its bare word: the fast free's
 * compare holds by itself.
 */
int vms_stack_free_sp(void *addr)
{
    struct vms_region *r = vms__hot.r;
    struct vms_slot *s;
    uint32_t idx, gen;
    bool ok;

    if (__builtin_expect(!r || !vms__slot_in(r, (uintptr_t)addr, &idx, &ok) || !ok, 0) ||
        __builtin_expect(!(gen = atomic_load_explicit(&(s = &r->slots[idx])->bare, memory_order_relaxed)), 0))
        return free_sp_slow(addr);
    return slot_free(r, s, gen, gen, true);
}

int vms_stack_free(vms_stack *st)
{
    struct vms_region *r;
    struct vms_slot *s = st ? vms__handle_slot(st, &r) : NULL;

    if (__builtin_expect(!s, 0))
        return vms__fail(EINVAL, "%p is not a vmstack stack: foreign pointer or corrupted handle",
                         st ? st->base : NULL);
    return slot_free(r, s, st->gen, atomic_load_explicit(&s->bare, memory_order_relaxed), true);
}

/* Empties every CPU's magazine of a region into its pool (waits for a magazine in use). */
static void drain_caches(struct vms_region *r)
{
    for (unsigned cpu = 0; vms__g.cfg.cache && cpu < vms__g.ncpu; cpu++) {
        struct vms_magazine *m = magazine(r, cpu);
        while (!mag_trylock(m))
            sched_yield();
        pool_put_batch(r, m->slot, atomic_load_explicit(&m->n, memory_order_relaxed));
        atomic_store_explicit(&m->n, 0, memory_order_relaxed);
        mag_unlock(m);
    }
}

_Atomic(long (*)(void)) vms__trim_hook;

long vms_trim(void)
{
    unsigned n = atomic_load_explicit(&vms__g.nregions, memory_order_acquire);
    long (*hook)(void) = atomic_load(&vms__trim_hook);
    long total = hook ? hook() : 0;

    tcache_flush(vms__hot.cache);
    for (unsigned i = 0; i < n; i++) {
        struct vms_region *r = vms__g.regions[i];
        drain_caches(r);
        pthread_mutex_lock(&r->lock);
        total += (long)release_excess(r, 0);
        pthread_mutex_unlock(&r->lock);
    }
    return total;
}

void vms_stats_get(vms_stats *s)
{
    unsigned n = atomic_load_explicit(&vms__g.nregions, memory_order_acquire);

    memset(s, 0, sizeof *s);
    s->sizes = n;
    s->overflows = atomic_load_explicit(&vms__g.overflows, memory_order_relaxed);
    s->cached = tcache_count();
    for (unsigned i = 0; i < n; i++) {
        struct vms_region *r = vms__g.regions[i];
        size_t cached = 0;

        for (unsigned cpu = 0; vms__g.cfg.cache && cpu < vms__g.ncpu; cpu++)
            cached += atomic_load_explicit(&magazine(r, cpu)->n, memory_order_relaxed);
        pthread_mutex_lock(&r->lock);
        s->cached += cached;
        s->pooled_warm += r->warm_n;
        s->pooled_cold += r->cold_n;
        s->live += r->taken - r->warm_n - r->cold_n - r->releasing;
        s->slots += r->slots_guarded;
        s->chunks += atomic_load_explicit(&r->nchunks, memory_order_relaxed);
        s->reserved_bytes += r->reserve;
        s->mapped_bytes += (size_t)atomic_load_explicit(&r->nchunks, memory_order_relaxed) * r->chunk_bytes;
        s->released += r->released;
        s->release_calls += r->release_calls;
        pthread_mutex_unlock(&r->lock);
    }
    s->altstacks = (size_t)atomic_load_explicit(&vms__g.altstacks, memory_order_relaxed);
    s->live -= s->cached + s->altstacks;
}
