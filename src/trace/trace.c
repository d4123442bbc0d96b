/* SPDX-License-Identifier: MIT */
/*
 * The stack tracer: the ftrace stack tracer's deepest call chain, for
 * programs that were not rebuilt for it.
 *
 * The kernel's tracer runs at every function entry; user space has no such
 * hook without recompiling.  Two things together do the job here.
 *
 * Tripwires.  What every deeper call does is touch stack memory below all
 * memory touched before.  So each traced task gets a tripwire window: guard
 * markers (PROT_NONE in mprotect mode) on the pages just below the deepest
 * page touched so far, at least as many bytes as the stack's guard, so
 * that a frame that cannot jump the guard cannot jump the window either.
 * The first access to it faults; the handler (fault.c calls
 * vms__trace_fault, its tripwire hook, before anything else) unwinds the
 * interrupted context with libunwind into the task's preallocated buffer
 * -- that chain is the deepest yet -- moves the window below the access
 * and returns, so the access retries and the program goes on.  Once the
 * stack has been as deep as it gets, nothing faults any more.  A thread
 * finds its task through a thread-local pointer; a fiber's task is found
 * by the window's address, so fiber switches need not tell the tracer
 * anything.  Because a call pushes its return address at the new stack
 * pointer, the window is always below the stack pointer by the time a
 * system call runs: a buffer the kernel fills lies in frames above it, so
 * no read() into a stack buffer ends early with EFAULT.
 *
 * The dead stack (deadstack.c).  A frame can reach its deepest word
 * without crossing a page boundary, and a deep call can come after the
 * stack came back up: the tripwires' chain is then not the deepest.  The
 * unused stack is zeroed when tracing starts, so when the task ends its
 * lowest non-zero word is its exact depth; the frames there are unwound
 * from their return addresses and joined to the recorded chain, or marked
 * partial where later calls overwrote them.  That scan runs on the
 * thread's alternate signal stack, before any other exit code of ours,
 * so vmstack's own frames neither deepen the stack nor appear in a chain.
 *
 * The depth is that of the deepest stack pointer: the deepest function's
 * frame is taken whole from its call-frame information (it may have
 * written zeros last), and a leaf's red zone (up to 128 bytes it may use
 * below its stack pointer) is not counted, as -fstack-usage does not count
 * it; the usage table's PEAK, the lowest non-zero word, may be up to that
 * much deeper.  Frame sizes are differences of successive stack pointers
 * in the chain, i.e. of canonical frame addresses: exact, and including
 * the return address, as GCC's -fstack-usage counts on x86-64.
 *
 * Limits: a tripwire fault while SIGSEGV is blocked kills the process, so
 * traced threads get SIGSEGV unblocked, and pthread_create is preceded by
 * vms__trace_prefault.  A signal delivered on the stack when its frame
 * would overlap the window cannot be delivered: the kernel sends SIGSEGV
 * (SI_KERNEL) instead; the window is moved clear and a warning says that
 * a signal was lost.  A process ptraced when tracing starts gets no
 * tripwires (a debugger would stop at each): its depths come from the
 * dead-stack scan alone.
 *
 * The handler is async-signal-safe: syscalls (madvise, mprotect, write),
 * libunwind's local unwinding, the symbol snapshot, atomics; no malloc,
 * no stdio, no locks.
 */
#include "fault/fault.h"
#include "trace/trace.h"
#include "core/sanitizer.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/prctl.h>
#include <unistd.h>

#define TASKS_DEFAULT 16384    /* traced tasks alive at once, unless vms_trace_opts.max_tasks says */
#define MAX_FRAMES ((size_t)1 << 20)
#define RESULTS_MAX 1024       /* ended tasks kept one by one; beyond, one per start routine */
#define WARN_MAX 64            /* distinct functions reported by --warn-frame */
#define STEP_FROM ((uintptr_t)256 << 10) /* deeper than this, the windows are spaced (next_top) */
#define STEP_SHIFT 3           /* by an eighth of the depth */
#define WINDOW_MIN ((size_t)64 << 10) /* a stack with a smaller guard (glibc's 4 KiB) still gets this window */
/* A signal frame with this machine's vector state (vms__g.sigframe, once initialised). */
#define SIGFRAME_ROOM ((uintptr_t)(vms__g.sigframe ? vms__g.sigframe : VMS_SIGFRAME_MIN))

enum { FREE = 0, BUSY, LIVE };

#define CFI_KNOWN 32             /* instruction pointers whose call-frame information was looked up */

/* Whether code has call-frame information, for the ips looked up last (has_cfi). */
struct cfi_known {
    uint32_t bits;               /* bit i: ip[i] has call-frame information */
    uintptr_t ip[CFI_KNOWN];     /* direct-mapped by address */
};

/* A traced task.  The handler reaches its own through `self`, others' by scanning. */
struct task {
    _Atomic int state;           /* first: the rest is the body, filled in while the state says BUSY */
    _Atomic unsigned readers;    /* threads copying the chain: its buffer is not unmapped under them */
    _Atomic int mover;           /* 1 while a thread moves the window (one at a time): task_close waits */
    _Atomic uintptr_t wire;      /* the top (end) of the tripwire window; 0: none */
    _Atomic uintptr_t moving;    /* top of the window being removed, still a tripwire */
    uintptr_t lo, hi;
    size_t window;               /* bytes of the window, before it is cut at the stack's bottom */
    uintptr_t floor;             /* where the program's own use starts: our frames of the start are above */
    bool grows;
    struct vms_task who;
    struct vms_trace_frame *buf; /* the deepest chain; cap entries, mmap'd */
    size_t cap;
    _Atomic unsigned seq;        /* odd while buf is written */
    uint32_t n;
    uint64_t faults;
    bool inner_ret;              /* buf[n - 1].ip is a return address, not a faulting ip */
    bool cut;                    /* buf[0]'s code has no call-frame information: its callers are unknown */
    bool depth_warned, lost, signal_lost;
};

#define TASK_BODY offsetof(struct task, wire)
_Static_assert(offsetof(struct task, state) == 0, "the state is not part of a task's body");
_Static_assert(offsetof(struct task, readers) < TASK_BODY, "the readers are not part of a task's body");
_Static_assert(offsetof(struct task, mover) < TASK_BODY, "the mover is not part of a task's body");

/* A frame warning slot: claimed by its function's address, published by ready. */
struct warn_slot {
    _Atomic uintptr_t fn;
    _Atomic int ready;
    struct vms_trace_warn w;
};

_Atomic int vms__trace_armed;
static int tracer;               /* the pid ptracing the process when tracing was configured; 0: none */
static bool on_valgrind;         /* valgrind runs the process: it reports every read of a tripwire's neighbours */
static struct vms_trace_opts opts;
static struct task *tasks;       /* tasks_max, mmap'd when configured (only what is touched costs memory) */
static int tasks_max;
static _Atomic unsigned long untraced; /* tasks that found no free record: they ran untraced */
static _Atomic int tasks_used;   /* [0, tasks_used) may be LIVE */
static struct warn_slot *warns;  /* WARN_MAX */
static TLS_IE struct task *self;
static TLS_IE bool unwinding;     /* in record: every signal is blocked (the handler's mask) */
/*
 * Windows taken away so far, counted before they stop being known; and
 * this thread's last fault in no known window, with the count then (see
 * gone_meanwhile).
 */
static _Atomic unsigned long windows_gone;
static TLS_IE struct { uintptr_t ip, addr; unsigned long gone; } unknown;

static _Atomic unsigned long quiet_ended; /* tasks that ended without a tripwire fault */
static pthread_mutex_t config_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t results_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vms_trace_chain *results;
static size_t nresults, results_cap;

/* ---- tripwires ---- */

static uintptr_t page_floor(uintptr_t a)
{
    return a & ~(uintptr_t)(vms__g.page - 1);
}

/*
 * The window that ends at top: its lowest byte.  Never the stack's bottom
 * page (where a fiber without guards keeps its canary); 0 when nothing is
 * left above it.
 */
static uintptr_t window_bottom(const struct task *t, uintptr_t top)
{
    uintptr_t pg = vms__g.page, min = t->lo + pg;

    if (top < min + pg)
        return 0;
    return top - min > t->window ? top - t->window : min;
}

/* Raw: the window is the program's own stack, which valgrind must not be told is out of bounds. */
static int wire_set(uintptr_t at, size_t len, bool on)
{
    return vms__os_guard_raw((void *)at, len, vms__g.mode, on);
}

/*
 * The main thread's stack mapping grows only when touched: a window below
 * it needs its lowest page mapped first.  The caller made sure it is
 * within the stack's limit.
 */
static int wire_install(const struct task *t, uintptr_t top)
{
    uintptr_t at = window_bottom(t, top);
    int rc = wire_set(at, top - at, true);

    if (rc == -ENOMEM && t->grows) {
        *(volatile char *)at = 0;
        rc = wire_set(at, top - at, true);
    }
    return rc;
}

static void wire_remove(const struct task *t, uintptr_t top)
{
    uintptr_t at = window_bottom(t, top);

    wire_set(at, top - at, false);
}

/*
 * The end of a move (or of a task's window): the old window is gone,
 * counted before it stops being known (see gone_meanwhile), and the next
 * mover may go.
 */
static void move_done(struct task *t)
{
    atomic_fetch_add_explicit(&windows_gone, 1, memory_order_seq_cst);
    atomic_store_explicit(&t->moving, 0, memory_order_release);
    atomic_store_explicit(&t->mover, 0, memory_order_release);
}

/*
 * Where the next window ends, below `used`.  Down to STEP_FROM deep, right
 * below its page.  Deeper, an eighth of the depth so far lower, in whole
 * pages, so that a stack that goes N bytes deep faults O(log N) times, not
 * once a page (36 MB deep: 9,000 faults became 100).  The frames in between
 * are unwound at the next fault (they are on the stack then, above it),
 * and those below the last one come from the dead-stack scan; where later
 * calls overwrote them there, the chain says it is partial (a recursion
 * whose every return calls something).  Never past the --warn-depth mark
 * before it was passed: that warning comes from a fault.
 */
static uintptr_t next_top(const struct task *t, uintptr_t used)
{
    uintptr_t pg = vms__g.page, top = page_floor(used), depth = t->hi - used;
    uintptr_t gap = depth > STEP_FROM ? (depth >> STEP_SHIFT) & ~(pg - 1) : 0, mark = 0;

    if (opts.warn_depth && !t->depth_warned)
        mark = page_floor(t->hi - (t->hi - t->lo) / 100 * opts.warn_depth);
    if (top - t->lo <= gap + 2 * pg)
        return top;
    if (mark && mark < top && mark > top - gap)
        return mark;
    return top - gap;
}

/*
 * Moves t's window from the one ending at old to below `used` (the lowest
 * byte known touched), at least one page down; none once nothing is left
 * above the stack's bottom page: the real guard below takes over.  One
 * thread at a time moves it (the owner's fault, another thread reading
 * the stack): `moving` keeps the old window known as a tripwire until it
 * is really gone, and a second mover would overwrite it while the first
 * one's old window is still there.  Whoever does not get to move it
 * returns: its access retries, and faults again only in a window that
 * is known.  task_close takes the same flag, so no move outlives the task.
 */
static void wire_move(struct task *t, uintptr_t old, uintptr_t used)
{
    uintptr_t pg = vms__g.page, next = next_top(t, used), now;

    if (next >= old)
        next = old - pg;
    if (!window_bottom(t, next))
        next = 0;
    if (atomic_exchange_explicit(&t->mover, 1, memory_order_acquire))
        return;
    atomic_store_explicit(&t->moving, old, memory_order_seq_cst);
    if (atomic_compare_exchange_strong_explicit(&t->wire, &old, next, memory_order_seq_cst, memory_order_relaxed)) {
        /* Removed first: in mprotect mode, the main stack grows only below an accessible page. */
        wire_remove(t, old);
        if (next && wire_install(t, next)) {
            now = next;
            atomic_compare_exchange_strong_explicit(&t->wire, &now, 0, memory_order_seq_cst, memory_order_relaxed);
            t->lost = true;
        }
    }
    move_done(t);
}

static bool in_window(const struct task *t, uintptr_t top, uintptr_t addr)
{
    return top && addr < top && addr >= window_bottom(t, top);
}

/* ---- recording, in signal context ---- */

/*
 * The chain is kept outermost frame first, so that a deeper chain that
 * shares its callers with the last one only appends: at each fault only
 * the frames below the last chain's are unwound (a few per page), and the
 * rest is taken over once it is shown intact.  That makes a fault cost
 * O(new frames) unwinding plus O(depth) memory reads, not O(depth) steps
 * of the DWARF unwinder.
 */

/* Seqlock writer: the acquire half keeps the chain's stores after the odd count. */
static void write_begin(struct task *t)
{
    atomic_fetch_add_explicit(&t->seq, 1, memory_order_acq_rel);
}

static void write_end(struct task *t)
{
    atomic_fetch_add_explicit(&t->seq, 1, memory_order_release);
}

/*
 * Whether the callers of buf[m] are still on the stack: every return
 * address where it was.  A frame above m that had returned would have
 * taken everything below it with it, so frames rebuilt identically at
 * the same places are the only way to pass, and then the chain is the same.
 */
static bool callers_intact(const struct task *t, uint32_t m)
{
    for (uint32_t j = 0; j < m; j++)
        if (*(const uintptr_t *)(t->buf[j].sp - sizeof(uintptr_t)) != t->buf[j].ip)
            return false;
    return true;
}


/* Unwinding state: the libunwind cursor and the last stack pointer seen. */
struct walk {
    struct vms_unwind u;
    uintptr_t prev, hi;
    bool first;
    bool guessed;                /* the last frame's code has no call-frame information: the next is a guess */
    bool cut;                    /* the chain ended at such a frame, its callers unknown */
    struct cfi_known cfi;
};

/*
 * Whether the cursor's code has call-frame information.  Where it has
 * none (JIT-compiled code, a runtime's hand-written builtins: V8's
 * interpreter is such code inside node's binary), libunwind guesses the
 * caller from the frame pointer or the word on top of the stack.  A guess
 * that lands in code with call-frame information is taken (hand-written
 * assembly that keeps a frame pointer); one that lands in such code again
 * ends the chain: V8's frames make it wrong at every step, hundreds of
 * steps per fault, none matching the last chain.  libunwind's x86-64
 * answers a made-up one-byte procedure there instead of an error.  The
 * lookup costs as much as a step, and a recursion's frames share a return
 * address: the answers are remembered for the walk.
 */
static bool has_cfi(struct walk *w, uintptr_t ip)
{
    unsigned i = (unsigned)((ip ^ ip >> 7) % CFI_KNOWN);
    struct cfi_known *k = &w->cfi;
    unw_proc_info_t pi;
    bool cfi;

    if (k->ip[i] == ip)
        return k->bits >> i & 1;
    cfi = unw_get_proc_info(&w->u.c, &pi) == 0 &&
          !(pi.format == UNW_INFO_FORMAT_DYNAMIC && pi.end_ip == pi.start_ip + 1);
    k->ip[i] = ip;
    k->bits = (k->bits & ~(1u << i)) | (uint32_t)cfi << i;
    return cfi;
}

/*
 * The next frame, outwards; false at the end of the chain.  The outermost
 * frames (_start, clone's child) have call-frame information that says so:
 * a chain that ends after a frame without any ends with callers unknown.
 */
static bool walk_next(struct walk *w, struct vms_trace_frame *f)
{
    unw_word_t ip, sp;
    bool cfi;

    w->cut = w->guessed;
    if (!w->first && unw_step(&w->u.c) <= 0)
        return false;
    if (unw_get_reg(&w->u.c, UNW_REG_IP, &ip) < 0 || unw_get_reg(&w->u.c, UNW_REG_SP, &sp) < 0 || ip == 0)
        return false;
    if (!w->first && (sp <= w->prev || sp > w->hi))
        return false; /* a broken or foreign stack: the chain ends here */
    cfi = has_cfi(w, ip);
    if (!cfi && w->guessed)
        return false;
    w->guessed = !cfi;
    w->cut = false;
    w->first = false;
    w->prev = sp;
    *f = (struct vms_trace_frame){ip, sp};
    return true;
}

static void reverse(struct vms_trace_frame *f, uint32_t n)
{
    for (uint32_t i = 0; i < n / 2; i++) {
        struct vms_trace_frame x = f[i];
        f[i] = f[n - 1 - i];
        f[n - 1 - i] = x;
    }
}

/* The whole chain into buf, whose first k frames are unwound already: innermost first, then turned around. */
static uint32_t record_all(struct task *t, struct walk *w, uint32_t k)
{
    uint32_t n = k;

    while (n < t->cap && walk_next(w, &t->buf[n]))
        n++;
    reverse(t->buf, n);
    return n;
}

/*
 * Unwinds the interrupted context into t->buf: the new deepest chain.
 * Returns the index of its first frame that was not in the last chain.
 * The new frames are unwound into the room after the last chain, as many
 * as there are (a window a quarter of the depth below the last one has
 * thousands of frames above it), until one is the last chain's.
 */
static uint32_t record(struct task *t, ucontext_t *uc)
{
    struct vms_trace_frame *seen = t->buf + t->n;
    struct walk w = {.hi = t->hi, .first = true};
    uint32_t room = (uint32_t)(t->cap - t->n), k = 0, base = 0, n = 0;
    long m = (long)t->n - 1; /* the last chain's frame compared with, from the innermost */
    bool ok_bracket = !vms__unwind_begin();
    bool ok = ok_bracket && vms__unwind_init_cached(&w.u, uc) == 0;

    if (vms__uc_sp(uc) >= t->lo && vms__uc_sp(uc) < t->hi)
        vms__unwind_live(&w.u, vms__uc_sp(uc), t->hi);
    unwinding = true;
    write_begin(t);
    while (ok && k < room && walk_next(&w, &seen[k])) {
        while (m >= 0 && t->buf[m].sp < seen[k].sp)
            m--;
        if (k > 0 && m >= 0 && t->buf[m].sp == seen[k].sp && t->buf[m].ip == seen[k].ip &&
            callers_intact(t, (uint32_t)m)) {
            base = (uint32_t)m + 1; /* buf[0..m] stays; the new frames go below it */
            break;
        }
        k++;
    }
    if (ok && k == room) { /* no room left: the whole chain again, from the start of buf */
        memmove(t->buf, seen, k * sizeof *seen);
        n = record_all(t, &w, k);
    } else {
        reverse(seen, k);
        memmove(t->buf + base, seen, k * sizeof *seen);
        n = base + k;
    }
    if (!base) /* else the outer frames, and where they end, are the last chain's */
        t->cut = w.cut;
    if (n == 0)
        t->buf[n++] = (struct vms_trace_frame){vms__uc_pc(uc), vms__uc_sp(uc)};
    t->n = n;
    t->inner_ret = false;
    t->faults++;
    write_end(t);
    unwinding = false;
    if (ok_bracket)
        vms__unwind_end();
    return base;
}

static uintptr_t function_of(uintptr_t ip)
{
    struct vms_symres s;

    vms__symbols_lookup(ip, &s);
    return s.name ? ip - s.off : ip;
}

/* The warning slot for function fn, claimed now; NULL when fn has one already or all are taken. */
static struct warn_slot *warn_claim(uintptr_t fn)
{
    for (int k = 0; k < WARN_MAX; k++) {
        struct warn_slot *s = &warns[k];
        uintptr_t cur = atomic_load_explicit(&s->fn, memory_order_acquire);
        if (cur == fn)
            return NULL;
        if (cur || !atomic_compare_exchange_strong_explicit(&s->fn, &cur, fn, memory_order_acq_rel,
                                                            memory_order_acquire)) {
            if (cur == fn)
                return NULL;
            continue;
        }
        return s;
    }
    return NULL;
}

/* A frame above --warn-frame: its function's first time gets a slot with the chain from it outwards. */
static void warn_frame(const struct task *t, uint32_t j, size_t size)
{
    struct warn_slot *s = warn_claim(function_of(t->buf[j].ip));

    if (!s)
        return;
    s->w.who = t->who;
    s->w.hi = t->hi;
    s->w.size = size;
    s->w.ret = j + 1 < t->n || t->inner_ret;
    s->w.total = j + 1;
    s->w.n = s->w.total < VMS_TRACE_WARN_CHAIN ? s->w.total : VMS_TRACE_WARN_CHAIN;
    for (uint32_t i = 0; i < s->w.n; i++)
        s->w.f[i] = t->buf[j - i];
    atomic_store_explicit(&s->ready, 1, memory_order_release);
}

/*
 * The frames of a task's final chain (innermost first) that the tripwires
 * never saw: the deepest ones may not have crossed into the window.
 */
static void check_dead_frames(const struct task *t, const struct vms_trace_chain *c)
{
    for (uint32_t i = 0; i + 1 < c->n; i++) {
        size_t size = c->f[i + 1].sp - c->f[i].sp;
        struct warn_slot *s;
        /* Not across frames lost in a partial chain: that is no one frame's size. */
        if (size <= opts.warn_frame || !c->f[i].ip || (c->partial && i + 1 == c->gap) ||
            !(s = warn_claim(function_of(c->f[i].ip - (i > 0)))))
            continue;
        s->w.who = t->who;
        s->w.hi = t->hi;
        s->w.size = size;
        s->w.ret = i > 0;
        s->w.total = c->n - i;
        s->w.n = s->w.total < VMS_TRACE_WARN_CHAIN ? s->w.total : VMS_TRACE_WARN_CHAIN;
        for (uint32_t k = 0; k < s->w.n; k++)
            s->w.f[k] = c->f[i + k];
        atomic_store_explicit(&s->ready, 1, memory_order_release);
    }
}

/*
 * The frames from index `from` inwards: those the last fault added (the
 * others were checked when they were new).  Never the outermost, whose
 * "size" is all that lies above it.
 */
static void check_frames(const struct task *t, uint32_t from)
{
    for (uint32_t j = from ? from : 1; j < t->n; j++) {
        size_t size = t->buf[j - 1].sp - t->buf[j].sp;
        if (size > opts.warn_frame)
            warn_frame(t, j, size);
    }
}

/* "vmstack trace: WARNING: thread 'NAME' (tid N) WHAT\n" (or fiber, id), written from the handler. */
static void warn_line(const struct task *t, struct vms_sbuf *s, const char *what)
{
    bool fiber = t->who.kind == VMS_TASK_FIBER;

    vms__sb_str(s, fiber ? "vmstack trace: WARNING: fiber '" : "vmstack trace: WARNING: thread '");
    vms__sb_str(s, t->who.name);
    vms__sb_str(s, fiber ? "' (id " : "' (tid ");
    vms__sb_dec(s, t->who.id);
    vms__sb_str(s, ") ");
    vms__sb_str(s, what);
}

static void check_depth(struct task *t, uintptr_t used)
{
    uintptr_t depth = t->hi - used, size = t->hi - t->lo;
    char text[256];
    struct vms_sbuf s = {text, sizeof text, 0};

    if (t->depth_warned || depth * 100 < (uintptr_t)opts.warn_depth * size)
        return;
    t->depth_warned = true;
    warn_line(t, &s, "passed ");
    vms__sb_dec(&s, opts.warn_depth);
    vms__sb_str(&s, "% of its stack: ");
    vms__sb_dec(&s, depth);
    vms__sb_str(&s, " of ");
    vms__sb_dec(&s, size);
    vms__sb_str(&s, " bytes deep; its chain is in the report at exit\n");
    vms__report_emit(text, s.len);
}

/*
 * vms__trace_prefault's own frame is none of the program's: the chain
 * starts at its caller.  The pages it touched are the program's to use
 * next (pthread_create, an exec or spawn), so the depth stays within the
 * bytes it touched (VMS_PREFAULT_THREAD, VMS_PREFAULT_SPAWN) and a
 * page of the truth there.
 */
static void drop_prefault(struct task *t)
{
    write_begin(t);
    t->n--;
    t->inner_ret = true;
    write_end(t);
}

/* Our own tripwire: record, warn, move on. */
static void own_fault(struct task *t, uintptr_t wire, uintptr_t addr, ucontext_t *uc)
{
    uintptr_t sp = vms__uc_sp(uc), used = addr < sp ? addr : sp;
    uint32_t fresh = record(t, uc);

    if (t->who.kind == VMS_TASK_THREAD)
        prctl(PR_GET_NAME, t->who.name); /* the name it has now, for the warnings */

    if (t->n > 1 && function_of(t->buf[t->n - 1].ip) == (uintptr_t)vms__trace_prefault)
        drop_prefault(t);
    if (opts.warn_frame)
        check_frames(t, fresh);
    if (opts.warn_depth)
        check_depth(t, used);
    wire_move(t, wire, used);
}

/* The task whose tripwire (or tripwire being removed) holds addr. */
static struct task *wire_owner(uintptr_t addr, uintptr_t *wire)
{
    int n = atomic_load_explicit(&tasks_used, memory_order_acquire);

    for (int i = 0; i < n; i++) {
        struct task *t = &tasks[i];
        if (atomic_load_explicit(&t->state, memory_order_acquire) != LIVE)
            continue;
        *wire = atomic_load_explicit(&t->wire, memory_order_acquire);
        if (in_window(t, *wire, addr) || in_window(t, atomic_load_explicit(&t->moving, memory_order_acquire), addr))
            return t;
    }
    return NULL;
}

bool vms__trace_unwinding(void)
{
    return unwinding;
}

/* Whether addr is in a tripwire window (or one being removed): a mapping of ours, not the program's. */
bool vms__trace_holds(uintptr_t addr)
{
    uintptr_t wire;

    return wire_owner(addr, &wire) != NULL;
}

/*
 * A signal whose frame would have overlapped the tripwire: the kernel could
 * not deliver it and sent SIGSEGV (SI_KERNEL, no address) instead.  The
 * signal is gone; the tripwire moves clear so the next one fits.
 */
static bool signal_blocked_by_wire(struct task *t, ucontext_t *uc)
{
    uintptr_t sp = vms__uc_sp(uc);
    uintptr_t wire = atomic_load_explicit(&t->wire, memory_order_acquire);
    char text[256];
    struct vms_sbuf s = {text, sizeof text, 0};

    if (!wire || sp < window_bottom(t, wire) || sp > wire + SIGFRAME_ROOM)
        return false;
    t->signal_lost = true;
    warn_line(t, &s, "could not take a signal with its stack next to the tripwire: that signal is lost\n");
    vms__report_emit(text, s.len);
    wire_move(t, wire, sp > SIGFRAME_ROOM ? sp - SIGFRAME_ROOM : 0);
    return true;
}

/*
 * Whether a fault in no window known now may have been in one that was
 * taken away since: its task ended (or moved it) between the access and
 * this look, as happens to a thread whose stack another one reads (the
 * usage table at exit).  Passed on, it would kill the process, or make the
 * next tripwire of any thread fatal: it is retried instead.  A window is
 * known from before it is installed until after the count went up for
 * it, so the same fault again with the count unchanged since the last
 * look was in no window: a real fault, passed on after one retry.
 */
static bool gone_meanwhile(uintptr_t ip, uintptr_t addr)
{
    unsigned long gone = atomic_load_explicit(&windows_gone, memory_order_seq_cst);
    bool again = unknown.ip == ip && unknown.addr == addr && unknown.gone == gone;

    unknown.ip = ip;
    unknown.addr = addr;
    unknown.gone = gone;
    return !again;
}

bool vms__trace_fault(const siginfo_t *si, ucontext_t *uc)
{
    uintptr_t addr = (uintptr_t)si->si_addr, wire, sp;
    struct task *t = self;

    if (si->si_signo != SIGSEGV)
        return false;
    if (si->si_code == SI_KERNEL)
        return t && signal_blocked_by_wire(t, uc);
    if (si->si_code <= 0)
        return false;
    if (t) {
        wire = atomic_load_explicit(&t->wire, memory_order_acquire);
        if (in_window(t, wire, addr)) {
            own_fault(t, wire, addr, uc);
            return true;
        }
    }
    /*
     * A fiber's tripwire, hit by the fiber (its stack pointer on that
     * stack); or another task's, hit through a pointer into its stack, or
     * one being moved: then it just moves.
     */
    if (!(t = wire_owner(addr, &wire)))
        return gone_meanwhile(vms__uc_pc(uc), addr);
    if (!in_window(t, wire, addr))
        return true;
    sp = vms__uc_sp(uc);
    if (sp >= t->lo && sp < t->hi)
        own_fault(t, wire, addr, uc);
    else
        wire_move(t, wire, addr);
    return true;
}

/* ---- tasks ---- */

/*
 * Free in a child after fork, whatever another thread was doing
 * (core/fork.c): a thread of the child that ends keeps its chain, and
 * 'vmstack trace' prints the child's table at its exit.
 */
static void results_take(void)
{
    pthread_mutex_lock(&results_lock);
}

static void results_release(void)
{
    pthread_mutex_unlock(&results_lock);
}

/* The threads that were reading or moving a task's window are not in the child: no close may wait for them. */
static void results_child(void)
{
    int used = atomic_load_explicit(&tasks_used, memory_order_relaxed);

    for (int i = 0; i < used; i++) {
        atomic_store_explicit(&tasks[i].readers, 0, memory_order_relaxed);
        atomic_store_explicit(&tasks[i].mover, 0, memory_order_relaxed);
    }
    pthread_mutex_unlock(&results_lock);
}

__attribute__((constructor)) static void locks_at_fork(void)
{
    vms__fork_mutex(VMS_FORK_TRACE_CONFIG, &config_lock);
    vms__fork_hook(VMS_FORK_TRACE_RESULTS, results_take, results_release, results_child);
}

/*
 * The pid of the process ptracing this one (TracerPid in /proc/self/status),
 * 0 when none.  A debugger stops at every SIGSEGV, a tripwire's too (gdb in
 * the loader, before main), and strace shows each one: a ptraced process
 * gets no tripwires.  Read at start, which an exec is for the new program.
 */
static int tracer_pid(void)
{
    char buf[2048], *p;
    ssize_t n = -1;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        n = read(fd, buf, sizeof buf - 1);
        close(fd);
    }
    if (n <= 0)
        return 0;
    buf[n] = 0;
    p = strstr(buf, "\nTracerPid:");
    return p ? atoi(p + sizeof "\nTracerPid:" - 1) : 0;
}

int vms__trace_tracer(void)
{
    return tracer;
}

bool vms__trace_on_valgrind(void)
{
    return on_valgrind;
}

int vms__trace_configure(const struct vms_trace_opts *o)
{
    int max = o->max_tasks ? (int)o->max_tasks : TASKS_DEFAULT;
    size_t bytes = (size_t)max * sizeof *tasks + WARN_MAX * sizeof *warns;
    char *p;
    int rc;

    if (atomic_load_explicit(&vms__trace_armed, memory_order_acquire))
        return 0;
    if ((rc = vms__ensure_init()))
        return rc;
    pthread_mutex_lock(&config_lock);
    if (atomic_load_explicit(&vms__trace_armed, memory_order_relaxed))
        rc = 0;
    else if (vms__g.mode != VMS_GUARD_MADVISE && vms__g.mode != VMS_GUARD_MPROTECT)
        rc = vms__fail(ENOTSUP, "tracing needs guard pages: VMSTACK_GUARD=none turns them off");
    else if (!(p = vms__os_alloc(bytes)))
        rc = vms__fail(ENOMEM, "no memory for the tracer's task table");
    /* The handler must be there before the first tripwire. */
    else if (!(rc = vms__fault_thread_init())) {
        tasks = (struct task *)p;
        warns = (struct warn_slot *)(p + (size_t)max * sizeof *tasks);
        tasks_max = max;
        opts = *o;
        tracer = tracer_pid();
        on_valgrind = vms__san_on_valgrind();
        /* Release, as the two below: a thread that finds a hook finds the tables it uses. */
        atomic_store_explicit(&vms__fiber_start_hook, vms__trace_fiber_start, memory_order_release);
        atomic_store_explicit(&vms__fiber_end_hook, vms__trace_fiber_end, memory_order_release);
        atomic_store_explicit(&vms__fault_tripwire_hook, vms__trace_fault, memory_order_release);
        atomic_store_explicit(&vms__trace_armed, 1, memory_order_release);
    } else {
        munmap(p, bytes);
    }
    pthread_mutex_unlock(&config_lock);
    return rc;
}

const struct vms_trace_opts *vms__trace_options(void)
{
    return &opts;
}

static struct task *claim(void)
{
    for (int i = 0; i < tasks_max; i++) {
        int expect = FREE, u;
        if (atomic_load_explicit(&tasks[i].state, memory_order_relaxed) != FREE ||
            !atomic_compare_exchange_strong_explicit(&tasks[i].state, &expect, BUSY, memory_order_acquire,
                                                     memory_order_relaxed))
            continue;
        u = atomic_load_explicit(&tasks_used, memory_order_relaxed);
        while (u < i + 1 && !atomic_compare_exchange_weak_explicit(&tasks_used, &u, i + 1, memory_order_relaxed,
                                                                   memory_order_relaxed))
            ;
        return &tasks[i];
    }
    return NULL;
}

/* A synchronous SIGSEGV while blocked is fatal: a traced thread never blocks it. */
static void unblock_segv(void)
{
    sigset_t s;

    sigemptyset(&s);
    sigaddset(&s, SIGSEGV);
    pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

/* The window for a stack with guard bytes below it: a page more, so that the guard's worth of frame fits below the page it starts in. */
static size_t window_for(size_t guard)
{
    return (guard > WINDOW_MIN ? guard : WINDOW_MIN) + vms__g.page;
}

/* A task record with its chain buffer, not yet live, in *out; 0 or a negative errno. */
static int task_open(char *lo, char *hi, bool grows, size_t guard, const struct vms_task *who, struct task **out)
{
    struct task *t, fresh;
    size_t frames;
    void *buf;

    if (!(t = claim())) {
        atomic_fetch_add_explicit(&untraced, 1, memory_order_relaxed);
        return vms__fail(ENOSPC, "%d traced tasks at once: the rest run untraced", tasks_max);
    }
    /* Every frame holds at least its return address. */
    frames = (size_t)(hi - lo) / sizeof(void *);
    if (frames > MAX_FRAMES)
        frames = MAX_FRAMES;
    if (!(buf = vms__os_alloc(frames * sizeof *t->buf))) {
        atomic_store_explicit(&t->state, FREE, memory_order_release);
        return vms__fail(ENOMEM, "no memory for a traced task's chain buffer");
    }
    fresh = (struct task){.lo = (uintptr_t)lo, .hi = (uintptr_t)hi, .window = window_for(guard), .grows = grows,
                          .who = *who, .buf = buf, .cap = frames};
    /*
     * Everything but the state, which stays BUSY until task_start: a store
     * of the whole record may zero it first (FREE), and a record seen FREE
     * for an instant is claimed by another thread starting, which then
     * shares it with this one.
     */
    memcpy((char *)t + TASK_BODY, (char *)&fresh + TASK_BODY, sizeof *t - TASK_BODY);
    *out = t;
    return 0;
}

/*
 * Live, its unused stack below `floor` zeroed (the dead-stack scan at its
 * end counts every non-zero word as the task's), with its window ending
 * at the page `top`.
 */
static void task_start(struct task *t, uintptr_t floor, uintptr_t top)
{
    t->floor = floor;
    vms__dead_zero(t->lo, floor);
    atomic_store_explicit(&t->state, LIVE, memory_order_release);
    /* Known before it is there: another thread may read this stack (a table, a collector) and fault on it. */
    if (!tracer && !on_valgrind && window_bottom(t, top)) {
        atomic_store_explicit(&t->wire, top, memory_order_seq_cst);
        if (wire_install(t, top))
            atomic_store_explicit(&t->wire, 0, memory_order_release);
    }
}

/* On the altstack: nothing of ours is below sp on the thread's stack. */
static void begin_on_altstack(void *p, uintptr_t sp)
{
    task_start(p, sp, page_floor(sp));
}

int vms__trace_begin(char *lo, char *hi, bool grows, size_t guard, const struct vms_task *who)
{
    struct task *t;
    int rc;

    if (!atomic_load_explicit(&vms__trace_armed, memory_order_acquire) || self)
        return 0;
    if ((rc = task_open(lo, hi, grows, guard, who, &t)))
        return rc;
    unblock_segv();
    self = t;
    vms__trace_on_altstack(begin_on_altstack, t);
    return 0;
}

/*
 * A fiber's stack, before it first runs: its first frames are in the top
 * page, the window goes below the next one.  The fault handler finds a
 * fiber's task by the window's address, not through `self`, so no switch
 * has to tell it which fiber runs.
 */
void vms__trace_fiber_start(const struct vms_fiber_desc *f)
{
    size_t guard = f->owns_stack ? f->stack.guard_size : vms__g.cfg.guard_size;
    struct task *t;

    if (task_open(f->base, f->base + f->size, false, guard, f->task, &t) == 0)
        task_start(t, (uintptr_t)f->top, page_floor((uintptr_t)f->top) - vms__g.page);
}

/* Copies t's chain, running (seqlock: retried while the handler writes it); false when out of memory. */
static bool snapshot(struct task *t, struct vms_trace_chain *c)
{
    for (;;) {
        unsigned s = atomic_load_explicit(&t->seq, memory_order_acquire);
        uint32_t n = t->n;
        struct vms_trace_frame *f = malloc((n ? n : 1) * sizeof *f);
        if (!f)
            return false;
        for (uint32_t i = 0; i < n; i++) /* innermost first, as printed */
            f[i] = t->buf[n - 1 - i];
        *c = (struct vms_trace_chain){.who = t->who, .lo = t->lo, .hi = t->hi, .n = n, .f = f,
                                      .depth = n ? t->hi - f[0].sp : 0, .faults = t->faults,
                                      .count = 1, .running = true, .main = t->grows, .ret = t->inner_ret,
                                      .cut = t->cut,
                                      .depth_warned = t->depth_warned, .lost = t->lost,
                                      .signal_lost = t->signal_lost};
        /*
         * The copy's reads must come before the second look at seq: a
         * release read-modify-write orders them, where a fence would do too
         * but ThreadSanitizer does not take fences.
         */
        if (!(s & 1) && s == atomic_fetch_add_explicit(&t->seq, 0, memory_order_acq_rel))
            return true;
        free(f);
        sched_yield();
    }
}

/*
 * A copy of a live task's chain, from another thread: the task may end
 * meanwhile, and task_close waits for readers before it unmaps the chain.
 */
static bool read_live(struct task *t, struct vms_trace_chain *c)
{
    bool ok = false;

    if (atomic_load_explicit(&t->state, memory_order_acquire) != LIVE || !t->n)
        return false;
    atomic_fetch_add_explicit(&t->readers, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&t->state, memory_order_seq_cst) == LIVE && t->n)
        ok = snapshot(t, c);
    atomic_fetch_sub_explicit(&t->readers, 1, memory_order_release);
    return ok;
}

static uintptr_t chain_depth(const struct vms_trace_chain *c)
{
    return c->depth;
}

/* Past RESULTS_MAX: the deepest chain per start routine.  True if c was consumed. */
static bool fold(struct vms_trace_chain *c)
{
    if (nresults < RESULTS_MAX)
        return false;
    for (size_t i = 0; i < nresults; i++) {
        struct vms_trace_chain *r = &results[i];
        if (r->who.start != c->who.start || r->main)
            continue;
        c->count += r->count;
        if (chain_depth(c) > chain_depth(r)) {
            free(r->f);
            *r = *c;
        } else {
            r->count = c->count;
            free(c->f);
        }
        return true;
    }
    return false;
}

static void keep_result(struct vms_trace_chain *c)
{
    pthread_mutex_lock(&results_lock);
    if (!fold(c)) {
        if (nresults == results_cap) {
            size_t cap = results_cap ? 2 * results_cap : 64;
            struct vms_trace_chain *p = realloc(results, cap * sizeof *p);
            if (p) {
                results = p;
                results_cap = cap;
            }
        }
        if (nresults < results_cap)
            results[nresults++] = *c;
        else
            free(c->f);
    }
    pthread_mutex_unlock(&results_lock);
}

/*
 * The task's final chain from its dead stack, below `clobbered` (our own
 * exit code may have written above it): false when it never wrote below
 * where its tracing started (the words there may be those of our own
 * start), or when out of memory.
 */
static bool dead_result(struct task *t, uintptr_t clobbered, struct vms_trace_chain *c)
{
    struct vms_dead_args a = {.lo = t->lo, .hi = t->hi, .clobbered = clobbered, .rec = t->buf, .nrec = t->n,
                              .rec_cut = t->cut};
    size_t cap;

    if (!(a.lowest = vms__dead_lowest(t->lo, clobbered)) || a.lowest >= t->floor)
        return false;
    /* Every dead frame holds a return address at least, the recorded ones come on top. */
    cap = (t->hi - a.lowest) / sizeof(uintptr_t) + t->n + 2;
    if (cap > MAX_FRAMES)
        cap = MAX_FRAMES;
    *c = (struct vms_trace_chain){.who = t->who, .lo = t->lo, .hi = t->hi, .depth = t->hi - a.lowest,
                                  .faults = t->faults, .count = 1, .main = t->grows, .exact = true,
                                  .depth_warned = t->depth_warned, .lost = t->lost, .signal_lost = t->signal_lost};
    if (!(c->f = malloc(cap * sizeof *c->f)))
        return false;
    vms__dead_chain(&a, c, (uint32_t)cap);
    c->depth = t->hi - c->f[0].sp; /* the deepest function's whole frame (see deadstack.c) */
    return true;
}

/*
 * No tripwire may outlive its task: the stack goes back to a cache.  The
 * chain goes to the results.  sp: the lowest address our code wrote on
 * the task's stack since it stopped running its own.
 */
static void task_close(struct task *t, uintptr_t sp)
{
    struct vms_trace_chain c;
    uintptr_t wire;

    /*
     * As a mover: the window stays a known tripwire (moving) until it is
     * gone, for another thread reading this stack meanwhile; a move under
     * way is waited for, and none comes after (the stack is given back).
     */
    while (atomic_exchange_explicit(&t->mover, 1, memory_order_acquire))
        sched_yield();
    wire = atomic_load_explicit(&t->wire, memory_order_acquire);
    atomic_store_explicit(&t->moving, wire, memory_order_seq_cst);
    atomic_store_explicit(&t->wire, 0, memory_order_seq_cst);
    if (wire)
        wire_remove(t, wire);
    move_done(t);
    if (dead_result(t, sp, &c)) {
        if (opts.warn_frame)
            check_dead_frames(t, &c);
        keep_result(&c);
    }
    else
        atomic_fetch_add_explicit(&quiet_ended, 1, memory_order_relaxed);
    /* No new reader once BUSY; sequentially consistent with read_live's pair, so neither misses the other. */
    atomic_store_explicit(&t->state, BUSY, memory_order_seq_cst);
    while (atomic_load_explicit(&t->readers, memory_order_seq_cst))
        sched_yield();
    munmap(t->buf, t->cap * sizeof *t->buf);
    atomic_store_explicit(&t->state, FREE, memory_order_release);
}

static void end_on_altstack(void *p, uintptr_t sp)
{
    struct task *t = p;

    if (t->who.kind == VMS_TASK_THREAD)
        prctl(PR_GET_NAME, t->who.name);
    task_close(t, sp);
}

void vms__trace_end(void)
{
    struct task *t = self;

    if (!t)
        return;
    self = NULL;
    vms__trace_on_altstack(end_on_altstack, t);
}

/* On the fiber's own stack, as it ends (returned or killed). */
void vms__trace_fiber_end(const struct vms_fiber_desc *f)
{
    int used = atomic_load_explicit(&tasks_used, memory_order_acquire);

    for (int i = 0; i < used; i++)
        if (atomic_load_explicit(&tasks[i].state, memory_order_acquire) == LIVE &&
            tasks[i].lo == (uintptr_t)f->base && tasks[i].who.kind == VMS_TASK_FIBER) {
            vms__trace_on_altstack(end_on_altstack, &tasks[i]);
            return;
        }
}

/*
 * Reads, never writes: the pages stay zero, so the dead-stack scan does not
 * count them as the program's.  Reading raw stack below our frame: not
 * instrumented.  On a stack that is not the thread's own (a fiber's), whose
 * bottom is not known here, no further than VMS_PREFAULT_THREAD.
 */
__attribute__((noinline, no_sanitize_address)) void vms__trace_prefault(size_t bytes)
{
    const volatile char *frame = __builtin_frame_address(0);
    uintptr_t at = (uintptr_t)frame, floor;
    struct task *t = self;

    if (t && at > t->lo + vms__g.page && at <= t->hi)
        floor = at - (t->lo + vms__g.page) < bytes ? t->lo + vms__g.page : at - bytes;
    else
        floor = at - (bytes < VMS_PREFAULT_THREAD ? bytes : VMS_PREFAULT_THREAD);
    /* Downwards, a line at a time: never past the window without touching it. */
    vms__san_quiet_begin();
    for (size_t i = 64; at - i >= floor; i += 64)
        (void)frame[-(ptrdiff_t)i];
    vms__san_quiet_end();
}

/* ---- results ---- */

static int deepest_first(const void *a, const void *b)
{
    uintptr_t x = chain_depth(a), y = chain_depth(b);

    return (x < y) - (x > y);
}

unsigned long vms__trace_untraced(int *limit)
{
    *limit = tasks_max;
    return atomic_load_explicit(&untraced, memory_order_relaxed);
}

unsigned long vms__trace_quiet(void)
{
    int used = tasks ? atomic_load_explicit(&tasks_used, memory_order_acquire) : 0;
    unsigned long n = atomic_load_explicit(&quiet_ended, memory_order_relaxed);

    for (int i = 0; i < used; i++)
        if (atomic_load_explicit(&tasks[i].state, memory_order_acquire) == LIVE && !tasks[i].n)
            n++;
    return n;
}

/*
 * The code of libvmstack-preload.so, when the tracer runs in it: its frames
 * in a chain (the thread entry between start_thread and the start
 * routine, the pthread_create interposer) are none of the program's.  In
 * a program linked with libvmstack.a the library's code is the program's.
 */
static uintptr_t own_lo, own_hi;

static int find_own(struct dl_phdr_info *info, size_t size, void *base)
{
    (void)size;
    if (info->dlpi_addr != (uintptr_t)base || !info->dlpi_name[0])
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) {
            own_lo = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
            own_hi = own_lo + info->dlpi_phdr[i].p_memsz;
        }
    return 1;
}

/* Whether the tracer runs in libvmstack-preload.so (own_lo, own_hi set); outside signal context. */
static bool own_code(void)
{
    if (!own_hi && vms__modules_begin() == 0) {
        Dl_info info;
        if (dladdr((void *)own_code, &info))
            dl_iterate_phdr(find_own, info.dli_fbase);
        vms__unwind_end();
    }
    return own_hi != 0;
}

static bool is_own(uintptr_t ip)
{
    return ip >= own_lo && ip < own_hi;
}

/* Drops our own frames from c; the frame below each grows by its size, so depths stay. */
static void drop_own(struct vms_trace_chain *c)
{
    uint32_t k = 0, gap = c->gap;

    for (uint32_t i = 0; i < c->n; i++) {
        if (i > 0 && is_own(c->f[i].ip)) {
            gap -= c->partial && i < c->gap;
            continue;
        }
        c->f[k++] = c->f[i];
    }
    c->n = k;
    c->gap = gap;
}

size_t vms__trace_collect(struct vms_trace_chain **out)
{
    int used = tasks ? atomic_load_explicit(&tasks_used, memory_order_acquire) : 0;
    struct vms_trace_chain *c;
    size_t n = 0;

    pthread_mutex_lock(&results_lock);
    if (!(c = malloc((nresults + (size_t)used + 1) * sizeof *c))) {
        pthread_mutex_unlock(&results_lock);
        *out = NULL;
        return 0;
    }
    for (size_t i = 0; i < nresults; i++) {
        c[n] = results[i];
        if ((c[n].f = malloc((c[n].n ? c[n].n : 1) * sizeof *c[n].f))) {
            memcpy(c[n].f, results[i].f, c[n].n * sizeof *c[n].f);
            n++;
        }
    }
    pthread_mutex_unlock(&results_lock);
    for (int i = 0; i < used; i++) {
        struct task *t = &tasks[i];
        if (read_live(t, &c[n]))
            n++;
    }
    for (size_t i = 0; own_code() && i < n; i++)
        drop_own(&c[i]);
    qsort(c, n, sizeof *c, deepest_first);
    *out = c;
    return n;
}

void vms__trace_free(struct vms_trace_chain *c, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(c[i].f);
    free(c);
}

size_t vms__trace_warnings(struct vms_trace_warn **out)
{
    size_t n = 0;

    *out = NULL;
    if (!warns || !(*out = malloc(WARN_MAX * sizeof **out)))
        return 0;
    for (int k = 0; k < WARN_MAX; k++)
        if (atomic_load_explicit(&warns[k].ready, memory_order_acquire)) {
            struct vms_trace_warn *w = &(*out)[n++];
            uint32_t kept = 0;
            *w = warns[k].w;
            for (uint32_t i = 0; i < w->n; i++)
                if (i == 0 || !own_code() || !is_own(w->f[i].ip))
                    w->f[kept++] = w->f[i];
            w->total -= w->n - kept;
            w->n = kept;
        }
    return n;
}

/* ---- the API, for fibers ---- */

int vms_trace_enable(size_t warn_frame, unsigned warn_depth)
{
    struct vms_trace_opts o = {.warn_frame = warn_frame, .warn_depth = warn_depth};
    const char *v = secure_getenv("VMSTACK_TRACE_MAX_TASKS");

    if (v)
        o.max_tasks = (unsigned)strtoul(v, NULL, 10);
    if (warn_depth > 100)
        return vms__fail(EINVAL, "vms_trace_enable: warn_depth %u: a percentage is at most 100", warn_depth);
    return vms__trace_configure(&o);
}
