/* SPDX-License-Identifier: MIT */
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
 * library never prints, except overflow and stack-corruption reports.
 *
 * Thread safety: every function may be called from any thread.
 * vms_on_stack() is also async-signal-safe.
 */
#ifndef VMSTACK_H
#define VMSTACK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks the library's exported functions; everything else stays hidden. */
#define VMS_API __attribute__((visibility("default")))

/*
 * The header is C89 with GNU extensions (__inline__, as gcc and clang
 * accept in every C mode), C99 and later, and C++98 and later: a C89
 * program includes it as it is, and C++ sees no C-style cast.
 */
#ifdef __cplusplus
#define VMS_INLINE inline
#define VMS_CAST(type, value) static_cast<type>(value)
#else
#define VMS_INLINE __inline__
#define VMS_CAST(type, value) ((type)(value))
#endif

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
 *   guard_size  64 KiB   VMSTACK_GUARD_SIZE  inaccessible bytes below each stack
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
 * with vms_last_error() naming the variable and the accepted values.  A
 * process in secure-execution mode (AT_SECURE: set-user-ID, set-group-ID,
 * file capabilities) reads none of them: its caller set them, and could
 * turn its guards off.  *cfg is then left as it was, and 0 returned.
 */
VMS_API int vms_config_from_env(vms_config *cfg);

/*
 * Initialises vmstack with *cfg, or with defaults plus environment when cfg
 * is NULL.  Calling nothing is fine too: the first allocation initialises
 * with defaults plus environment.  Returns 0; -EINVAL for bad settings
 * (also when vmstack is initialised already: a guard that is not whole
 * pages, say); -EBUSY if vmstack was already initialised with different,
 * valid settings;
 * -ENOMEM if the guard probe could not map its two pages.  Under `vmstack
 * run`, a program linked with libvmstack.so shares the run's instance,
 * which starts with the defaults plus environment; the program's own
 * vms_init still succeeds and its settings apply from then on, except the
 * guard mode and the cache size (-EBUSY if they differ: set VMSTACK_GUARD
 * and VMSTACK_CACHE instead).
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

/* The top of st, where a context on it starts its stack pointer: base + size (stacks grow down). */
static VMS_INLINE void *vms_stack_top(const vms_stack *st)
{
    return VMS_CAST(char *, st->base) + st->size;
}

/*
 * Allocates a guarded stack of at least size usable bytes (0: the
 * configured default).  Any size up to 1 GiB is accepted and rounded up to
 * a size class: a page multiple of at least 16 KiB, 1, 1.25, 1.5 or 1.75
 * times a power of two (16, 20, 24, 28, 32, 40, 48, 56, 64, 80 KiB, ...,
 * 8, 10, 12, 14, 16 MiB, ..., 1 GiB; VMS_MAX_SIZES classes).  st->size is
 * the class size.  Rounding costs at most 25% more usable bytes than
 * asked for, in address space only (untouched pages use no memory), and
 * an overflow is caught that much deeper.  Each class in use has its own
 * region: VMSTACK_RESERVE bytes of address space, reserved on the class's
 * first allocation.  The fast path takes a warm stack from the calling
 * thread's LIFO of its class, then this CPU's cache: no lock, no syscall
 * and no page fault.  Returns 0 and fills *st,
 * or:
 *   -EINVAL  size above 1 GiB
 *   -ENOSPC  the region reserved for this class is full (raise VMSTACK_RESERVE)
 *   -ENOMEM  the kernel refused memory, address space or a mapping (for
 *            example vm.max_map_count in mprotect mode); see vms_last_error()
 * A failed allocation changes nothing: all live stacks stay valid.
 */
VMS_API int vms_stack_alloc(vms_stack *st, size_t size);
#define VMS_MAX_SIZES 65

/*
 * Frees a stack; its handle becomes stale.  Returns 0, or:
 *   -EINVAL   st does not describe a vmstack stack (foreign pointer, or a
 *             forged id, base or size)
 *   -EALREADY the stack was already freed (double free or stale handle)
 *   -EBUSY    a vmstack fiber owns the stack (its end and join free it)
 * In the error cases nothing is changed.  A free takes no locked
 * instruction: the stack's state is checked and then marked by plain
 * loads and stores, and the stack goes to the calling thread's LIFO.  A
 * double free is caught, but two threads freeing the same stack at the
 * same instant may both succeed (the stack is then handed out twice).
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
 * Frees the live stack whose usable bytes hold addr, or whose top addr is
 * (the stack pointer a context starts with), for runtimes that keep only
 * an address: Boost.Context's stack_context.sp, minicoro's allocation.
 * One O(1) address lookup (a top is recognised from the guard it lands
 * in), then the free of vms_stack_free.
 * Returns 0, or -EINVAL when addr is on no live vmstack stack (foreign
 * pointer, or a stack freed already), or -EBUSY as vms_stack_free; then
 * nothing is changed.  Without
 * guards (VMS_GUARD_NONE) a stack's top is the next stack's base: pass an
 * address inside the stack there.
 */
VMS_API int vms_stack_free_sp(void *addr);

/*
 * Names a stack for overflow reports and the overflow callback ("stack
 * 'NAME' on thread 'T' (tid N)"); the first 31 bytes are kept, NULL or ""
 * removes the name.  For stacks that another coroutine library runs; a
 * fiber or thread keeps the name it was given.  The stack's record is
 * found by the handle's id (as for vms_stack_on_overflow): no address
 * lookup.  Not async-signal-safe; call it before the stack runs code.
 * Returns 0, or:
 *   -EINVAL  st is not a live vmstack stack (stale or foreign handle)
 *   -EBUSY   a vmstack fiber or thread runs on the stack
 */
VMS_API int vms_stack_set_name(const vms_stack *st, const char *name);

/*
 * How many bytes of the stack have been used, measured from its top down to
 * the deepest non-zero word: resident pages are found with mincore() and
 * only the deepest resident page is scanned, so no painting is needed.  It
 * relies on stack memory starting zero-filled, which it is when fresh or
 * returned to the kernel; a stack reused warm from a cache still holds the
 * previous user's deepest word unless scrubbing is on.  Exact to the word
 * for the deepest non-zero word; a frame that only wrote zeros at its
 * lowest addresses is not seen.  Returns 0 for a stale handle, or one
 * whose id, base or size the table does not have (errno EINVAL, and
 * vms_last_error() says so).
 */
VMS_API size_t vms_stack_used(const vms_stack *st);

/*
 * Whether the stack may have been corrupted by another task: 1 when an
 * overflow of a fiber or thread whose one large frame jumped its own guard
 * landed in this stack's guard (the overflow report names this stack,
 * "whose stack may be corrupted"), having passed over this stack's bytes
 * on the way; 0 when not.  The mark stays until the stack is freed.  The
 * task on it should not be trusted to go on as if nothing happened: its
 * top frames, or what glibc keeps at a thread stack's top, may have been
 * overwritten.  Async-signal-safe for a live handle (a policy callback may
 * ask).  Returns 1, 0, or -EINVAL for a stale or foreign handle.
 */
VMS_API int vms_stack_tainted(const vms_stack *st);

/* ------------------------------------------------------------------------ */
/* Fibers                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * Fibers are cooperative tasks on guarded, cached vmstack stacks, run by a
 * scheduler per thread.  A fiber stays on the thread that spawned it: it
 * runs only while that thread is inside vms_run() or vms_fiber_join(), and
 * gives up the thread only in vms_yield(), vms_fiber_join(), the waits
 * below (vms_fiber_park, vms_sleep_ns, vms_wait_fd) or by ending.
 * Ready fibers run in FIFO order.  Spawning costs a cached stack and a
 * descriptor: no syscall, no malloc; a switch is a few instructions and no
 * syscall.
 *
 * As in the kernel, a fiber's descriptor lives in vmstack's table, not on
 * its stack, and the lowest word of its stack holds a canary, checked at
 * every switch away from the fiber and when it ends.  A fiber whose canary
 * was overwritten is killed, with one line on stderr: "vmstack: BUG:
 * corrupted stack end detected inside scheduler: ...".  A fiber that
 * overflows into its guard is killed by the overflow handler.  Either way
 * only that fiber dies; its joiner sees how.
 *
 * Unlike the rest of the API, these functions act on the calling thread's
 * scheduler: a fiber handed to another thread cannot be joined there
 * (-EPERM).  Fibers left when their thread exits are leaked.
 */

/*
 * A fiber handle, a plain value.  After the fiber was joined (or ended,
 * when detached) the handle is stale, and calls recognise it as such even
 * when the fiber's stack and descriptor were reused since.
 */
typedef struct vms_fiber {
    uint64_t id;      /* unique in the process, from 1; 0: no fiber */
    uint32_t ref;     /* private: where the fiber's descriptor is */
} vms_fiber;

/* Options of vms_fiber_spawn; NULL or all zero for the defaults. */
typedef struct vms_fiber_opts {
    const char *name;   /* for reports; the first 31 bytes are kept; NULL: "fiber" */
    size_t stack_size;  /* usable stack bytes, at least: rounded up to a size class; 0: the
                           configured default (64 KiB).  The start is offset by up to 2 KiB
                           ("colour"), so that the tops of many fibers' stacks do not all
                           compete for one set of the L1 cache; the colour comes from the
                           class's slack (2 KiB more is asked to make sure there is some;
                           not in the mprotect guard mode, where the other region's guards
                           would cost VMAs) */
    int detached;       /* nonzero: never joined; its stack is freed as it ends */
} vms_fiber_opts;

/* How a fiber ended. */
typedef enum vms_fiber_end {
    VMS_FIBER_RETURNED = 1,      /* its function returned */
    VMS_FIBER_KILLED_OVERFLOW,   /* killed: it ran into the guard below its stack */
    VMS_FIBER_KILLED_CANARY      /* killed: the canary at its stack end was overwritten */
} vms_fiber_end;

typedef struct vms_fiber_status {
    vms_fiber_end end;
    int tainted;        /* nonzero: another task's overflow landed in its stack's guard while
                           it lived, and its stack may be corrupted (vms_stack_tainted) */
    void *result;       /* what its function returned; NULL when killed */
} vms_fiber_status;

/*
 * Creates a fiber that will run fn(arg) on a stack of its own, and puts it
 * at the end of the calling thread's run queue; it starts when the thread
 * next schedules (vms_run, vms_fiber_join, vms_yield).  May be called from a
 * fiber.  Fills *f (may be NULL for a detached fiber).  Returns 0, or:
 *   -EINVAL  fn is NULL, f is NULL for a joinable fiber, or a stack size
 *            above 1 GiB (other sizes are rounded up to a size class, see
 *            vms_stack_alloc)
 *   -ENOSPC, -ENOMEM  no stack could be had; see vms_stack_alloc
 */
VMS_API int vms_fiber_spawn(vms_fiber *f, void *(*fn)(void *), void *arg, const vms_fiber_opts *opts);

/*
 * Lets the other ready fibers of this thread run; returns when the calling
 * fiber's turn comes again (at once when none is ready).  Returns 0, or
 * -EPERM when not called from a fiber.
 */
VMS_API int vms_yield(void);

/*
 * Waits until fiber f has ended, fills *st (may be NULL) and frees f's stack;
 * the handle becomes stale.  Called from a fiber, the caller sleeps while
 * other fibers run; called from the thread's own stack, the thread runs its
 * ready fibers until f has ended.  Returns 0, or:
 *   -EINVAL   f is not a fiber handle, or f is detached
 *   -EALREADY f was joined already (stale handle)
 *   -EPERM    f belongs to another thread
 *   -EBUSY    another fiber already waits to join f
 *   -EDEADLK  f is the calling fiber itself
 */
VMS_API int vms_fiber_join(vms_fiber f, vms_fiber_status *st);

/*
 * Runs the calling thread's fibers until all of them have ended (and may be
 * joined without waiting), sleeping in epoll_wait while they all wait for
 * timers, fds or wakes.  Returns 0; -EPERM when called from a fiber;
 * -EDEADLK when fibers are left that all wait to join one another.
 */
VMS_API int vms_run(void);

/* The running fiber of the calling thread; id 0 on the thread's own stack. */
VMS_API vms_fiber vms_fiber_current(void);

/* A fiber's id; also in reports.  Ids are never reused. */
static VMS_INLINE uint64_t vms_fiber_id(vms_fiber f)
{
    return f.id;
}

/*
 * A fiber's name, valid until it is joined; NULL (errno EINVAL, EALREADY
 * or EPERM as vms_fiber_join) for a bad, stale or other thread's handle.
 */
VMS_API const char *vms_fiber_name(vms_fiber f);

/* The stack a fiber runs on, e.g. for vms_stack_used().  0 or as vms_fiber_name. */
VMS_API int vms_fiber_stack(vms_fiber f, vms_stack *st);

/*
 * Sets the calling fiber's kill hook: fn(arg) runs if the fiber is killed
 * (overflow or broken canary), on what is left of the fiber's own stack,
 * before its joiner is woken; NULL removes it.  A kill cannot undo what the
 * fiber had started: locks it holds stay held, half-done updates stay half
 * done, memory it allocated stays allocated, unless the hook sees to it.  It
 * should not yield or join.  Returns 0, or -EPERM when not called from a
 * fiber.
 */
VMS_API int vms_fiber_on_kill(void (*fn)(void *), void *arg);

/* ---- waiting: park and wake, sleep, fd readiness ---- */

/*
 * A fiber can wait for another fiber or thread, for a time, or for an fd to
 * become ready, while the other fibers of its thread run.  When no fiber
 * of a thread is ready, its scheduler (vms_run or vms_fiber_join on the
 * thread's own stack) sleeps in epoll_wait until the nearest timer, a
 * ready fd, or a wake from another thread.  Ready fibers always run first:
 * timers and fds are looked at when none is ready, so a fiber that only
 * yields keeps waiting fibers waiting.  vms_run returns once every fiber
 * has ended; a fiber parked with nobody left to wake it keeps it waiting.
 *
 * A child of fork() shares the epoll set of the thread that forked: it
 * should exec (the set is close-on-exec), not wait with inherited fibers.
 *
 * Each wait returns -EPERM when not called from a fiber.  A fiber killed
 * in the middle of a wait (an overflow or a broken canary as it switches
 * away) is taken out of every timer and fd table before its kill hook
 * runs; nothing is left that could wake it.
 */

/*
 * Suspends the calling fiber until vms_fiber_wake is called for it.  A wake
 * that came before the park is not lost: it is saved (one, however many
 * came) and the next park returns at once, taking it.  Returns 0, or:
 *   -EPERM   not called from a fiber
 *   -ENOMEM, -EMFILE  the thread's wake port (an eventfd, made on the
 *            first park of the thread) could not be made
 */
VMS_API int vms_fiber_park(void);

/*
 * Wakes fiber f if it is parked, or saves the wake for its next
 * vms_fiber_park.  Unlike the other fiber calls it may be called from any
 * thread, and from the thread's own stack: a wake from another thread
 * reaches f's scheduler, waking it if it sleeps in epoll_wait.  A wake
 * does not interrupt vms_sleep_ns or vms_wait_fd.  Returns 0, or:
 *   -EINVAL   f is not a fiber handle
 *   -EALREADY f has ended (stale handle)
 */
VMS_API int vms_fiber_wake(vms_fiber f);

/*
 * Suspends the calling fiber for at least ns nanoseconds (CLOCK_MONOTONIC;
 * timers are kept in a heap per thread, and fire with epoll_pwait2's
 * precision).  Returns 0, or -EPERM (not a fiber), -ENOMEM.
 */
VMS_API int vms_sleep_ns(uint64_t ns);

/*
 * Suspends the calling fiber until fd is ready for one of events: EPOLLIN,
 * EPOLLPRI, EPOLLRDHUP and/or EPOLLOUT (the POLL* values are the same).
 * timeout_ns < 0 waits for ever; 0 only looks (poll(), level triggered),
 * without suspending.  Use non-blocking fds, and wait after a read or write
 * said EAGAIN: the fd stays registered in the thread's epoll set from its
 * first wait until vms_fd_close, edge-triggered, so that a wait costs no
 * system call.  A readiness epoll reported is returned by the next wait
 * for it (at once, if it came while no fiber waited), once: it may be
 * stale by then (the read says EAGAIN again; wait again), and a wait after
 * a read that left data unread may sleep until more comes.  EPOLLERR,
 * EPOLLHUP and EPOLLRDHUP, once seen, are returned by every later wait.
 * Returns the ready events (EPOLLERR and EPOLLHUP are always reported), 0
 * on timeout, or:
 *   -EPERM   not called from a fiber; or fd is a regular file or a
 *            directory, which epoll refuses (they are always ready)
 *   -EBADF   fd is not open, or was closed with vms_fd_close while waited on
 *   -EBUSY   another fiber of this thread already waits on fd for the same
 *            direction (EPOLLOUT, or any of the others): one fiber per fd
 *            and direction, as the message says which one
 *   -EINVAL  events is 0 or has other bits
 *   -ENOMEM, -EMFILE  the thread's epoll set could not be made or grown
 * Close an fd that fibers wait on with vms_fd_close.  An fd closed with
 * plain close() is dropped by the kernel without an event: a fiber waiting
 * on it then waits until its timeout; and when its number is reused, the
 * first wait on the new file finds the old registration gone after 100 ms
 * (one epoll_ctl), and goes on from there: it never hangs, and never gets
 * an event of the old file, but it may be late by up to 100 ms.
 */
VMS_API int vms_wait_fd(int fd, uint32_t events, int64_t timeout_ns);

/*
 * close(fd), after waking the fibers of the calling thread that wait on fd
 * with -EBADF and forgetting fd's registration.  Returns 0, or close's
 * negative errno.
 */
VMS_API int vms_fd_close(int fd);

/* ---- blocking calls off the thread: offload, file I/O ---- */

/*
 * Runs fn(arg) on a helper thread while the calling fiber waits; its
 * thread runs its other fibers meanwhile, or sleeps in epoll_wait, woken
 * when fn returns.  For calls that block and have no non-blocking form:
 * getaddrinfo, fsync, a file read from a slow disk, a library's own I/O.
 * Fills *result (may be NULL) with what fn returned.  Called outside a
 * fiber (a thread without fibers, or a thread's own stack), it just calls
 * fn: there is nothing else to run.
 *
 * The helpers are made as needed, up to 16 (calls beyond wait in a FIFO
 * queue), on guarded vmstack stacks of 256 KiB named "vmstack-offload",
 * with every signal blocked but the synchronous ones; one idle for 10
 * seconds exits.  fn runs on another thread: thread-local variables
 * (errno too) are the helper's, fn must not use vmstack's fiber calls
 * (it is no fiber), and what fn shares with the fiber's thread needs the
 * usual care; fn's writes are visible to the fiber when vms_offload
 * returns.  A vms_fiber_wake meanwhile is kept for the next
 * vms_fiber_park.  The call is handed over only once the fiber can no
 * longer be killed before it waits (no room to switch away): a killed
 * fiber's fn never ran.  After fork(), the child has no helpers and no
 * queued calls: inherited fibers that waited in vms_offload wait for ever
 * (the child should not run them, as said above), and the child's own
 * calls get new helpers.  Returns 0, or:
 *   -EINVAL  fn is NULL
 *   -EAGAIN  no helper thread exists and none could be started
 *            (pthread_create's error; also -ENOMEM, -ENOSPC for its stack)
 *   -ENOMEM, -EMFILE  the thread's wake port (an eventfd, made on the
 *            first wait of the thread) could not be made
 */
VMS_API int vms_offload(void *(*fn)(void *), void *arg, void **result);

/*
 * pread(2) and pwrite(2) that do not stall the calling fiber's thread.
 * vms_pread reads what the page cache holds at once (preadv2 with
 * RWF_NOWAIT, no system call more than pread's) and the rest, if any,
 * through vms_offload; vms_pwrite always goes through vms_offload
 * (buffered writes may wait on dirty-page throttling and journal locks).
 * Outside a fiber they are plain pread and pwrite.  As those, they may
 * transfer less than count (at the end of the file, or when part was read
 * and the rest failed; the error then comes with the next call).  Return
 * the bytes read or written, or a negative errno: pread's and pwrite's
 * (-EBADF, -ESPIPE for a pipe or socket, -EFAULT, -EINVAL, -EIO, ...) and
 * vms_offload's.
 */
VMS_API ssize_t vms_pread(int fd, void *buf, size_t count, off_t offset);
VMS_API ssize_t vms_pwrite(int fd, const void *buf, size_t count, off_t offset);

/*
 * Fiber synchronisation: a mutex, a condition variable, a bounded channel
 * and a wait group, each usable between fibers of one thread and of
 * different threads.  A fiber that must wait parks (its thread runs its
 * other fibers, or sleeps in epoll_wait); the thread's own stack, which
 * runs the scheduler, cannot wait: calls that would wait return -EPERM
 * there.  Waiters are served first come, first served.  The objects hold
 * no system resource: mutexes, conditions and wait groups start zeroed
 * (VMS_MUTEX_INIT, ...) and need no destroy; a channel needs
 * vms_chan_init and vms_chan_destroy for its buffer.  Timeouts are in
 * nanoseconds: < 0 waits for ever, 0 does not wait.  A vms_fiber_wake of
 * the program's own that reaches a fiber while it waits here is kept for
 * its next vms_fiber_park.  A fiber killed while it waits (no room left
 * to switch away) is taken out of the queue first.
 */
typedef struct vms_mutex { uint64_t private_[6]; } vms_mutex;
typedef struct vms_cond { uint64_t private_[3]; } vms_cond;
typedef struct vms_waitgroup { uint64_t private_[4]; } vms_waitgroup;
typedef struct vms_chan { uint64_t private_[10]; } vms_chan;
#define VMS_MUTEX_INIT { { 0 } }
#define VMS_COND_INIT { { 0 } }
#define VMS_WAITGROUP_INIT { { 0 } }

/*
 * Locks m, parking the fiber while another holds it; unlock hands it to the
 * longest waiter.  A fiber that ends holding m (killed by an overflow, or
 * returned) passes it on as dead: the next lock returns -EOWNERDEAD with m
 * held by the caller, who should make what m guards consistent (it is then
 * an ordinary lock again); a kill prints which mutex the fiber held after
 * the overflow report: "vmstack: fiber 'NAME' (id N) was killed holding
 * vms_mutex ADDR: its next lock returns EOWNERDEAD".  Returns 0,
 * -EOWNERDEAD, or -EDEADLK (the caller holds m), -EPERM (not a fiber),
 * -ENOMEM (the fiber's lock state, on its first lock).
 */
VMS_API int vms_mutex_lock(vms_mutex *m);
/* As vms_mutex_lock, without waiting: -EBUSY when another fiber holds m. */
VMS_API int vms_mutex_trylock(vms_mutex *m);
/* 0, or -EPERM: the calling fiber does not hold m. */
VMS_API int vms_mutex_unlock(vms_mutex *m);

/*
 * Unlocks m (which the caller must hold), waits for a signal or broadcast
 * on c or for timeout_ns, and locks m again.  Returns 0 (signalled, or
 * woken: check the condition again), -ETIMEDOUT (m held again too),
 * -EOWNERDEAD (from the relock), -EPERM (not a fiber, or m not held).
 */
VMS_API int vms_cond_wait(vms_cond *c, vms_mutex *m, int64_t timeout_ns);
/* Wake the longest waiter, or every waiter; from any context.  Return 0. */
VMS_API int vms_cond_signal(vms_cond *c);
VMS_API int vms_cond_broadcast(vms_cond *c);

/*
 * A bounded channel of items of item_size bytes, copied in and out;
 * capacity items fit in its buffer (0: every send waits for a receiver).
 * Sends and receives that do not wait work from any context.  Return 0 or:
 *   -EAGAIN     timeout 0 and it would wait
 *   -ETIMEDOUT  the timeout passed (the item was not sent / none came)
 *   -EPIPE      closed: a send after (or waiting at) the close, a receive
 *               once the buffer is empty
 *   -EINVAL     not made with vms_chan_init; item_size 0 (init)
 *   -EPERM      it would wait, outside a fiber
 *   -ENOMEM     the buffer (init), the fiber's wait state
 * vms_chan_close wakes every waiter (-EPIPE), -EALREADY the second time;
 * vms_chan_destroy frees the buffer, -EBUSY while fibers wait.  A receiver
 * killed while it waits loses the item a sender was handing it.
 */
VMS_API int vms_chan_init(vms_chan *ch, size_t item_size, size_t capacity);
VMS_API int vms_chan_send(vms_chan *ch, const void *item, int64_t timeout_ns);
VMS_API int vms_chan_recv(vms_chan *ch, void *item, int64_t timeout_ns);
VMS_API int vms_chan_close(vms_chan *ch);
VMS_API int vms_chan_destroy(vms_chan *ch);

/*
 * A wait group: add(n) before starting n pieces of work, done() as each
 * ends (from any context), wait until the count is zero.  Returns 0, or
 * -EINVAL (the count would go below zero), -ETIMEDOUT, -EPERM (wait
 * outside a fiber, when it would wait).
 */
VMS_API int vms_waitgroup_add(vms_waitgroup *wg, int64_t delta);
VMS_API int vms_waitgroup_done(vms_waitgroup *wg);
VMS_API int vms_waitgroup_wait(vms_waitgroup *wg, int64_t timeout_ns);

/*
 * Fiber-local storage: a key made once per process, a value per key in
 * each fiber (NULL until set).  When a fiber ends, by returning or killed,
 * the destructor of each key runs with the fiber's non-NULL value, on the
 * fiber's stack, before its joiner wakes (up to 4 rounds if destructors
 * set values again).  create: 0 or -EAGAIN (VMS_FIBER_KEYS_MAX keys in
 * use); set: 0, -EINVAL (not a key), -EPERM (not a fiber), -ENOMEM; get:
 * the value, or NULL (none, or not a fiber).  delete: 0 or -EINVAL; as
 * with pthread keys, the values of a deleted key get no destructor, and a
 * key made again may still find them in fibers that set them before.
 */
#define VMS_FIBER_KEYS_MAX 128
typedef unsigned vms_fiber_key;
VMS_API int vms_fiber_key_create(vms_fiber_key *key, void (*destructor)(void *));
VMS_API int vms_fiber_key_delete(vms_fiber_key key);
VMS_API void *vms_fiber_key_get(vms_fiber_key key);
VMS_API int vms_fiber_key_set(vms_fiber_key key, const void *value);

/* The calling thread's scheduler: what it did so far. */
typedef struct vms_sched_stats {
    uint64_t spawned;     /* fibers spawned */
    uint64_t returned;    /* fibers that ended by returning */
    uint64_t killed;      /* fibers killed (overflow or canary) */
    uint64_t switches;    /* context switches */
    size_t live;          /* fibers spawned and not ended */
    size_t peak_live;     /* the most live at once */
} vms_sched_stats;

VMS_API void vms_sched_stats_get(vms_sched_stats *st);

/* ------------------------------------------------------------------------ */
/* Threads                                                                  */
/* ------------------------------------------------------------------------ */

/*
 * pthread_create on a guarded vmstack stack.  The stack size is attr's
 * (pthread_attr_setstacksize, else glibc's default, typically 8 MiB),
 * rounded up to its size class (see vms_stack_alloc), or the configured default
 * stack size when attr is NULL; attr's other settings apply as given; an
 * attr with a stack of its own (pthread_attr_setstack) is refused with
 * -EINVAL.  name (may be NULL; at most 15 characters reach the kernel) is
 * the thread's name for overflow reports and the kernel's comm.  The
 * thread gets an alternate signal stack, so that an overflow is reported
 * (thread name, tid, start routine) before the process dies by SIGSEGV;
 * it is freed with the thread's stack, and the tid is asked of the kernel
 * only when a report needs it, so a create + join costs the system calls
 * of a plain pthread_create + join.
 * glibc keeps the thread's descriptor and static TLS at the top of the
 * stack, as on stacks it maps itself.  Returns 0, or a negative errno:
 * those of vms_stack_alloc, or pthread_create's (e.g. -EAGAIN).
 *
 * A thread created here must be joined with vms_thread_join, which frees
 * its stack, or detached (by attr or vms_thread_detach): its stack is then
 * freed by a later vms_thread_create once the kernel reports the thread
 * gone.  pthread_join/pthread_detach on it would leak the stack.
 */
VMS_API int vms_thread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *), void *arg,
                              const char *name);

/*
 * pthread_join, then frees the thread's stack.  0 or a negative errno, as
 * pthread_join's: -EINVAL for a detached thread, -ESRCH for one already
 * joined.
 */
VMS_API int vms_thread_join(pthread_t thread, void **ret);

/*
 * pthread_detach for a thread of vms_thread_create (others: plain
 * pthread_detach).  -EINVAL when already detached, -ESRCH once joined.
 */
VMS_API int vms_thread_detach(pthread_t thread);

/* ------------------------------------------------------------------------ */
/* Stack overflow                                                           */
/* ------------------------------------------------------------------------ */

/*
 * As in the kernel with virtually mapped stacks, an overflow into the guard
 * below a stack is caught, reported like an oops, and only the offender
 * dies.  vmstack installs SIGSEGV and SIGBUS handlers (SA_SIGINFO |
 * SA_ONSTACK) on first use (the first stack allocation, or
 * vms_fault_install()), and every thread that allocates stacks, runs fibers
 * or runs on a vmstack thread stack gets an alternate signal stack that is
 * itself a guarded vmstack stack.  Handlers installed before are kept and
 * get every fault that is not a guard hit of a known stack; a handler
 * installed later that chains to the previous one keeps working.
 *
 * The fault address is looked up in O(1): in the guard of a live stack,
 * with the stack pointer on that stack or in its guard, it is an overflow
 * of the task on that stack.  In a guard, but from code whose stack pointer
 * is elsewhere, it is a wild access: reported, then passed on.  Anything
 * else is passed on untouched: to the earlier handler, or to the default
 * action, so the process dies by the real signal, with its core dump,
 * exactly as without vmstack.
 *
 * The report goes to stderr (or vms_set_report_fd), line by line as it is
 * built, so a report cut short still says what it found; a
 * vms_set_report_callback callback gets it whole at the end.  Two reports
 * never interleave.  Every line starts with "vmstack: ".  Its fixed words
 * are stable:
 *
 *   vmstack: BUG: stack guard page was hit at 0xADDR (stack is 0xLO..0xHI)
 *   vmstack: TASK
 *   vmstack: stack N KiB, guard N KiB at 0xLO..0xHI; sp is N bytes below the top
 *  [vmstack: one frame jumped the guard: the access landed in the guard of TASK
 *            (stack is 0xLO..0xHI), whose stack may be corrupted]
 *   vmstack: ip 0xIP sp 0xSP bp 0xBP
 *   vmstack: Call Trace:
 *   vmstack:  [<0xIP>] function+0xOFF/0xSIZE [module] file.c:LINE
 *             (file:line where the module carries its own uncompressed DWARF line table, -g;
 *             C++ names demangled where that cannot hang, Rust names always)
 *   vmstack:  ... N more frames of function+0xOFF/0xSIZE [module]
 *   vmstack:  ... N frames not shown ...
 *  [vmstack:  (unwinding failed)]
 *   vmstack: killed fiber 'NAME'
 *     (or) vmstack: aborting: WHY; SETTING sizes ...   (never a bare "aborting": why the task is not
 *          ended alone, and what sizes its kind of stack: ulimit -s for the main thread, the
 *          pthread_attr_t or VMSTACK_STACK_SIZE for a thread, vmstack run --stack-size for a thread
 *          of 'vmstack run', vms_fiber_opts.stack_size for a fiber, vms_stack_alloc's size for a stack)
 *     (or) vmstack: passing SIGSEGV to the program's own handler
 *     (or) vmstack: overflow inside FUNCTION (MODULE): killing the fiber could leave a lock held; aborting
 *     (or) vmstack: the call chain could not be followed to the fiber's start: killing the fiber could
 *          leave a lock held; aborting
 *     (or, for a stack with an overflow handler) the same two lines with "the stack's entry" for
 *          "the fiber's start" and "killing the coroutine" for "killing the fiber"
 *
 * The offender is the task running on the faulting thread: a fiber or a
 * thread whose one large frame jumped its own guard into another stack's
 * guard is the one reported (a fiber is killed); the bracketed line names
 * the other stack, which is marked possibly corrupted for as long as it
 * stays allocated (vms_stack_tainted, vms_fiber_status.tainted).
 * "(unwinding failed)": a fault inside the unwinder (corrupt call-frame
 * information) ended the trace there; the report and the policy go on.
 * (For that, installing the handler sets libunwind's local address space
 * to UNW_CACHE_NONE: libunwind parses call-frame information with every
 * signal blocked while it holds its cache's lock, and a fault there would
 * end the process at once.  A program's own libunwind use goes uncached.)
 * A kill never hangs the process: KILL is carried out only when no frame
 * of the faulting chain, up to the fiber's start routine, lies in libc,
 * the dynamic loader or vmstack (libc's lock-free leaf routines such as memcpy and strlen aside),
 * where the fiber could hold a lock other tasks need; otherwise the
 * policy becomes ABORT and the last line says why.  A stack's overflow
 * handler (vms_stack_on_overflow) is called under the same rule, its
 * chain followed up to the coroutine runtime's trampoline, the outermost
 * frame on the stack (glibc's __start_context for makecontext,
 * Boost.Context's trampoline, or the frame that returns to the runtime's
 * vms_stack_opts.outermost_return), which is not judged; Boost.Fiber's
 * code (libboost_fiber, and its inline functions by name) counts as
 * holding a lock.  An earlier handler
 * of the program's gets an overflow that is not killed (its last line
 * says so), as it would have without vmstack.
 *
 * The last line may also read "vmstack: killed stack 'NAME': its overflow
 * handler ends the coroutine" (vms_stack_on_overflow), or, when the policy
 * said kill and the task cannot be killed, "vmstack: aborting: " and why:
 * "a thread cannot be killed alone", "stack 'NAME' has no overflow
 * handler to end it (vms_stack_on_overflow)" (followed by ": REASON" when
 * the stack's runtime gave one, vms_stack_opts.abort_reason), "fiber
 * 'NAME' is not the one running here and cannot be killed".  A stack
 * without a handler whose runtime gave a reason aborts under the default
 * policy with "vmstack: aborting: REASON; the size given to
 * vms_stack_alloc sizes it".
 *
 * TASK is "fiber 'NAME' (id N) on thread 'NAME' (tid N)", "thread 'NAME'
 * (tid N)", "stack 'NAME' on thread 'NAME' (tid N)" (a stack named with
 * vms_stack_set_name or given an overflow handler) or "a stack without a
 * task, on thread 'NAME' (tid N)", followed
 * by ", start routine function+0xOFF/0xSIZE [module]" when known.  C++
 * names are shown demangled where the report can prove that the
 * interrupted code holds no allocator lock (the demangler allocates), else
 * as stored ("_Z...").  A frame
 * in no known function reads "?? [module+0xOFF]".  Repeated frames (deep
 * recursion) are folded; the first 24 and last 8 runs of frames are shown.
 * A wild access reads instead:
 *
 *   vmstack: BUG: wild access to a stack guard page at 0xADDR (stack is 0xLO..0xHI)
 *   vmstack: the stack belongs to TASK     (or: nobody: it is free)
 *   vmstack: accessed by TASK              (or: thread 'NAME' (tid N), sp on no known stack)
 *   ... ip, Call Trace as above ...
 *   vmstack: not an overflow: passing SIGSEGV on
 *
 * Symbols come from a table read outside signal context (the kernel's
 * kallsyms): at installation, and again by vms_fault_install() when modules
 * were loaded or unloaded since; call it after dlopen to symbolize the new
 * module's functions.
 */

/* What to do with a task that overflowed its stack. */
typedef enum vms_overflow_policy {
    VMS_OVERFLOW_DEFAULT = 0, /* KILL for fibers and for stacks with an overflow handler
                                 (vms_stack_on_overflow), ABORT for everything else */
    VMS_OVERFLOW_KILL,        /* fibers: end it, status VMS_FIBER_KILLED_OVERFLOW, its
                                 scheduler goes on; stacks: call their overflow handler,
                                 which ends the coroutine; threads and stacks without a
                                 handler cannot be killed alone, nor a fiber whose chain
                                 may hold a lock (see above): ABORT, and the report's
                                 last line says why */
    VMS_OVERFLOW_ABORT,       /* report, then die by SIGSEGV as if unhandled (the earlier
                                 handler, if any, gets the fault first); reports that other
                                 threads are writing get 50 ms to 2 s to finish first */
    VMS_OVERFLOW_CALLBACK     /* ask the function set with vms_set_overflow_callback */
} vms_overflow_policy;

/* The tasks a policy is set for. */
typedef enum vms_overflow_task {
    VMS_OVERFLOW_FIBER = 1,   /* fibers (vms_fiber_spawn) */
    VMS_OVERFLOW_THREAD = 2,  /* threads (vms_thread_create, `vmstack run`) */
    VMS_OVERFLOW_STACK = 3    /* bare vms_stack_alloc stacks (other coroutine libraries) */
} vms_overflow_task;

/*
 * Sets the policy for one kind of task.  Returns 0, or -EINVAL for an
 * unknown task kind or policy.
 *
 * What a kill cannot undo: the fiber's frames are abandoned, not unwound.
 * Locks it holds stay held, updates it was making stay half done, memory
 * and descriptors it allocated stay allocated, C++ destructors and
 * pthread cleanup handlers do not run.  Its kill hook (vms_fiber_on_kill)
 * is the place to release such things.  A fiber that may hold shared state
 * when it overflows is better served by ABORT.
 */
VMS_API int vms_set_overflow_policy(vms_overflow_task task, vms_overflow_policy policy);

/* What a policy callback is told.  Pointers are valid during the call only. */
typedef struct vms_overflow {
    vms_overflow_task task;   /* the kind of task that overflowed */
    uint64_t id;              /* fiber id, thread id (tid), or the stack's vms_stack.id */
    const char *name;         /* the task's name ("" for a stack never named) */
    void *fault_addr;         /* the address that hit the guard */
    void *stack_lo, *stack_hi;/* the stack's usable bytes */
    void *guard_lo;           /* the guard is [guard_lo, stack_lo) */
    void *ip, *sp, *bp;       /* the interrupted context */
    int signo;                /* SIGSEGV (or SIGBUS) */
    const char *report;       /* the report so far, without its last line: */
    size_t report_len;        /* report_len bytes, not NUL-terminated */
} vms_overflow;

/*
 * The callback for VMS_OVERFLOW_CALLBACK; it returns VMS_OVERFLOW_KILL or
 * VMS_OVERFLOW_ABORT (anything else: the task's default).  It runs inside
 * the signal handler, on the alternate signal stack: it may call only
 * async-signal-safe functions, and must not touch the overflowed stack.
 */
typedef vms_overflow_policy (*vms_overflow_fn)(const vms_overflow *ov, void *arg);
VMS_API void vms_set_overflow_callback(vms_overflow_fn fn, void *arg);

/*
 * Stacks of other coroutine libraries.  A runtime that runs its coroutines
 * on vmstack stacks (Boost.Context, minicoro, its own) ends just the
 * coroutine that overflowed, as vmstack does for its fibers, by giving
 * each stack an overflow handler:
 *
 *   fn(ov, arg) is called after the report, in the signal handler, on the
 *   thread's alternate signal stack, with the signal mask of the code that
 *   overflowed restored, so that it may leave for good: longjmp to a
 *   recovery point of the runtime, or switch to the runtime's scheduler
 *   context.  It must not return to the overflowed coroutine and must not
 *   touch its stack, except to free it once it runs elsewhere.  Until it
 *   leaves it may call only async-signal-safe functions.  Should it
 *   return, vmstack reports that and aborts.
 *
 * The policy for such stacks (VMS_OVERFLOW_STACK) defaults to KILL when a
 * handler is set, ABORT otherwise; KILL (from the policy or the callback)
 * for a stack without a handler aborts, and the report says so.  So does
 * KILL for a coroutine whose chain, up to its runtime's trampoline, may
 * hold a lock of libc, the loader or vmstack (an overflow inside fprintf,
 * which holds the stream's lock): the handler is not called.
 *
 * What a kill cannot undo: the coroutine's frames are abandoned, not
 * unwound.  Its locks stay held, its half-done updates stay half done,
 * what it allocated stays allocated, C++ destructors do not run (also not
 * those of what the runtime keeps on the stack itself, such as a Boost
 * continuation's captured function).  The runtime's handler is the place
 * to release what the runtime owns; free the stack afterwards
 * (vms_stack_free or vms_stack_free_sp).
 *
 * The report needs an alternate signal stack on the thread that runs the
 * coroutine: vmstack gives one to threads that allocate stacks, create
 * vmstack threads or run fibers; any other thread (a work-stealing
 * scheduler's worker that only resumes coroutines) must call
 * vms_thread_attach() first, or an overflow there kills the process with a
 * bare SIGSEGV and no report.
 *
 * vms_stack_on_overflow sets fn (NULL removes it) for the stack st; the
 * stack keeps it until it is freed.  Returns 0, or -EINVAL (stale or
 * foreign handle), -EBUSY (a vmstack fiber or thread runs on it).
 */
typedef void (*vms_stack_overflow_fn)(const vms_overflow *ov, void *arg);
VMS_API int vms_stack_on_overflow(const vms_stack *st, vms_stack_overflow_fn fn, void *arg);

/*
 * Everything a coroutine runtime sets for one stack, in one call: the
 * allocation of vms_stack_alloc, and the settings of vms_stack_set_name
 * and vms_stack_on_overflow written straight into the new stack's record
 * (no lookup per setting), plus two that only this call sets.  Zero (or
 * NULL) fields are the defaults; all zero is vms_stack_alloc(st, 0).
 *
 *   size              usable bytes, as vms_stack_alloc's size (0: the default)
 *   name              as vms_stack_set_name; NULL: none
 *   on_overflow, arg  as vms_stack_on_overflow; NULL: none
 *   handler_on_stack  nonzero: on_overflow runs on the coroutine's own
 *                     stack instead of the alternate signal stack, as
 *                     ordinary code (the signal handler has returned,
 *                     the coroutine's signal mask is back), on a fresh
 *                     frame below the chain's outermost frame, which
 *                     stays intact.  It leaves as the coroutine itself
 *                     would: through the runtime's own yield or switch,
 *                     never to be resumed (minicoro's mco_yield checks
 *                     that it runs on the coroutine's stack, so it cannot
 *                     be called from the alternate one).  The frames
 *                     below the outermost are abandoned as by any kill.
 *                     Should it return, vmstack says so and the process
 *                     dies by SIGSEGV.
 *   outermost_return  the return address the runtime gives its
 *                     coroutines' outermost frame, when it is not a
 *                     real one (minicoro's asm backend:
 *                     0xdeaddeaddeaddead).  The kill's chain check ends
 *                     there, as at a trampoline: without it the chain
 *                     "could not be followed to the stack's entry" and
 *                     the kill becomes an abort.  The report's trace
 *                     ends there too.  0: none
 *   low_reserve       bytes at the stack's low end that hold the runtime's
 *                     own state (minicoro keeps its coroutine record, its
 *                     context and its storage at the start of the block it
 *                     allocates, and the stack above them), rounded up to
 *                     whole pages.  A guard of low_guard bytes (rounded up
 *                     to whole pages; 0: one page) then lies between them
 *                     and the stack, so that an overflow stops there and
 *                     is reported and handled as one at the stack's own
 *                     guard, with the reserve intact.  The block is still
 *                     [base, top): the runtime puts its state at base as
 *                     before, and its stack loses the reserve and the
 *                     guard (ask the runtime for that much more stack).
 *                     A frame larger than low_guard can jump it, as any
 *                     guard (-fstack-clash-protection).  Costs a system
 *                     call at allocation and at free, and two VMAs in
 *                     mprotect mode.  0: none
 *   low_guard         see low_reserve
 *   abort_reason      when the runtime gives no overflow handler: why it
 *                     cannot end a coroutine alone, said in the report's
 *                     last line when an overflow aborts ("vmstack:
 *                     aborting: REASON; the size ..."); a string that
 *                     lives as long as the stack (a literal).  NULL: the
 *                     generic "the stack has no overflow handler ..."
 *
 * Returns 0 and fills *st, or the errors of vms_stack_alloc, or -EINVAL
 * when the reserve and its guard leave less than one page of stack.
 * Not async-signal-safe.
 */
typedef struct vms_stack_opts {
    size_t size;
    const char *name;
    vms_stack_overflow_fn on_overflow;
    void *on_overflow_arg;
    uintptr_t outermost_return;
    size_t low_reserve;
    size_t low_guard;
    const char *abort_reason;
    int handler_on_stack;
} vms_stack_opts;
VMS_API int vms_stack_alloc_opts(vms_stack *st, const vms_stack_opts *opts);

/*
 * Makes the calling thread report-ready: the overflow handler installed,
 * and a guarded alternate signal stack for the thread (a vmstack stack of
 * 64 KiB, or the default stack size when larger).  Once per thread; later
 * calls cost a thread-local test.  The stack is released when the thread
 * exits, or by vms_thread_unattach.  Returns 0 or a negative errno (as
 * vms_stack_alloc).
 */
VMS_API int vms_thread_attach(void);

/*
 * Undoes vms_thread_attach for the calling thread: its alternate signal
 * stack is freed and the one it had before is restored; an overflow on the
 * thread then gets no report.  Returns 0 (also when not attached), or
 * -EBUSY when called from a signal handler running on that stack.
 */
VMS_API int vms_thread_unattach(void);

/*
 * Reports go to fd (default 2).  Returns 0, or -EBADF for a negative fd.
 * What fd leads to is recorded now (for fd 2 by default: when the overflow
 * handler is installed); a report is written to it only while it still
 * leads there, or now to something that is no regular file (a pipe, a
 * terminal): never into a data file the program has since opened at that
 * number.  A report waits at most 2 seconds in all for room on fd (a
 * pipe nobody reads); the rest of it is dropped and the policy goes on.
 * fd's flags are left as they are.
 */
VMS_API int vms_set_report_fd(int fd);

/*
 * Reports go to fn instead, one call per whole report (NULL: back to the
 * fd).  fn runs inside the signal handler: async-signal-safe calls only.
 */
VMS_API void vms_set_report_callback(void (*fn)(const char *text, size_t len, void *arg), void *arg);

/*
 * Installs the handlers (once) and the calling thread's alternate signal
 * stack, and refreshes the symbol table if modules were loaded since.
 * Stack allocation does this by itself; call it explicitly after dlopen,
 * or to have the handlers in place before the first stack.  Returns 0 or a
 * negative errno (as vms_stack_alloc, for the alternate stack).
 */
VMS_API int vms_fault_install(void);

/* ------------------------------------------------------------------------ */
/* Stack tracer (fibers)                                                    */
/* ------------------------------------------------------------------------ */

/*
 * The kernel's stack tracer for fibers (`vmstack trace` does it for the
 * threads of unmodified programs): every fiber spawned after
 * vms_trace_enable gets a tripwire, inaccessible pages just below the
 * deepest page of its stack touched so far.  The first access to them
 * faults; the handler records the call chain that got there (libunwind)
 * and moves the tripwire down: to the next page while the fiber is less
 * than 256 KiB deep, an eighth of its depth further below it beyond, so
 * that a stack N bytes deep faults O(log N) times.  Once a fiber has been
 * as deep as it gets, nothing faults: no cost in steady state.  When the
 * fiber ends, its unused stack (zeroed when it started) gives the exact
 * depth, and the frames still there the rest of the chain; where later
 * calls overwrote them, the report says the chain is partial.  Frame
 * sizes are exact (differences of canonical frame addresses, return
 * address included, as gcc -fstack-usage counts).
 *
 * warn_frame: frames above this many bytes are listed once per function,
 * with the chain that reached them, in the report (0: off).  warn_depth:
 * a fiber passing this percentage of its stack gets a warning on stderr
 * at once (0: off).  Up to 16384 fibers are traced at once (the
 * environment's VMSTACK_TRACE_MAX_TASKS=N says another number); the rest
 * run untraced, and the report counts them.  Needs guard pages (not
 * VMS_GUARD_NONE).  Returns 0, or -EINVAL (warn_depth above 100),
 * -ENOTSUP, -ENOMEM.  Settings of a second call are ignored.
 */
VMS_API int vms_trace_enable(size_t warn_frame, unsigned warn_depth);

/*
 * Writes the deepest call chain of every traced fiber, ended or running,
 * to fd in the kernel's format, deepest first:
 *
 *   fiber 'NAME' (id N), start routine FN: D of S stack bytes deep, N tripwire faults
 *           Depth    Size   Location    (N entries)
 *           -----    ----   --------
 *     0)     7696      16   function+0x1b/0x40 [module] file.c:123
 *
 * Not async-signal-safe.  Returns 0, or -EINVAL when tracing is off, or
 * the write's negative errno.
 */
VMS_API int vms_trace_report(int fd);

/* ------------------------------------------------------------------------ */
/* Statistics and maintenance                                               */
/* ------------------------------------------------------------------------ */

typedef struct vms_stats {
    size_t sizes;           /* stack sizes (regions) in use */
    size_t live;            /* stacks allocated and not freed: the program's, its
                               fibers' and threads'; alternate signal stacks are not */
    size_t cached;          /* free stacks in per-CPU caches */
    size_t pooled_warm;     /* free stacks in the pool, memory kept */
    size_t pooled_cold;     /* free stacks in the pool, memory returned */
    size_t slots;           /* slots with guards installed */
    size_t chunks;          /* chunks mapped */
    size_t reserved_bytes;  /* address space reserved */
    size_t mapped_bytes;    /* address space mapped read-write (chunks) */
    uint64_t released;      /* stacks whose memory went back to the kernel */
    uint64_t release_calls; /* madvise calls that did it (batched) */
    uint64_t overflows;     /* stack overflows caught and reported */
    size_t altstacks;       /* alternate signal stacks vmstack gave threads (not in live) */
} vms_stats;

/* Fills *stats.  Counts are a consistent-enough snapshot, not atomic. */
VMS_API void vms_stats_get(vms_stats *stats);

/*
 * Returns the memory of all free stacks (caches and pool) to the kernel,
 * and that of the calling thread's fibers waiting for a second or more
 * (vms_fiber_trim).  Returns the number of stacks released or trimmed.
 */
VMS_API long vms_trim(void);

/*
 * Releases the unused part of the stacks of the calling thread's fibers
 * that have waited (vms_fiber_park, vms_sleep_ns, vms_wait_fd, the
 * synchronisation calls) for at least idle_ns: the whole pages below each
 * one's saved stack pointer and the red zone the processor's ABI keeps
 * below it (128 bytes on x86-64, none on aarch64), which hold nothing
 * live (MADV_DONTNEED; touched again, they come back as zeros, as a fresh
 * stack's pages do).  A fiber that went deep once, then waits, holds no
 * more than one that never did.  Once per wait: only fibers that waited
 * since the last trim are looked at, so a trim over fibers that did not
 * run since makes no system call.  When a fiber began to wait is known to
 * the time its thread last slept in epoll_wait.  Only the calling thread's
 * fibers: another thread's could resume meanwhile.  Returns the number of
 * fibers trimmed.
 */
VMS_API long vms_fiber_trim(uint64_t idle_ns);

#ifdef __cplusplus
}
#endif

#endif
