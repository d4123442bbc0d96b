/*
 * vmstack — virtually mapped, guarded, cached stacks for threads, fibers and
 * coroutines, after the Linux kernel's CONFIG_VMAP_STACK design.
 *
 * Every stack is a slot in a reserved region of address space:
 *
 *     ... [guard][stack][guard][stack] ... [guard][stack][trailing guard]
 *
 * so every stack has an inaccessible guard below it (stacks grow down) and
 * the next slot's guard above it.  Guards are PTE markers installed with
 * madvise(MADV_GUARD_INSTALL) on Linux >= 6.13 (no memory, no extra VMA), or
 * mprotect(PROT_NONE) elsewhere.  Free stacks are kept warm in per-CPU caches
 * and a global pool; stacks beyond the pool go back to the kernel with
 * madvise(MADV_DONTNEED), never by unmapping.  Nothing of vmstack's is ever
 * stored inside a stack: all bookkeeping lives in a separate table.
 *
 * Conventions: functions that can fail return 0 (or a count) on success and a
 * negative errno value on failure; functions returning pointers return NULL
 * and set errno.  After a failure, vms_last_error() gives a one-line message
 * that names what ran out or what was wrong, and what to do about it.  The
 * library never prints, except the overflow report.
 *
 * Thread safety: every function may be called from any thread.
 * vms_on_stack() is also async-signal-safe.
 */
#ifndef VMSTACK_H
#define VMSTACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the library's exported functions; everything else stays hidden. */
#define VMS_API __attribute__((visibility("default")))

#define VMS_VERSION_MAJOR 0
#define VMS_VERSION_MINOR 1
#define VMS_VERSION_PATCH 0
#define VMS_VERSION_STRING "0.1.0"

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * The message of the last failure of a vmstack call in this thread, e.g.
 * "vm.max_map_count (65530) reached: use Linux >= 6.13 guard regions or raise
 * the sysctl".  Never NULL; "" when nothing failed yet.  Valid until the next
 * failing vmstack call in the same thread.
 */
VMS_API const char *vms_last_error(void);

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */
/* ------------------------------------------------------------------------ */

/* How guard pages are made. */
typedef enum vms_guard_mode {
    VMS_GUARD_AUTO = 0, /* madvise if the kernel really honours it, else mprotect */
    VMS_GUARD_MADVISE,  /* MADV_GUARD_INSTALL: PTE markers, no memory, no VMA */
    VMS_GUARD_MPROTECT, /* mprotect(PROT_NONE): two VMAs per stack */
    VMS_GUARD_NONE      /* no guards at all: UNSAFE, for measurement only */
} vms_guard_mode;

/*
 * Settings, with their built-in defaults and environment variables.  Sizes
 * in the environment accept a K, M, G or T suffix (powers of 1024).
 *
 *   stack_size  64 KiB   VMSTACK_STACK_SIZE  usable bytes of a default stack
 *   guard_size  16 KiB   VMSTACK_GUARD_SIZE  inaccessible bytes below each stack
 *   guard       auto     VMSTACK_GUARD       auto | madvise | mprotect | none
 *   cache       16       VMSTACK_CACHE       free stacks kept per CPU and size (0-64)
 *   pool        256      VMSTACK_POOL        warm free stacks kept in the global
 *                                            pool per size; beyond that their
 *                                            memory is returned to the kernel
 *   reserve     256 GiB  VMSTACK_RESERVE     address space reserved per stack size
 *   scrub       0        VMSTACK_SCRUB       1: zero the used part of a stack
 *                                            when it is freed to a cache or pool
 *
 * Sizes must be multiples of the page size.  A stack of 16 KiB to 1 GiB and
 * a guard of one page to 1 GiB are accepted.
 */
typedef struct vms_config {
    size_t stack_size;
    size_t guard_size;
    vms_guard_mode guard;
    unsigned cache;
    unsigned pool;
    size_t reserve;
    int scrub;
} vms_config;

/* Fills *cfg with the built-in defaults (ignores the environment). */
VMS_API void vms_config_defaults(vms_config *cfg);

/*
 * Applies the VMSTACK_* environment variables to *cfg.  Returns 0, or -EINVAL
 * with vms_last_error() naming the variable and the accepted values.
 */
VMS_API int vms_config_from_env(vms_config *cfg);

/*
 * Initialises vmstack with *cfg, or with defaults plus environment when cfg
 * is NULL.  Calling nothing is fine too: the first allocation initialises
 * with defaults plus environment.  Returns 0; -EINVAL for bad settings;
 * -EBUSY if vmstack was already initialised with different settings;
 * -ENOMEM if the guard probe could not map its two pages.
 */
VMS_API int vms_init(const vms_config *cfg);

/*
 * Switches scrubbing of freed stacks on or off at run time; VMSTACK_SCRUB
 * and vms_config.scrub set the initial value.
 */
VMS_API void vms_set_scrub(int on);

/* The settings in force (initialising with defaults if needed). */
VMS_API int vms_config_get(vms_config *cfg);

/* The guard mode in force after the start-up probe (never VMS_GUARD_AUTO). */
VMS_API vms_guard_mode vms_guard_mode_active(void);

/* "auto", "madvise", "mprotect" or "none". */
VMS_API const char *vms_guard_mode_name(vms_guard_mode mode);

/* ------------------------------------------------------------------------ */
/* Stacks                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * A stack handed out by vms_stack_alloc.  The usable bytes are
 * [base, base + size); the stack pointer starts at vms_stack_top().  The
 * guard_size bytes just below base, and the bytes just above the top, fault.
 * id and gen identify the allocation: a stale copy of a handle (after the
 * stack was freed, or freed and handed out again) is recognised.
 */
typedef struct vms_stack {
    void *base;
    size_t size;
    size_t guard_size;
    uint32_t id;
    uint32_t gen;
} vms_stack;

static inline void *vms_stack_top(const vms_stack *st)
{
    return (char *)st->base + st->size;
}

/*
 * Allocates a guarded stack of size usable bytes (0: the configured default).
 * A stack of a size not seen before gets its own region of address space;
 * up to VMS_MAX_SIZES different sizes can be in use in one process.  The fast
 * path takes a warm stack from this CPU's cache: no lock, no syscall and no
 * page fault.  Returns 0 and fills *st, or:
 *   -EINVAL  size not a page multiple, below 16 KiB or above 1 GiB
 *   -ENOSPC  the region reserved for this size is full (raise VMSTACK_RESERVE),
 *            or VMS_MAX_SIZES different sizes are already in use
 *   -ENOMEM  the kernel refused memory, address space or a mapping (for
 *            example vm.max_map_count in mprotect mode); see vms_last_error()
 * A failed allocation changes nothing: all live stacks stay valid.
 */
VMS_API int vms_stack_alloc(vms_stack *st, size_t size);
#define VMS_MAX_SIZES 16

/*
 * Frees a stack; its handle becomes stale.  Returns 0, or:
 *   -EINVAL   st does not describe a vmstack stack (foreign pointer)
 *   -EALREADY the stack was already freed (double free or stale handle)
 * In both error cases nothing is changed.
 */
VMS_API int vms_stack_free(vms_stack *st);

/*
 * Whether ptr lies on a live vmstack stack (in its usable bytes).  Returns 1
 * and fills *st (if not NULL) with that stack's handle, or 0.  O(1), lock
 * free and async-signal-safe.  Use it to assert that a buffer is not stack
 * memory before handing it to something that outlives the frame.
 */
VMS_API int vms_on_stack(const void *ptr, vms_stack *st);

/*
 * How many bytes of the stack have been used, measured from its top down to
 * the deepest non-zero word: resident pages are found with mincore() and
 * only the deepest resident page is scanned, so no painting is needed.  It
 * relies on stack memory starting zero-filled, which it is when fresh or
 * returned to the kernel; a stack reused warm from a cache still holds the
 * previous user's deepest word unless scrubbing is on.  Exact to the word
 * for the deepest non-zero word; a frame that only wrote zeros at its
 * lowest addresses is not seen.  Returns 0 for a stale handle.
 */
VMS_API size_t vms_stack_used(const vms_stack *st);

/* ------------------------------------------------------------------------ */
/* Statistics and maintenance                                               */
/* ------------------------------------------------------------------------ */

typedef struct vms_stats {
    size_t sizes;           /* stack sizes (regions) in use */
    size_t live;            /* stacks allocated and not freed */
    size_t cached;          /* free stacks in per-CPU caches */
    size_t pooled_warm;     /* free stacks in the pool, memory kept */
    size_t pooled_cold;     /* free stacks in the pool, memory returned */
    size_t slots;           /* slots with guards installed */
    size_t chunks;          /* chunks mapped */
    size_t reserved_bytes;  /* address space reserved */
    size_t mapped_bytes;    /* address space mapped read-write (chunks) */
    uint64_t released;      /* stacks whose memory went back to the kernel */
    uint64_t release_calls; /* madvise calls that did it (batched) */
} vms_stats;

/* Fills *stats.  Counts are a consistent-enough snapshot, not atomic. */
VMS_API void vms_stats_get(vms_stats *stats);

/*
 * Returns the memory of all free stacks (caches and pool) to the kernel.
 * Returns the number of stacks released.
 */
VMS_API long vms_trim(void);

#ifdef __cplusplus
}
#endif

#endif
