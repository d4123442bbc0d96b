/* SPDX-License-Identifier: MIT */
/*
 * Internal interfaces shared by the parts of libvmstack.  Names with a
 * double underscore (vms__) are internal and may change at any time.
 */
#ifndef VMS_INTERNAL_H
#define VMS_INTERNAL_H

#include "vmstack.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/types.h>

#define VMS_MIN_STACK ((size_t)16 << 10)
#define VMS_MAX_STACK ((size_t)1 << 30)
#define VMS_MAX_GUARD ((size_t)1 << 30)
#define VMS_MAX_CACHE 64u
#define VMS_CHUNK_TARGET ((size_t)32 << 20)   /* bytes of slots mapped per growth */
#define VMS_RELEASE_BATCH 32u                  /* stacks returned to the kernel at once */
#define VMS_SLOT_BITS 25u                      /* vms_stack.id = region << 25 | slot */
/*
 * A region per size class and guard size: the program's guard, and under
 * `vmstack run` the run's own for thread stacks, which may differ.
 */
#define VMS_MAX_REGIONS 128u
#define VMS_VMA_HEADROOM 1024                  /* VMAs left to the rest of the process */
#define VMS_SLOT_EXT_BYTES 256                 /* room per slot for the task layer's record */

/*
 * The library's thread-local data: initial-exec, so that an access is an
 * offset from the thread pointer and never a call to __tls_get_addr, which
 * may allocate: safe in the signal handler, cheap on the hot path.
 */
#define TLS_IE __thread __attribute__((tls_model("initial-exec")))

_Static_assert(VMS_MAX_REGIONS <= 1u << (32 - VMS_SLOT_BITS), "a stack id has room for every region's index");

/* The canary at the lowest word of a fiber's stack: the kernel's STACK_END_MAGIC, twice. */
#define VMS_STACK_END_MAGIC 0x57ac6e9d57ac6e9dULL

/* Slot states, kept in the low half of vms_slot.state; the high half is the generation. */
enum { VMS_SLOT_UNUSED = 0, VMS_SLOT_FREE = 1, VMS_SLOT_LIVE = 2 };

/* What runs on a stack, as far as reports and classification care. */
enum vms_task_kind { VMS_TASK_NONE = 0, VMS_TASK_FIBER, VMS_TASK_THREAD, VMS_TASK_ALTSTACK, VMS_TASK_STACK };

struct vms_task {
    int kind;                 /* VMS_TASK_*; NONE for a bare vms_stack_alloc stack, STACK
                                 once its user named it or gave it an overflow handler */
    uint64_t id;              /* fiber id, thread id (tid; 0 until the fault handler needs it),
                                 or a STACK's vms_stack.id */
    char name[32];
    void *start;              /* the task's start routine, for reports */
    void *owner;              /* the thread's record in libvmstack-preload.so */
    bool detached;            /* a thread created detached or detached since: join says EINVAL */
    size_t size;              /* the stack as its user sees it, [base, base + size), the slot's rest
                                 above unused (a thread of 'vmstack run'); 0: the whole slot */
    vms_stack_overflow_fn on_overflow; /* a STACK's runtime ends its coroutine here */
    void *on_overflow_arg;
    /* A STACK's runtime (vms_stack_alloc_opts): */
    uintptr_t outermost;      /* the return address of its coroutines' outermost frame (0: none) */
    const char *abort_reason; /* why it cannot end a coroutine alone, for the report (static) */
    bool handler_on_stack;    /* on_overflow runs on the coroutine's own stack, not the altstack */
    uint32_t inner_off;       /* its inner guard: [base + inner_off, base + inner_off + inner_len), */
    uint32_t inner_len;       /* between its record at the stack's low end and the stack (0: none) */
    /*
     * A stack freed together with this one, as id << 32 | gen (0: none): a
     * thread's alternate signal stack, which may be freed only once the
     * kernel is done with the thread, as its stack is.
     */
    uint64_t companion;
};

/*
 * One entry of the descriptor table of a region.  This is the kernel's
 * "thread_info moved off the stack": everything vmstack knows about a stack
 * and the task running on it lives here, never inside the stack memory.
 * The task part belongs to whoever holds the stack (fibers, threads) and is
 * cleared when the stack is freed.
 */
struct vms_slot {
    _Atomic uint64_t state;   /* gen << 32 | VMS_SLOT_* */
    uint32_t next, prev;      /* pool lists, as slot index + 1 (0 = none) */
    uint32_t id;              /* vms_stack.id: region << 25 | index, kept once guarded, as base is */
    char *base;               /* vms__slot_base(), kept once guarded: no division when handing out */
    /*
     * The generation while the stack is live and nobody has taken its
     * record below (vms__record_take) since it was handed out; 0 once
     * somebody did, and after the free.  A free whose handle's generation
     * equals it has nothing to check or clear: a bare stack's record
     * (vms_stack_alloc, then vms_stack_free) was never written.  One
     * compare for the state, the kind and the record, off the state word
     * that the fault handler and the tracer read.
     */
    _Atomic uint32_t bare;
    /*
     * Possibly corrupted: another task's overflow jumped its guard and
     * may have written into this stack.  Holds the state word of the
     * allocation that was live then, so the mark ends with it, unlike a
     * flag, without any clearing (vms__stack_taint, vms_stack_tainted).
     */
    _Atomic uint64_t tainted;
    struct vms_task task;
    /*
     * The task layer's record for the stack (a fiber's descriptor): kept
     * here, off the stack, in storage whose layout only that layer knows.
     */
    _Alignas(16) unsigned char task_ext[VMS_SLOT_EXT_BYTES];
};

/*
 * A region: the address space reserved for stacks of one geometry.  Slots
 * are [guard][stack]; a chunk is chunk_slots slots followed by a trailing
 * guard, so every stack has a guard on both sides.  Fixed geometry makes
 * address -> slot a division, lock-free and usable from a signal handler.
 */
struct vms_region {
    size_t stack_size, guard_size, slot_size;
    size_t chunk_slots, chunk_bytes;
    char *base;                       /* reserved range [base, base + reserve) */
    size_t reserve;
    uint32_t index;                   /* position in vms__g.regions */
    uint32_t max_slots;
    struct vms_slot *slots;           /* descriptor table, max_slots entries */
    _Atomic uint32_t nchunks;         /* chunks mapped and guarded */

    struct vms_magazine *cache;       /* ncpu magazines, cache_stride bytes apart (cache.c) */
    size_t cache_stride;
    /* UINT64_MAX / chunk_bytes and / slot_size: address -> slot by multiplication (vms__div) */
    uint64_t chunk_recip, slot_recip;

    /* On a cache line of its own: the fields above are read on every allocation, by every CPU. */
    _Alignas(64) pthread_mutex_t lock; /* protects everything below */
    uint32_t next_fresh, fresh_end;   /* never-used slots with guards installed */
    uint32_t taken;                   /* slots ever drawn from the fresh range */
    uint32_t warm_head, warm_tail, warm_n;  /* LIFO at head, trimmed from tail */
    uint32_t cold_head, cold_n;
    uint32_t releasing;               /* detached while madvise runs */
    uint32_t slots_guarded;
    uint64_t released, release_calls;
};

/* Global state. */
struct vms_global {
    vms_config cfg;
    vms_guard_mode mode;              /* after probing */
    size_t page;
    size_t sigframe;                  /* the room a signal frame takes here (vms__os_sigframe) */
    unsigned ncpu;
    long max_map_count;
    pthread_mutex_t lock;             /* initialisation and region creation */
    _Atomic int ready;
    _Atomic int scrub;                /* cfg.scrub, switchable at run time */
    _Atomic unsigned nregions;
    struct vms_region *regions[VMS_MAX_REGIONS];
    long vmas_counted;                /* last count of /proc/self/maps lines */
    long vmas_added;                  /* VMAs our guards added since that count */
    _Atomic uint64_t overflows;       /* caught by the fault layer, for vms_stats */
    _Atomic long altstacks;           /* live alternate signal stacks, kept out of vms_stats.live */
    size_t altstack_size;             /* 0: 64 KiB, or the default stack size when larger */
    struct vms_region *_Atomic default_region; /* of the default size and guard, once used */
    bool provisional;                 /* set up by `vmstack run`: the program's vms_init may still
                                         replace the configuration */
    const char *run_command;          /* "run" or "trace": the command that set it up, named in
                                         messages; NULL when the program did */
};
extern struct vms_global vms__g;

/* error.c */
int vms__fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * fork.c: one atfork handler for every layer's locks.  A layer registers
 * its part (from a constructor, or before it first takes the locks) at its
 * rank; prepares run in this order, parent and child parts in reverse.
 * The order is that in which the locks nest.
 */
enum vms_fork_rank {
    VMS_FORK_UNWIND,      /* fault: no thread inside libunwind (it holds the loader's lock) */
    VMS_FORK_RUN_OUTPUT,  /* preload: the table's output lock */
    VMS_FORK_TASK,        /* task: the reap list of detached threads */
    VMS_FORK_OFFLOAD,     /* task: the offload pool's queue; its helpers do not survive fork */
    VMS_FORK_RUN_ROWS,    /* preload: the table's rows */
    VMS_FORK_TRACE_CONFIG, /* trace: turning tracing on, around the fault layer's set-up */
    VMS_FORK_FAULT_INSTALL, /* fault: the handler's installation */
    VMS_FORK_FAULT_SYMBOLS, /* fault: the symbol snapshot */
    VMS_FORK_FAULT_SINK,  /* fault: where reports go */
    VMS_FORK_TRACE_CODE,  /* trace: the code map of the dead-stack scan; takes no lock of ours */
    VMS_FORK_TRACE_RESULTS, /* trace: ended tasks' chains (under the table's output lock); takes none */
    VMS_FORK_CORE,        /* core: regions, then the global lock, then the thread caches' list */
    VMS_FORK_RANKS
};
void vms__fork_hook(enum vms_fork_rank rank, void (*prepare)(void), void (*parent)(void), void (*child)(void));
/* The same for a part that is one mutex, taken before fork and released after on both sides. */
void vms__fork_mutex(enum vms_fork_rank rank, pthread_mutex_t *m);
/* cache.c: takes (true) or releases (false) the thread caches' list lock around fork. */
void vms__cache_fork_lock(bool take);

/* config.c */
int vms__config_check(const vms_config *cfg);
int vms__parse_size(const char *s, size_t *out);
int vms__ensure_init(void);
/*
 * vms_init for `vmstack run` before the program runs: with the settings the
 * program would get by itself, which the program's own vms_init may then
 * replace (see replace_locked).  command ("run", "trace") is named in
 * messages.  0 or as vms_init.
 */
int vms__init_provisional(const vms_config *cfg, const char *command);

/* os.c: the only place that talks to the kernel about memory */
void *vms__os_reserve(size_t bytes);
int vms__os_commit(void *addr, size_t bytes);
void vms__os_decommit(void *addr, size_t bytes);
int vms__os_guard(void *addr, size_t bytes, vms_guard_mode mode);
/* Takes a guard of vms__os_guard's away: the bytes read and write again (as zeros, madvise). */
int vms__os_unguard(void *addr, size_t bytes, vms_guard_mode mode);
/*
 * vms__os_guard (on) or vms__os_unguard without telling valgrind: for the
 * tracer's tripwires, memory the program may use at any time (os.c says why).
 */
int vms__os_guard_raw(void *addr, size_t bytes, vms_guard_mode mode, bool on);
int vms__os_release(void *addr, size_t bytes);
void *vms__os_alloc(size_t bytes);
vms_guard_mode vms__os_probe_guard(vms_guard_mode wanted);
long vms__os_count_vmas(void);
/*
 * Calls line(l, ctx) for each line of /proc/self/maps, NUL-terminated,
 * read with plain syscalls into the caller's buf of cap bytes (its frame
 * is the caller's choice: a signal handler's is small).  A line longer
 * than buf is dropped.  Nothing when the file cannot be opened.
 * Async-signal-safe when line is.
 */
void vms__os_maps_each(char *buf, size_t cap, void (*line)(const char *l, void *ctx), void *ctx);
/*
 * The mapping that holds addr, asked of the kernel (PROCMAP_QUERY, Linux
 * 6.11) through maps_fd, an open /proc/self/maps: one lookup, where the
 * text of a process with many stacks has tens of thousands of lines.  0;
 * -ENOENT: nothing is mapped there; -ENOTTY: an older kernel (or an
 * emulator's /proc).
 */
struct vms_mapping {
    uintptr_t lo, hi;
    bool exec;
};
int vms__os_mapping_at(int maps_fd, uintptr_t addr, struct vms_mapping *m);
long vms__os_max_map_count(void);
/* At least this much, whatever the kernel says: an x86-64 frame with AVX-512 state, the red zone. */
#define VMS_SIGFRAME_MIN ((size_t)16 << 10)
size_t vms__os_sigframe(void);
/*
 * One write(2) of at most max of the *len bytes at *p, again after EINTR;
 * *p and *len move past what was written.  0, or -errno (-EAGAIN: a
 * non-blocking fd is full), -EIO for a write of nothing.  Async-signal-safe.
 */
int vms__os_write_some(int fd, const char **p, size_t *len, size_t max);
/* All of p, through short writes and EINTR: 0 or -errno.  Async-signal-safe. */
int vms__os_write_all(int fd, const char *p, size_t len);
/*
 * Files read without keeping a descriptor, also where the program has
 * used up its own (RLIMIT_NOFILE, soft and hard: see os.c), which sees
 * none of ours.  Async-signal-safe.  map_file: path mapped whole,
 * read-only (a regular file, not empty), its size in *bytes; NULL on
 * failure.  read_file: one read of up to cap bytes from its start; the
 * bytes read, or -errno.
 */
void *vms__os_map_file(const char *path, size_t *bytes);
ssize_t vms__os_read_file(const char *path, char *buf, size_t cap);

/*
 * sizeclass.c: the class size is rounded up to (a multiple of 4 KiB,
 * 16 KiB to 1 GiB), or 0 for a size above 1 GiB.  Pure arithmetic: the
 * region rounds it to whole pages of the run-time page size.
 */
size_t vms__size_class(size_t size);

/* area.c */
/* The region of a size (0: the default) and guard (0: the configured one); NULL with *err set. */
struct vms_region *vms__region_for(size_t stack_size, size_t guard_size, int *err);
/*
 * What the hot paths of a thread look at first, in one thread-local
 * block: the size it last asked for with the configured guard (as guard),
 * and its region (area.c, vms__region_cached); its LIFOs of free stacks,
 * and whether it is report-ready (cache.c).
 */
struct vms_thread_hot {
    size_t asked, guard;
    struct vms_region *r;
    struct vms_thread_cache *cache;
    bool ready;
};
extern TLS_IE struct vms_thread_hot vms__hot;

/*
 * Without a look at the configuration or the regions: the region of the
 * default size, or of the size this thread asked for last, with the
 * configured guard; NULL when neither (vms__region_for finds it).
 */
static inline struct vms_region *vms__region_cached(size_t size)
{
    if (!size)
        return atomic_load_explicit(&vms__g.default_region, memory_order_acquire);
    return size == vms__hot.asked && vms__hot.guard == vms__g.cfg.guard_size ? vms__hot.r : NULL;
}
int vms__region_grow(struct vms_region *r);
static inline char *vms__slot_base(const struct vms_region *r, uint32_t idx)
{
    return r->base + (size_t)(idx / r->chunk_slots) * r->chunk_bytes +
           (size_t)(idx % r->chunk_slots) * r->slot_size + r->guard_size;
}

/*
 * n / d and its remainder, for d's recip = UINT64_MAX / d: a multiplication
 * and at most one correction, no division (the estimate is q or q - 1).
 */
static inline uint64_t vms__div(uint64_t n, uint64_t d, uint64_t recip, uint64_t *rem)
{
    uint64_t q = (uint64_t)(((unsigned __int128)n * recip) >> 64), r = n - q * d;

    if (r >= d) {
        q++;
        r -= d;
    }
    *rem = r;
    return q;
}

/* Where an address lies, for vms_on_stack and the fault handler. */
enum vms_where { VMS_AT_NONE, VMS_AT_STACK, VMS_AT_GUARD_BELOW, VMS_AT_GUARD_ABOVE };
struct vms_loc {
    enum vms_where where;
    struct vms_region *region;
    uint32_t slot;        /* the stack the address (or guard) belongs to */
};
void vms__locate(const void *addr, struct vms_loc *loc);

/* vms__slot_at in r: false when addr is not in r's reserve; *ok: whether it names a slot. */
static inline bool vms__slot_in(struct vms_region *r, uintptr_t a, uint32_t *idx, bool *ok)
{
    uint64_t off = a - (uintptr_t)r->base, in, within, chunk, s;

    if (off >= r->reserve) /* below base too: the difference wraps */
        return false;
    chunk = vms__div(off, r->chunk_bytes, r->chunk_recip, &in);
    s = vms__div(in, r->slot_size, r->slot_recip, &within);
    /* In a guard: only its lowest byte, the top of the stack below (the chunk's first slot has none). */
    if (within < r->guard_size && (within || s-- == 0)) {
        *ok = false;
        return true;
    }
    *idx = (uint32_t)(chunk * r->chunk_slots + s);
    *ok = true;
    return true;
}

/*
 * The slot whose usable bytes hold addr, or whose top addr is: the lowest
 * byte of the guard above, the next slot's or the chunk's trailing one.
 * As vms__locate, by multiplications.  Any offset below a reserve names a
 * slot of the table, one never handed out being UNUSED.  false for none.
 */
bool vms__slot_at(uintptr_t a, struct vms_region **rp, uint32_t *idx);
/*
 * Marks the live stack whose usable bytes hold addr as possibly corrupted,
 * for as long as it stays allocated; nothing for a free stack or an
 * address on none.  Async-signal-safe (the fault handler marks the stack
 * an overflow landed in).
 */
void vms__stack_taint(const void *addr);
void vms__fill_handle(struct vms_region *r, uint32_t idx, vms_stack *st);

/* The slot of a stack id (vms_stack.id), or NULL for an id of no region. */
static inline struct vms_slot *vms__slot_of_id(uint32_t id)
{
    uint32_t ri = id >> VMS_SLOT_BITS, idx = id & ((1u << VMS_SLOT_BITS) - 1);

    if (ri >= atomic_load_explicit(&vms__g.nregions, memory_order_acquire) || idx >= vms__g.regions[ri]->max_slots)
        return NULL;
    return &vms__g.regions[ri]->slots[idx];
}
/*
 * cache.c: vms_stack_alloc with a guard of guard bytes (0: the configured
 * one), for callers that go on to write the stack's record.
 */
int vms__stack_alloc(vms_stack *st, size_t size, size_t guard);
/*
 * The slot of a handle, checked against the table: its id names a slot
 * of its base and size; NULL for a forged or foreign one.  Its generation
 * is not looked at (the caller compares it), nor whether the slot was
 * ever handed out: one that was not has no base, and state UNUSED.
 */
static inline struct vms_slot *vms__handle_slot(const vms_stack *st, struct vms_region **rp)
{
    uint32_t ri = st->id >> VMS_SLOT_BITS, idx = st->id & ((1u << VMS_SLOT_BITS) - 1);
    struct vms_region *r;
    struct vms_slot *s;

    /* A region not made yet is NULL.  A true handle came from its region's allocation, after the region. */
    if (ri >= VMS_MAX_REGIONS || !(r = vms__g.regions[ri]) || idx >= r->max_slots)
        return NULL;
    s = &r->slots[idx];
    /* Slots never handed out have no base yet: a NULL base fails at the generation, as a stale handle. */
    if (s->base != st->base || st->size != r->stack_size)
        return NULL;
    *rp = r;
    return s;
}

/* Whoever writes a live stack's record (fiber, thread, altstack, a runtime's settings) says so first. */
static inline void vms__record_take(struct vms_slot *s)
{
    atomic_store_explicit(&s->bare, 0, memory_order_relaxed);
}

/* The task record of a live stack (NULL for a stale or foreign handle), taken (vms__record_take). */
struct vms_task *vms__task_of(const vms_stack *st);

/*
 * innerguard.c: a guard of len bytes at base + off inside the live stack
 * st, recorded in its task record t, so that an overflow stops there
 * before it reaches what a runtime keeps below (its record); off and len
 * whole pages.  0 or -errno with the message set.  The guard goes when
 * the stack is freed (vms__inner_guard_drop, from the free, before the
 * slot can be handed out again; only for a stack that has one).
 */
int vms__inner_guard(const vms_stack *st, struct vms_task *t, size_t off, size_t len);
void vms__inner_guard_drop(struct vms_task *t, const char *base);

/* cache.c: bytes of one CPU's magazine of `entries` stacks, whole cache lines. */
size_t vms__magazine_bytes(unsigned entries);

/*
 * cache.c, the task layer's lean path: vms_stack_alloc from region r for a
 * thread that is report-ready already (vms__thread_ready() returned 0 in
 * it), and vms_stack_free of a handle known to be live and its caller's.
 * 0 or -errno with the message set, as vms_stack_alloc.
 */
int vms__stack_take(struct vms_region *r, vms_stack *st);
int vms__stack_give(vms_stack *st);
/*
 * cache.c: frees slot idx of r, live in generation gen: 0, -EALREADY when
 * it is not (double free, stale handle), or with user set -EBUSY for a
 * fiber's stack, which only its fiber's end gives back.
 */
int vms__slot_free(struct vms_region *r, uint32_t idx, uint32_t gen, bool user);

/* usage.c */
size_t vms__used_bytes(const char *base, size_t size);
size_t vms__used_bytes_top(const char *base, size_t size);

/*
 * Hooks: what the layers above core lend it.  The fault layer registers
 * thread_ready when it is loaded (a constructor; libvmstack.a is one object,
 * so that it is always linked): it makes the calling thread report-ready
 * (overflow handler installed, guarded alternate signal stack; a
 * thread-local test once done).  Core calls it on a thread's first stack
 * allocation and the task layer at the start of every vmstack thread, so
 * that no thread can overflow before a report is possible.  0 or -errno.
 */
extern int (*vms__thread_ready_hook)(void);
/* Registered by the task layer: vms_trim also releases the unused stack of the calling thread's idle fibers. */
extern _Atomic(long (*)(void)) vms__trim_hook;
static inline int vms__thread_ready(void)
{
    return vms__thread_ready_hook ? vms__thread_ready_hook() : 0;
}

#endif
