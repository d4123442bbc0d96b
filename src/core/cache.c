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
 * In front of the per-CPU caches sits a tiny per-thread cache (two stacks
 * per size): a thread that spawns and ends tasks in turn reuses its own
 * last stack with no atomic read-modify-write at all, which is what makes
 * a cached stack cost about what a malloc'd one does.  The per-CPU caches
 * still balance stacks between threads on one CPU.
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
 * The per-thread cache.  Entries are atomics only so that statistics may
 * read them from another thread; the owner uses plain loads and stores.
 * Registered in a list on first use, so that stats can count it and its
 * stacks go back to the shared caches when the thread exits.
 */
#define THREAD_CACHE 2
struct thread_cache {
    _Atomic uint32_t slot[VMS_MAX_REGIONS][THREAD_CACHE]; /* slot + 1, or 0 */
    struct thread_cache *next, *prev;
    bool registered;
};
static __attribute__((tls_model("initial-exec"))) _Thread_local struct thread_cache tcache;
static pthread_mutex_t tcache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct thread_cache *tcache_list;
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

static bool tcache_take(struct vms_region *r, uint32_t *idx)
{
    _Atomic uint32_t *e = tcache.slot[r->index];

    for (int i = 0; i < THREAD_CACHE; i++) {
        uint32_t v = atomic_load_explicit(&e[i], memory_order_relaxed);
        if (v) {
            atomic_store_explicit(&e[i], 0, memory_order_relaxed);
            *idx = v - 1;
            return true;
        }
    }
    return false;
}

/* Gives every stack of the calling thread's cache to the shared caches. */
static void tcache_flush(void)
{
    unsigned n = atomic_load_explicit(&vms__g.nregions, memory_order_acquire);

    for (unsigned ri = 0; ri < n; ri++)
        for (int i = 0; i < THREAD_CACHE; i++) {
            uint32_t v = atomic_exchange_explicit(&tcache.slot[ri][i], 0, memory_order_relaxed);
            if (v && !cache_put(vms__g.regions[ri], v - 1))
                pool_put(vms__g.regions[ri], v - 1);
        }
}

static void tcache_exit(void *unused)
{
    (void)unused;
    tcache_flush();
    pthread_mutex_lock(&tcache_lock);
    if (tcache.prev)
        tcache.prev->next = tcache.next;
    else
        tcache_list = tcache.next;
    if (tcache.next)
        tcache.next->prev = tcache.prev;
    tcache.registered = false;
    pthread_mutex_unlock(&tcache_lock);
}

static void tcache_key_create(void)
{
    pthread_key_create(&tcache_key, tcache_exit);
}

/* Once per thread: list it, and get called back at its exit. */
static void tcache_register(void)
{
    pthread_once(&tcache_once, tcache_key_create);
    pthread_mutex_lock(&tcache_lock);
    tcache.next = tcache_list;
    tcache.prev = NULL;
    if (tcache_list)
        tcache_list->prev = &tcache;
    tcache_list = &tcache;
    tcache.registered = true;
    pthread_mutex_unlock(&tcache_lock);
    pthread_setspecific(tcache_key, &tcache);
}

static size_t tcache_count(void)
{
    size_t n = 0;

    pthread_mutex_lock(&tcache_lock);
    for (struct thread_cache *t = tcache_list; t; t = t->next)
        for (unsigned ri = 0; ri < VMS_MAX_REGIONS; ri++)
            for (int i = 0; i < THREAD_CACHE; i++)
                n += atomic_load_explicit(&t->slot[ri][i], memory_order_relaxed) != 0;
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

static struct vms_region *region_of_id(uint32_t id)
{
    uint32_t ri = id >> VMS_SLOT_BITS;

    if (ri >= atomic_load_explicit(&vms__g.nregions, memory_order_acquire))
        return NULL;
    return vms__g.regions[ri];
}

int vms__stack_take(struct vms_region *r, vms_stack *st)
{
    struct vms_slot *s;
    uint32_t idx;
    uint64_t gen;
    int err;

    if (!tcache_take(r, &idx) && !cache_take(r, &idx) && (err = pool_take(r, &idx)))
        return err;
    /* We own the slot exclusively now; publish it as live.  The handle comes from the slot: no division. */
    s = &r->slots[idx];
    gen = (atomic_load_explicit(&s->state, memory_order_relaxed) >> 32) + 1;
    atomic_store_explicit(&s->state, gen << 32 | VMS_SLOT_LIVE, memory_order_release);
    st->base = s->base;
    st->size = r->stack_size;
    st->guard_size = r->guard_size;
    st->id = r->index << VMS_SLOT_BITS | idx;
    st->gen = (uint32_t)gen;
    return 0;
}

int vms__stack_alloc(vms_stack *st, size_t size, size_t guard)
{
    int err = 0;
    struct vms_region *r = vms__region_for(size, guard, &err);

    if (!r)
        return err;
    /* The allocating thread gets the overflow handler and its alternate stack. */
    if ((err = vms__thread_ready()))
        return err;
    return vms__stack_take(r, st);
}

/* The slot goes back clean: no task, no guard inside, and zeroed where asked. */
static void slot_clear(struct vms_slot *s, const vms_stack *st)
{
    if (s->task.inner_len) /* rare: tested here, so that the common free makes no call */
        vms__inner_guard_drop(&s->task, st->base);
    memset(&s->task, 0, sizeof s->task);
    if (atomic_load_explicit(&vms__g.scrub, memory_order_relaxed)) {
        size_t used = vms__used_bytes(st->base, st->size);
        memset((char *)st->base + st->size - used, 0, used);
    }
}

/* The calling thread's free entry for a stack of r, or NULL when its cache is full. */
static _Atomic uint32_t *tcache_room(struct vms_region *r)
{
    _Atomic uint32_t *e = tcache.slot[r->index];

    if (!tcache.registered)
        tcache_register();
    for (int i = 0; i < THREAD_CACHE; i++)
        if (!atomic_load_explicit(&e[i], memory_order_relaxed))
            return &e[i];
    return NULL;
}

/*
 * Freed into the calling thread's own cache, the slot is marked free by a
 * plain store after a plain check: no locked instruction.  Only two threads
 * freeing the same handle at the same instant could both pass the check
 * (documented in vmstack.h); anywhere else the mark is a compare-and-swap.
 */
static void companion_free(uint64_t c);

static int stack_put(struct vms_region *r, uint32_t idx, const vms_stack *st)
{
    struct vms_slot *s = &r->slots[idx];
    uint64_t live = (uint64_t)st->gen << 32 | VMS_SLOT_LIVE, freed = (uint64_t)st->gen << 32 | VMS_SLOT_FREE;
    uint64_t companion = s->task.companion;
    _Atomic uint32_t *room = tcache_room(r);

    if (room) {
        if (atomic_load_explicit(&s->state, memory_order_relaxed) != live)
            goto already;
        atomic_store_explicit(&s->state, freed, memory_order_release);
        slot_clear(s, st);
        atomic_store_explicit(room, idx + 1, memory_order_relaxed);
    } else {
        if (!atomic_compare_exchange_strong_explicit(&s->state, &live, freed, memory_order_acq_rel,
                                                     memory_order_relaxed))
            goto already;
        slot_clear(s, st);
        if (!cache_put(r, idx))
            pool_put(r, idx);
    }
    if (companion)
        companion_free(companion);
    return 0;
already:
    return vms__fail(EALREADY, "stack %p (id %u) was already freed: double free or stale handle", st->base, st->id);
}

static void companion_free(uint64_t c)
{
    vms_stack st = { .id = (uint32_t)(c >> 32), .gen = (uint32_t)c };
    struct vms_region *r = region_of_id(st.id);
    uint32_t idx = st.id & ((1u << VMS_SLOT_BITS) - 1);

    st.base = r->slots[idx].base;
    st.size = r->stack_size;
    st.guard_size = r->guard_size;
    if (r->slots[idx].task.kind == VMS_TASK_ALTSTACK)
        atomic_fetch_sub_explicit(&vms__g.altstacks, 1, memory_order_relaxed);
    stack_put(r, idx, &st);
}

int vms__stack_give(vms_stack *st)
{
    return stack_put(vms__g.regions[st->id >> VMS_SLOT_BITS], st->id & ((1u << VMS_SLOT_BITS) - 1), st);
}

int vms_stack_alloc(vms_stack *st, size_t size)
{
    return vms__stack_alloc(st, size, 0);
}

int vms_stack_free(vms_stack *st)
{
    struct vms_region *r = st ? region_of_id(st->id) : NULL;
    uint32_t idx = st ? st->id & ((1u << VMS_SLOT_BITS) - 1) : 0;

    /* Slots never handed out have no base yet: they fail the comparison. */
    if (!r || idx >= r->max_slots || r->slots[idx].base != st->base || !st->base || st->size != r->stack_size)
        return vms__fail(EINVAL, "%p is not a vmstack stack: foreign pointer or corrupted handle",
                         st ? st->base : NULL);
    return stack_put(r, idx, st);
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

    tcache_flush();
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
