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

#define VMS_MIN_STACK ((size_t)16 << 10)
#define VMS_MAX_STACK ((size_t)1 << 30)
#define VMS_MAX_GUARD ((size_t)1 << 30)
#define VMS_MAX_CACHE 64u
#define VMS_CHUNK_TARGET ((size_t)32 << 20)   /* bytes of slots mapped per growth */
#define VMS_RELEASE_BATCH 32u                  /* stacks returned to the kernel at once */
#define VMS_SLOT_BITS 28u                      /* vms_stack.id = region << 28 | slot */
#define VMS_VMA_HEADROOM 1024                  /* VMAs left to the rest of the process */

/* Slot states, kept in the low half of vms_slot.state; the high half is the generation. */
enum { VMS_SLOT_UNUSED = 0, VMS_SLOT_FREE = 1, VMS_SLOT_LIVE = 2 };

/* What runs on a stack, as far as reports and classification care. */
enum vms_task_kind { VMS_TASK_NONE = 0, VMS_TASK_FIBER, VMS_TASK_THREAD, VMS_TASK_ALTSTACK };

struct vms_task {
    int kind;                 /* VMS_TASK_*; NONE for a bare vms_stack_alloc stack */
    uint64_t id;              /* fiber id, or thread id (tid) */
    char name[32];
    void *start;              /* the task's start routine, for reports */
    void *owner;              /* the thread's record in libvmstack-preload.so */
};

/* The canary at the lowest word of a fiber's stack: the kernel's STACK_END_MAGIC, twice. */
#define VMS_STACK_END_MAGIC 0x57ac6e9d57ac6e9dULL

/*
 * A fiber, or a thread's own context as seen by its scheduler (the "main"
 * descriptor).  Fibers on vmstack stacks keep it in their slot; nothing of
 * it is ever stored on the fiber's stack.  Only the owning thread touches
 * it, except id and owner, which other threads read to reject handles.
 */
struct vms_fiber_desc {
    void *sp;                         /* saved stack pointer while switched out */
    char *base;                       /* usable stack [base, base + size); canary at base */
    size_t size;
    struct vms_fiber_desc *next, *prev; /* ring of ready fibers */
    struct vms_fiber_desc *joiner;    /* who waits in vms_fiber_join for it */
    _Atomic uint64_t id;              /* 0 once joined (or reaped, detached) */
    _Atomic uint64_t owner;           /* serial of the owning thread's scheduler */
    void *(*fn)(void *);
    void *arg;                        /* fn's argument, then its result */
    void (*on_kill)(void *);
    void *on_kill_arg;
    struct vms_task *task;            /* name and id for reports */
    vms_stack stack;                  /* the vmstack stack, when owns_stack */
    uint32_t ref;                     /* handle's ref: stack id, or VMS_FIBER_NOREF */
    uint8_t end;                      /* vms_fiber_end, once ended */
    bool ended, detached, owns_stack, dying;
    void *san_fake;                   /* ASan fake stack while switched out */
    void *san_tsan;                   /* TSan fiber context */
    unsigned vg_id;                   /* valgrind stack registration, 0: none */
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
    struct vms_task task;
    struct vms_fiber_desc fiber;  /* when task.kind is VMS_TASK_FIBER; see fiber.c */
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

    _Atomic uint32_t *cache;          /* ncpu rows of cache_stride entries: slot + 1 or 0 */
    unsigned cache_stride;

    pthread_mutex_t lock;             /* protects everything below */
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
    unsigned ncpu;
    long max_map_count;
    pthread_mutex_t lock;             /* initialisation and region creation */
    _Atomic int ready;
    _Atomic int scrub;                /* cfg.scrub, switchable at run time */
    _Atomic unsigned nregions;
    struct vms_region *regions[VMS_MAX_SIZES];
    long vmas_counted;                /* last count of /proc/self/maps lines */
    long vmas_added;                  /* VMAs our guards added since that count */
};
extern struct vms_global vms__g;

/* error.c */
int vms__fail(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* config.c */
int vms__config_check(const vms_config *cfg);
int vms__parse_size(const char *s, size_t *out);
int vms__ensure_init(void);

/* os.c: the only place that talks to the kernel about memory */
void *vms__os_reserve(size_t bytes);
int vms__os_commit(void *addr, size_t bytes);
void vms__os_decommit(void *addr, size_t bytes);
int vms__os_guard(void *addr, size_t bytes, vms_guard_mode mode);
int vms__os_release(void *addr, size_t bytes);
void *vms__os_alloc(size_t bytes);
vms_guard_mode vms__os_probe_guard(vms_guard_mode wanted);
long vms__os_count_vmas(void);
long vms__os_max_map_count(void);

/* area.c */
struct vms_region *vms__region_for(size_t stack_size, int *err);
int vms__region_grow(struct vms_region *r);
static inline char *vms__slot_base(const struct vms_region *r, uint32_t idx)
{
    return r->base + (size_t)(idx / r->chunk_slots) * r->chunk_bytes +
           (size_t)(idx % r->chunk_slots) * r->slot_size + r->guard_size;
}

/* Where an address lies, for vms_on_stack and the fault handler. */
enum vms_where { VMS_AT_NONE, VMS_AT_STACK, VMS_AT_GUARD_BELOW, VMS_AT_GUARD_ABOVE };
struct vms_loc {
    enum vms_where where;
    struct vms_region *region;
    uint32_t slot;        /* the stack the address (or guard) belongs to */
};
void vms__locate(const void *addr, struct vms_loc *loc);
void vms__fill_handle(struct vms_region *r, uint32_t idx, vms_stack *st);

/* The slot of a stack id (vms_stack.id), or NULL for an id of no region. */
static inline struct vms_slot *vms__slot_of_id(uint32_t id)
{
    uint32_t ri = id >> VMS_SLOT_BITS, idx = id & ((1u << VMS_SLOT_BITS) - 1);

    if (ri >= atomic_load_explicit(&vms__g.nregions, memory_order_acquire) || idx >= vms__g.regions[ri]->max_slots)
        return NULL;
    return &vms__g.regions[ri]->slots[idx];
}
/* The task record of a live stack (NULL for a stale or foreign handle). */
struct vms_task *vms__task_of(const vms_stack *st);

/* usage.c */
size_t vms__used_bytes(const char *base, size_t size);
size_t vms__used_bytes_top(const char *base, size_t size);

/*
 * fault.c: the stack-overflow handler.  vms__fault_thread_init() installs
 * the SIGSEGV/SIGBUS handlers (once per process) and gives the calling
 * thread its guarded alternate signal stack (once per thread; a
 * _Thread_local check afterwards).  Call it from every thread that runs
 * fibers or runs on a vmstack stack, before it can overflow; vms_stack_alloc
 * calls it for the allocating thread.  Returns 0 or a negative errno.
 */
int vms__fault_thread_init(void);
/* The calling thread's tid, asked of the kernel once per thread. */
pid_t vms__self_tid(void);
int vms__altstack_ensure(void);
/* Overflows caught so far, for vms_stats. */
uint64_t vms__fault_overflows(void);

/*
 * Stacks vmstack did not allocate (the main thread's, glibc-allocated
 * thread stacks under `vmstack run`): usable bytes [lo, hi), guard_below
 * inaccessible bytes below lo.  Consulted by the fault handler when an
 * address is not in a vmstack region.  A fixed table of VMS_REGISTRY_MAX
 * entries claimed lock-free; lookup is async-signal-safe.  Returns a handle
 * >= 0, or -ENOSPC when the table is full.  *task is copied.
 */
#define VMS_REGISTRY_MAX 4096
int vms__stack_register(void *lo, void *hi, size_t guard_below, const struct vms_task *task);
void vms__stack_unregister(int handle);

/*
 * fiber.c: the hook of the fault handler.  Kills the calling thread's
 * current fiber with status (a vms_fiber_end, VMS_FIBER_KILLED_*): runs its
 * on_kill hook, marks it ended, wakes its joiner, and switches to the next
 * ready fiber or the scheduler; the stack goes back to the cache when the
 * fiber is joined (at once when detached).  Never returns.
 *   - Runs as ordinary code on the dying fiber's own stack, NOT inside a
 *     signal handler: the handler redirects the faulting context (RIP =
 *     vms__fiber_kill_current, RDI = status, RSP = 16-byte aligned minus 8,
 *     near the stack's top, which is intact) and returns, so the signal mask
 *     is restored.  Anything deeper on the stack is abandoned.
 *   - Only when vms__fiber_current() is the fiber whose stack overflowed;
 *     with no current fiber it aborts.
 *   - Needs about 1 KiB of stack plus what the on_kill hook uses.
 *   - Reentrant for a fault inside the kill itself: the hook runs once.
 * vms__fiber_current() is the calling thread's running fiber (NULL on the
 * thread's own stack); a thread-local load, async-signal-safe.
 */
_Noreturn void vms__fiber_kill_current(int status);
struct vms_fiber_desc *vms__fiber_current(void);

/*
 * fiber.c: fibers on stacks vmstack did not allocate, for the benchmarks'
 * baselines (same scheduler and switch, other stack).  f and task are the
 * caller's and must stay put until vms__fiber_wait returned; the handle of
 * such a fiber has ref VMS_FIBER_NOREF and is not accepted by the public
 * calls.  vms__fiber_wait is vms_fiber_join without freeing the stack.
 */
#define VMS_FIBER_NOREF UINT32_MAX
int vms__fiber_start(struct vms_fiber_desc *f, struct vms_task *task, void *base, size_t size,
                     void *(*fn)(void *), void *arg, const vms_fiber_opts *opts);
int vms__fiber_wait(struct vms_fiber_desc *f, vms_fiber_status *st);

/*
 * switch-x86_64.S: saves the callee-saved state on the current stack, stores
 * the stack pointer in *save_sp, and resumes the context saved at to_sp.
 */
void vms__switch(void **save_sp, void *to_sp);
/* The first code of a fiber: the fiber's descriptor is in r12. */
void vms__fiber_entry(void);

/*
 * thread.c: threads on vmstack stacks.  vms__pthread holds the pthread
 * calls thread.c makes: libc's, except in libvmstack-preload.so, which
 * interposes them and points these past itself (dlsym RTLD_NEXT).
 * vms__thread_start_on creates a thread on st (which the caller keeps on
 * failure), fills its task record and puts a detached thread on the reap
 * list; entry must call vms__thread_begin(task) first in the new thread.
 * vms__thread_join joins with join and frees a vmstack stack;
 * vms__thread_reap frees the stacks of finished detached threads.
 * vms__thread_release frees a finished thread's stack, after calling
 * vms__thread_ended on it when set (libvmstack-preload.so measures the
 * thread's final peak there and zeroes what it used, so that the next
 * thread's peak is its own).
 */
struct vms_pthread_fns {
    int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    int (*join)(pthread_t, void **);
    int (*tryjoin)(pthread_t, void **);
    int (*detach)(pthread_t);
};
extern struct vms_pthread_fns vms__pthread;
int vms__thread_start_on(pthread_t *t, const pthread_attr_t *attr, const vms_stack *st, void *(*entry)(void *),
                         void *arg, const char *name, void *start);
void vms__thread_begin(struct vms_task *task);
int vms__thread_join(pthread_t t, void **ret, int (*join)(pthread_t, void **));
void vms__thread_reap(void);
void vms__thread_release(vms_stack *st);
extern void (*vms__thread_ended)(vms_stack *st);
void *vms__attr_stackaddr(const pthread_attr_t *attr);

#endif
