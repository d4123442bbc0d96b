/* SPDX-License-Identifier: MIT */
/*
 * The overflow report, after the kernel's oops: written from the signal
 * handler, so only async-signal-safe calls (write, prctl, gettid, sched_yield,
 * libunwind's local unwinding) and no malloc, stdio or locks.  Each line
 * goes out as soon as it is complete (a report cut short by a fault while
 * unwinding still says what it had found), while a spin flag keeps other
 * reports out, so two overflows at once give two whole reports.  The text
 * is also kept, up to the buffer's size, for a vms_set_report_callback
 * callback (which gets it whole, at the end) and for the policy callback.
 *
 * Backtrace: libunwind, local unwinding, started from the signal's ucontext
 * (unw_init_local2 with UNW_INIT_SIGNAL_FRAME).  libunwind documents local
 * unwinding as signal-safe, and it follows the call-frame information, so it
 * walks libc and -O2 code without frame pointers, which a frame-pointer walk
 * cannot.  libgcc's _Unwind_Backtrace takes locks and allocates, and
 * backtrace(3) loads libgcc on first use.  Symbols come from the snapshot
 * (symbols.c).  The walk stops when a frame's stack pointer stops growing or
 * leaves the stack, so a corrupt stack ends the trace rather than the report.
 */
#include "fault/fault.h"
#include "core/demangle.h"

#include <errno.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>


#define HEAD_RUNS 24       /* runs of frames printed from the top of the trace */
#define TAIL_RUNS 8        /* and from its bottom */
#define MAX_FRAMES 1000000 /* a walk longer than this is a broken stack */

/* ---- text ---- */

/* The report this thread is writing, when its lines stream out (vms__report_begin). */
static TLS_IE struct vms_sbuf *streaming;
static TLS_IE size_t sent;      /* bytes of streaming->p already written out */
static TLS_IE bool owner;       /* this thread holds the writer flag */
static TLS_IE bool demangling;  /* the interrupted code holds no lock the demangler's malloc takes */

static void sink_write(const char *p, size_t len);

/* What b holds and has not gone out yet. */
static void flush(struct vms_sbuf *b)
{
    if (b->len > sent)
        sink_write(b->p + sent, b->len - sent);
    sent = b->len;
}

static void put(struct vms_sbuf *b, const char *s, size_t n)
{
    bool stream = b == streaming;

    for (size_t i = 0; i < n; i++) {
        if (b->len == b->cap) {
            if (stream) { /* full: the rest goes straight out */
                flush(b);
                sink_write(s + i, n - i);
            }
            return;
        }
        b->p[b->len++] = s[i];
        if (s[i] == '\n' && stream)
            flush(b);
    }
}

void vms__sb_str(struct vms_sbuf *b, const char *s)
{
    size_t n = 0;

    while (s[n])
        n++;
    put(b, s, n);
}

void vms__sb_hex(struct vms_sbuf *b, uint64_t v)
{
    char t[18];
    int i = sizeof t;

    do {
        t[--i] = "0123456789abcdef"[v & 15];
        v >>= 4;
    } while (v);
    t[--i] = 'x';
    t[--i] = '0';
    put(b, t + i, sizeof t - (size_t)i);
}

void vms__sb_dec(struct vms_sbuf *b, uint64_t v)
{
    char t[20];
    int i = sizeof t;

    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    put(b, t + i, sizeof t - (size_t)i);
}

/* A name from a task record, which need not be terminated. */
void vms__sb_name(struct vms_sbuf *b, const char *name, size_t max)
{
    size_t n = 0;

    while (n < max && name[n])
        n++;
    put(b, name, n);
}

/*
 * "function+0x1b/0x40 [module]", the kernel's %pS; ret: addr is a return
 * address, looked up at addr - 1 (the call), as %pB does: a call at the
 * very end of a function (to one that does not return) is not named after
 * the next function.
 */
static void put_symbol(struct vms_sbuf *b, uintptr_t addr, bool ret)
{
    struct vms_symres s;
    char cxx[256];

    vms__symbols_lookup(addr - ret, &s);
    if (s.name) {
        vms__sb_str(b, demangling ? vms__demangle_loaded(s.name, cxx, sizeof cxx)
                                  : vms__demangle_rust(s.name, cxx, sizeof cxx));
        vms__sb_str(b, "+");
        vms__sb_hex(b, s.off + ret);
        vms__sb_str(b, "/");
        vms__sb_hex(b, s.size);
    } else {
        vms__sb_str(b, "??");
    }
    if (s.module) {
        vms__sb_str(b, " [");
        vms__sb_str(b, s.module);
        if (!s.name) {
            vms__sb_str(b, "+");
            vms__sb_hex(b, s.modoff + ret);
        }
        vms__sb_str(b, "]");
    }
}

/* ---- the task ---- */

static void put_this_thread(struct vms_sbuf *b)
{
    char name[17] = {0};

    prctl(PR_GET_NAME, name);
    vms__sb_str(b, "thread '");
    vms__sb_name(b, name, sizeof name - 1);
    vms__sb_str(b, "' (tid ");
    vms__sb_dec(b, (uint64_t)gettid());
    vms__sb_str(b, ")");
}

/*
 * A thread of 'vmstack run' (owner set) is named as the kernel names it:
 * it may have renamed itself with prctl (Rust's std does), which its task
 * record, copied from its creator, does not follow.  Others by their
 * record, whose name was given to vmstack and may be longer.
 */
static void put_thread_name(struct vms_sbuf *b, const struct vms_task *t, bool here)
{
    char name[17] = {0};

    if (here && t->owner && prctl(PR_GET_NAME, name) == 0)
        vms__sb_name(b, name, sizeof name - 1);
    else
        vms__sb_name(b, t->name, sizeof t->name);
}

/*
 * "fiber 'w' (id 3) on thread 'main' (tid 7)", "thread 'w' (tid 8)", ...
 * here: the task runs on this thread (a fiber's thread is named only then).
 */
static void put_task(struct vms_sbuf *b, const struct vms_task *t, bool here)
{
    switch (t->kind) {
    case VMS_TASK_FIBER:
        vms__sb_str(b, "fiber '");
        vms__sb_name(b, t->name, sizeof t->name);
        vms__sb_str(b, "' (id ");
        vms__sb_dec(b, t->id);
        vms__sb_str(b, ")");
        if (here) {
            vms__sb_str(b, " on ");
            put_this_thread(b);
        }
        break;
    case VMS_TASK_THREAD:
        vms__sb_str(b, "thread '");
        put_thread_name(b, t, here);
        /* A thread's tid is looked up only on the thread itself (fault.c): unknown from another one. */
        if (t->id) {
            vms__sb_str(b, "' (tid ");
            vms__sb_dec(b, t->id);
            vms__sb_str(b, ")");
        } else {
            vms__sb_str(b, "' (tid unknown)");
        }
        break;
    case VMS_TASK_STACK:
        vms__sb_str(b, "stack '");
        vms__sb_name(b, t->name, sizeof t->name);
        vms__sb_str(b, "'");
        if (here) {
            vms__sb_str(b, " on ");
            put_this_thread(b);
        }
        break;
    case VMS_TASK_ALTSTACK:
        vms__sb_str(b, "the alternate signal stack of tid ");
        vms__sb_dec(b, t->id);
        break;
    default:
        vms__sb_str(b, "a stack without a task");
        if (here) {
            vms__sb_str(b, ", on ");
            put_this_thread(b);
        }
        break;
    }
    if (t->start) {
        vms__sb_str(b, ", start routine ");
        put_symbol(b, (uintptr_t)t->start, false);
    }
}

/* ---- the call trace ---- */

/* Consecutive frames at the same address, as deep recursion makes them. */
struct run {
    uintptr_t ip;
    uint64_t n;
    bool ret;          /* ip is a return address (every frame but the interrupted one) */
};

/* " file:line" of the call (the instruction, for the interrupted frame) where the module has a line table. */
static void put_line(struct vms_sbuf *b, uintptr_t addr, bool ret)
{
    const char *file;
    unsigned line;

    if (!vms__symbols_line(addr - ret, &file, &line))
        return;
    vms__sb_str(b, " ");
    vms__sb_str(b, file);
    vms__sb_str(b, ":");
    vms__sb_dec(b, line);
}

static void put_run(struct vms_sbuf *b, const struct run *r)
{
    vms__sb_str(b, "vmstack:  [<");
    vms__sb_hex(b, r->ip);
    vms__sb_str(b, ">] ");
    put_symbol(b, r->ip, r->ret);
    put_line(b, r->ip, r->ret);
    vms__sb_str(b, "\n");
    if (r->n > 1) {
        vms__sb_str(b, "vmstack:  ... ");
        vms__sb_dec(b, r->n - 1);
        vms__sb_str(b, r->n == 2 ? " more frame of " : " more frames of ");
        put_symbol(b, r->ip, r->ret);
        vms__sb_str(b, "\n");
    }
}

/* Collects runs: the first HEAD_RUNS printed at once, the last TAIL_RUNS kept in a ring. */
struct trace {
    struct vms_sbuf *b;
    unsigned runs;
    struct run cur;
    struct run tail[TAIL_RUNS];
    uint64_t omitted; /* frames in runs between head and tail */
};

static void end_run(struct trace *t)
{
    if (t->runs < HEAD_RUNS) {
        put_run(t->b, &t->cur);
    } else {
        struct run *slot = &t->tail[(t->runs - HEAD_RUNS) % TAIL_RUNS];
        if (t->runs >= HEAD_RUNS + TAIL_RUNS)
            t->omitted += slot->n;
        *slot = t->cur;
    }
    t->runs++;
}

static void add_frame(struct trace *t, uintptr_t ip, bool ret)
{
    if (t->cur.n && t->cur.ip == ip && t->cur.ret == ret) {
        t->cur.n++;
        return;
    }
    if (t->cur.n)
        end_run(t);
    t->cur.ip = ip;
    t->cur.ret = ret;
    t->cur.n = 1;
}

static void end_trace(struct trace *t)
{
    unsigned first, n;

    if (t->cur.n)
        end_run(t);
    if (t->runs <= HEAD_RUNS)
        return;
    n = t->runs - HEAD_RUNS < TAIL_RUNS ? t->runs - HEAD_RUNS : TAIL_RUNS;
    if (t->omitted) {
        vms__sb_str(t->b, "vmstack:  ... ");
        vms__sb_dec(t->b, t->omitted);
        vms__sb_str(t->b, " frames not shown ...\n");
    }
    first = t->runs - n;
    for (unsigned i = 0; i < n; i++)
        put_run(t->b, &t->tail[(first + i - HEAD_RUNS) % TAIL_RUNS]);
}

/* The top of the walk: the stack's end when we know the stack. */
static uintptr_t walk_limit(const struct vms_fault *f)
{
    return f->cls == VMS_FAULT_OVERFLOW ? f->stack.hi : UINTPTR_MAX;
}

static void walk(struct trace *t, const struct vms_fault *f)
{
    struct vms_unwind u;
    unw_cursor_t *c = &u.c;
    uintptr_t limit = walk_limit(f);
    unw_word_t ip, sp, prev_sp = 0;

    if (vms__unwind_init(&u, f->uc) < 0) {
        add_frame(t, f->ip, false);
        return;
    }
    for (long i = 0; i < MAX_FRAMES; i++) {
        if (unw_get_reg(c, UNW_REG_IP, &ip) < 0 || unw_get_reg(c, UNW_REG_SP, &sp) < 0 || ip == 0)
            break;
        if (i > 0 && (!vms__unwind_outward(sp, prev_sp, i) || sp > limit || ip == f->stack.task.outermost))
            break;
        add_frame(t, ip, i > 0);
        prev_sp = sp;
        if (unw_step(c) <= 0)
            break;
    }
}

static void put_trace(struct vms_sbuf *b, const struct vms_fault *f)
{
    /* In memory (walk gets its address): what it holds survives a jump back from a nested fault. */
    struct trace t = {.b = b};
    sigjmp_buf env;
    const char *why;

    vms__sb_str(b, "vmstack: Call Trace:\n");
    if ((why = vms__unwind_begin_waiting())) {
        add_frame(&t, f->ip, false);
        end_trace(&t);
        vms__sb_str(b, "vmstack:  (no unwinding: ");
        vms__sb_str(b, why);
        vms__sb_str(b, ")\n");
        return;
    }
    if (sigsetjmp(env, 1) == 0) {
        vms__fault_nested_arm(&env);
        walk(&t, f);
        vms__fault_nested_disarm();
        vms__unwind_end();
        end_trace(&t);
        return;
    }
    /* A fault while unwinding (corrupt call-frame information): what was found, then why it ends. */
    vms__unwind_end();
    end_trace(&t);
    vms__sb_str(b, "vmstack:  (unwinding failed)\n");
}

/* ---- the report ---- */

static void put_kib(struct vms_sbuf *b, uintptr_t bytes)
{
    vms__sb_dec(b, bytes >> 10);
    vms__sb_str(b, " KiB");
}

static void put_range(struct vms_sbuf *b, uintptr_t lo, uintptr_t hi)
{
    vms__sb_hex(b, lo);
    vms__sb_str(b, "..");
    vms__sb_hex(b, hi);
}

static void put_overflow_head(struct vms_sbuf *b, const struct vms_fault *f)
{
    vms__sb_str(b, "vmstack: BUG: stack guard page was hit at ");
    vms__sb_hex(b, f->addr);
    vms__sb_str(b, " (stack is ");
    put_range(b, f->stack.lo, f->stack.hi);
    vms__sb_str(b, ")\nvmstack: ");
    put_task(b, &f->stack.task, true);
    vms__sb_str(b, "\nvmstack: stack ");
    put_kib(b, f->stack.hi - f->stack.lo);
    vms__sb_str(b, ", guard ");
    put_kib(b, f->stack.lo - f->stack.guard_lo);
    vms__sb_str(b, " at ");
    put_range(b, f->stack.guard_lo, f->stack.lo);
    vms__sb_str(b, "; sp is ");
    vms__sb_dec(b, f->stack.hi - f->sp);
    vms__sb_str(b, " bytes below the top\n");
    if (f->landed) {
        vms__sb_str(b, "vmstack: one frame jumped the guard: the access landed in the guard of ");
        if (f->landed_in.owned)
            put_task(b, &f->landed_in.task, false);
        else
            vms__sb_str(b, "a free stack");
        vms__sb_str(b, " (stack is ");
        put_range(b, f->landed_in.lo, f->landed_in.hi);
        vms__sb_str(b, "), whose stack may be corrupted\n");
    }
}

static void put_wild_head(struct vms_sbuf *b, const struct vms_fault *f)
{
    vms__sb_str(b, "vmstack: BUG: wild access to a stack guard page at ");
    vms__sb_hex(b, f->addr);
    vms__sb_str(b, " (stack is ");
    put_range(b, f->stack.lo, f->stack.hi);
    vms__sb_str(b, ")\nvmstack: the stack belongs to ");
    if (f->stack.owned)
        put_task(b, &f->stack.task, false);
    else
        vms__sb_str(b, "nobody: it is free");
    vms__sb_str(b, "\nvmstack: accessed by ");
    if (f->by.owned) {
        put_task(b, &f->by.task, true);
    } else {
        put_this_thread(b);
        vms__sb_str(b, ", sp on no known stack");
    }
    vms__sb_str(b, "\n");
}

static void put_unmanaged_head(struct vms_sbuf *b, const struct vms_fault *f)
{
    vms__sb_str(b, "vmstack: BUG: stack overflow on a stack vmstack does not manage: access at ");
    vms__sb_hex(b, f->addr);
    vms__sb_str(b, ", sp ");
    vms__sb_hex(b, f->sp);
    vms__sb_str(b, "\nvmstack: ");
    put_this_thread(b);
    vms__sb_str(b, "\n");
    if (f->stack.hi) {
        vms__sb_str(b, "vmstack: stack mapping ");
        put_range(b, f->stack.lo, f->stack.hi);
        vms__sb_str(b, " (");
        put_kib(b, f->stack.hi - f->stack.lo);
        vms__sb_str(b, f->stack.guard_lo ? "), below it a mapping the access hit at " : "), below it nothing mapped\n");
        if (f->stack.guard_lo) {
            put_range(b, f->stack.guard_lo, f->stack.lo);
            vms__sb_str(b, "\n");
        }
    }
}

/*
 * C++ names are demangled only when that cannot hang: the demangler
 * allocates, and a thread interrupted inside malloc holds the arena's lock.
 * The same proof as a kill's (killsafe.c): a chain followed to its start,
 * or to its end, with no frame in libc, the loader or vmstack.  Otherwise names stay as
 * stored ("_Z..."), which c++filt reads.
 */
void vms__report_body(struct vms_sbuf *b, const struct vms_fault *f)
{
    demangling = (f->kc.followed || f->kc.ended) && !f->kc.holder;
    if (f->cls == VMS_FAULT_OVERFLOW)
        put_overflow_head(b, f);
    else if (f->cls == VMS_FAULT_UNMANAGED)
        put_unmanaged_head(b, f);
    else
        put_wild_head(b, f);
    vms__sb_str(b, "vmstack: ip ");
    vms__sb_hex(b, f->ip);
    vms__sb_str(b, " sp ");
    vms__sb_hex(b, f->sp);
    vms__sb_str(b, " bp ");
    vms__sb_hex(b, f->bp);
    vms__sb_str(b, "\n");
    put_trace(b, f);
    demangling = false;
}

/* Why the policy's kill became an abort (killsafe.c). */
static void put_kill_refusal(struct vms_sbuf *b, const struct vms_fault *f)
{
    const char *what = f->stack.task.kind == VMS_TASK_FIBER ? "the fiber" : "the coroutine";

    if (f->kc.holder) {
        vms__sb_str(b, "vmstack: overflow inside ");
        vms__sb_str(b, f->kc.holder);
        vms__sb_str(b, " (");
        vms__sb_str(b, f->kc.module);
        vms__sb_str(b, "): killing ");
    } else {
        vms__sb_str(b, f->stack.task.kind == VMS_TASK_FIBER
                           ? "vmstack: the call chain could not be followed to the fiber's start: killing "
                           : "vmstack: the call chain could not be followed to the stack's entry: killing ");
    }
    vms__sb_str(b, what);
    vms__sb_str(b, " could leave a lock held; aborting\n");
}

/*
 * "a thread cannot be killed alone" and what sizes its stack: the main
 * thread's is RLIMIT_STACK; a thread of 'vmstack run' or 'trace' (owner
 * set) that asks for no size gets that command's --stack-size; others the size they were created
 * with.
 */
static void put_thread_abort(struct vms_sbuf *b, const struct vms_task *t)
{
    vms__sb_str(b, "a thread cannot be killed alone without risking the rest of the process; ");
    if (t->id == (uint64_t)getpid())
        vms__sb_str(b, "ulimit -s sizes the main thread's stack\n");
    else if (t->owner) {
        vms__sb_str(b, "vmstack ");
        vms__sb_str(b, vms__g.run_command);
        vms__sb_str(b, " --stack-size sizes the stacks of threads that ask for no size\n");
    } else
        vms__sb_str(b, "the stack size of its pthread_attr_t (else VMSTACK_STACK_SIZE) sizes its stack\n");
}

/* Why a task the policy says to kill is aborted instead. */
static void put_unkillable(struct vms_sbuf *b, const struct vms_task *t)
{
    vms__sb_str(b, "vmstack: aborting: ");
    switch (t->kind) {
    case VMS_TASK_FIBER:
        vms__sb_str(b, "fiber '");
        vms__sb_name(b, t->name, sizeof t->name);
        vms__sb_str(b, "' is not the one running here and cannot be killed\n");
        break;
    case VMS_TASK_NONE:
    case VMS_TASK_STACK:
        vms__sb_str(b, "stack '");
        vms__sb_name(b, t->name, sizeof t->name);
        vms__sb_str(b, "' has no overflow handler to end it (vms_stack_on_overflow)");
        /* Why its runtime gave it none, as the runtime said (vms_stack_alloc_opts). */
        if (t->abort_reason) {
            vms__sb_str(b, ": ");
            vms__sb_str(b, t->abort_reason);
        }
        vms__sb_str(b, "\n");
        break;
    default:
        put_thread_abort(b, t);
        break;
    }
}

/*
 * The plain abort: why the task is not ended alone, and the setting that
 * sizes its kind of stack, which is what to raise.
 */
static void put_abort(struct vms_sbuf *b, const struct vms_task *t)
{
    switch (t->kind) {
    case VMS_TASK_FIBER:
        vms__sb_str(b, "vmstack: aborting: the overflow policy for fibers is abort (vms_set_overflow_policy); "
                       "vms_fiber_opts.stack_size sizes a fiber's stack\n");
        break;
    case VMS_TASK_NONE:
    case VMS_TASK_STACK:
        vms__sb_str(b, "vmstack: aborting: ");
        if (t->on_overflow)
            vms__sb_str(b, "the overflow policy for stacks is abort (vms_set_overflow_policy)");
        else if (t->abort_reason)
            vms__sb_str(b, t->abort_reason); /* why its runtime gave it no handler (vms_stack_alloc_opts) */
        else
            vms__sb_str(b, "the stack has no overflow handler to end its task (vms_stack_on_overflow)");
        vms__sb_str(b, "; the size given to vms_stack_alloc sizes it\n");
        break;
    case VMS_TASK_ALTSTACK:
        vms__sb_str(b, "vmstack: aborting: a signal handler overflowed the thread's alternate signal stack, "
                       "which cannot be ended alone\n");
        break;
    default:
        vms__sb_str(b, "vmstack: aborting: ");
        put_thread_abort(b, t);
        break;
    }
}

void vms__report_outcome(struct vms_sbuf *b, const struct vms_fault *f, enum vms_outcome o)
{
    if (f->cls == VMS_FAULT_WILD) {
        vms__sb_str(b, f->signo == SIGBUS ? "vmstack: not an overflow: passing SIGBUS on\n"
                                          : "vmstack: not an overflow: passing SIGSEGV on\n");
    } else if (f->cls == VMS_FAULT_UNMANAGED) {
        vms__sb_str(b, "vmstack: not a stack of vmstack's: passing SIGSEGV on\n");
    } else if (o == VMS_OUT_KILL_FIBER) {
        vms__sb_str(b, "vmstack: killed fiber '");
        vms__sb_name(b, f->stack.task.name, sizeof f->stack.task.name);
        vms__sb_str(b, "'\n");
    } else if (o == VMS_OUT_KILL_STACK) {
        vms__sb_str(b, "vmstack: killed stack '");
        vms__sb_name(b, f->stack.task.name, sizeof f->stack.task.name);
        vms__sb_str(b, "': its overflow handler ends the coroutine\n");
    } else if (o == VMS_OUT_UNKILLABLE) {
        put_unkillable(b, &f->stack.task);
    } else if (f->kill_refused) {
        put_kill_refusal(b, f);
    } else if (f->to_program) {
        vms__sb_str(b, f->signo == SIGBUS ? "vmstack: passing SIGBUS to the program's own handler\n"
                                          : "vmstack: passing SIGSEGV to the program's own handler\n");
    } else {
        put_abort(b, &f->stack.task);
    }
}

/* ---- where reports go ---- */

struct sink {
    int fd;
    struct vms_fd_id id;                                   /* what fd led to when it was set */
    void (*fn)(const char *text, size_t len, void *arg);  /* whole reports */
    void *arg;
    int (*writer)(const char *text, size_t len);          /* pieces */
    void (*done)(void);                                   /* and the end of a report */
};

static _Atomic(const struct sink *) sink;
static struct sink sinks[2];   /* the one in use and the next, swapped on change */
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic pid_t writer;   /* tid of the thread writing a report, or 0 */

/*
 * The whole of a report waits at most this long for its descriptor to take
 * it (reportfd.c); what has not gone out then is dropped, and the policy
 * goes on.  Eight bytes of TLS: the preload library gives its whole static
 * TLS back to every thread stack, rounded up to 64 bytes (preload.c).
 */
#define REPORT_PATIENCE_NS 2000000000LL
static TLS_IE int64_t patience; /* ns the report this thread is writing may still wait (vms__fd_write_bounded) */

/* unset_only: only when none was set yet. */
static void set_sink(int fd, void (*fn)(const char *, size_t, void *), void *arg,
                     int (*w)(const char *, size_t), void (*done)(void), bool unset_only)
{
    const struct sink *was;
    struct sink *next;

    pthread_mutex_lock(&sink_lock);
    was = atomic_load_explicit(&sink, memory_order_relaxed);
    if (unset_only && was) {
        pthread_mutex_unlock(&sink_lock);
        return;
    }
    next = was == &sinks[0] ? &sinks[1] : &sinks[0];
    next->fd = fd;
    vms__fd_id_take(fd, &next->id);
    next->fn = fn;
    next->arg = arg;
    next->writer = w;
    next->done = done;
    atomic_store_explicit(&sink, next, memory_order_release);
    pthread_mutex_unlock(&sink_lock);
}

int vms_set_report_fd(int fd)
{
    if (fd < 0)
        return vms__fail(EBADF, "report fd %d: not a file descriptor", fd);
    set_sink(fd, NULL, NULL, NULL, NULL, false);
    return 0;
}

void vms_set_report_callback(void (*fn)(const char *text, size_t len, void *arg), void *arg)
{
    set_sink(2, fn, arg, NULL, NULL, false);
}

void vms__set_report_writer(int (*w)(const char *text, size_t len), void (*done)(void))
{
    set_sink(2, NULL, NULL, w, done, false);
}

void vms__report_fd_init(void)
{
    set_sink(2, NULL, NULL, NULL, NULL, true);
}

/*
 * To the sink's descriptor while it leads where it did (else nowhere: a
 * data file of the program's is no place for a report), within the
 * report's patience.  Before any sink was set, fd 2 as it is.
 */
static void fd_write(const struct sink *s, const char *p, size_t len)
{
    struct vms_fd_id now;
    mode_t type = 0;
    int fd = s ? s->fd : 2;

    if (!s) {
        vms__fd_id_take(fd, &now);
        type = now.type;
    } else if (vms__fd_id_check(fd, &s->id, &type) >= VMS_FD_OTHER_FILE) {
        return;
    }
    vms__fd_write_bounded(fd, type, p, len, &patience);
}

/* Pieces of a report to the fd or the writer (a callback gets the whole text at the end). */
static void sink_write(const char *p, size_t len)
{
    const struct sink *s = atomic_load_explicit(&sink, memory_order_acquire);

    if (s && s->writer)
        s->writer(p, len);
    else if (!s || !s->fn)
        fd_write(s, p, len);
}

/*
 * The spin is bounded: a writer that never finishes (its fd blocks forever)
 * must not cost another thread its report, only its ordering.
 */
void vms__report_begin(struct vms_sbuf *b)
{
    const struct sink *s = atomic_load_explicit(&sink, memory_order_acquire);
    pid_t me = gettid(), free_ = 0;

    owner = false;
    for (long spins = 0; spins < 1000000; spins++) {
        if (atomic_compare_exchange_weak_explicit(&writer, &free_, me, memory_order_acquire, memory_order_relaxed)) {
            owner = true;
            break;
        }
        if (free_ == me) /* a report from a handler that interrupted our own */
            break;
        free_ = 0;
        sched_yield();
    }
    streaming = !s || !s->fn ? b : NULL;
    sent = 0;
    patience = REPORT_PATIENCE_NS;
}

void vms__report_end(struct vms_sbuf *b)
{
    const struct sink *s = atomic_load_explicit(&sink, memory_order_acquire);

    if (streaming == b)
        flush(b);
    else if (s && s->fn)
        s->fn(b->p, b->len, s->arg);
    if (s && s->done)
        s->done();
    streaming = NULL;
    if (owner)
        atomic_store_explicit(&writer, 0, memory_order_release);
    owner = false;
}

void vms__report_emit(const char *text, size_t len)
{
    struct vms_sbuf b = {(char *)text, len, len};

    vms__report_begin(&b);
    vms__report_end(&b);
}
