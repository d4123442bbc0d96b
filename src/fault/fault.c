/* SPDX-License-Identifier: MIT */
/*
 * The stack-overflow handler: the kernel's "BUG: stack guard page was hit",
 * then kill only the offender.
 *
 * SIGSEGV and SIGBUS handlers, installed once, run on a per-thread
 * alternate signal stack that is itself a guarded vmstack stack (an
 * overflowed stack has no room left for a handler, and the handler's own
 * overflow must not corrupt anything).  The fault address is classified in
 * O(1) with vms__locate (our regions) and, failing that, the registry of
 * foreign stacks:
 *   - in the guard below a live stack, with the interrupted stack pointer on
 *     that stack or in its guard (or a little below it, when a large frame
 *     skipped ahead, as long as no other live stack is there): an overflow
 *     of that stack's task.  Report, then the policy: kill the fiber, or
 *     abort;
 *   - in some other guard, or with the stack pointer elsewhere: a wild
 *     access.  Report, then pass it on;
 *   - anything else: pass it on untouched.
 * Passing on means: to the handler that was installed before ours, called
 * as the kernel would have called it; or, when there was none, back to the
 * default action and return, so that the faulting instruction runs again
 * and the process dies by the real signal with its core dump.
 *
 * Killing a fiber happens outside the handler: the handler rewrites the
 * interrupted context to call vms__fiber_kill_current on a fresh frame near
 * the top of the fiber's stack (intact: only its bottom overflowed) and
 * returns, so that sigreturn restores the signal mask and the kill runs as
 * ordinary code.
 */
#include "fault/fault.h"
#include "core/sanitizer.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>


/*
 * Each thread's own alternate stack: its top REPORT_BYTES keep the text of
 * a report (for callbacks; lines stream out as they are built), the rest
 * is the stack the handler runs on: libunwind's cursor and its DWARF
 * interpreter, and an earlier handler we chain to, in about 48 KiB; only
 * touched pages cost memory.  A larger configured stack size is used as
 * is, so the altstack shares the default region instead of taking one of
 * VMS_MAX_SIZES.  The handler's own frames stay under 4 KiB, so it could
 * run even on the small alternate stack a program installs itself (Rust
 * sets one of SIGSTKSZ on every thread); it moves to this one at once.
 */
#define ALTSTACK_MIN ((size_t)64 << 10)
#define REPORT_BYTES (16 << 10)
#define SMALL_REPORT_BYTES 512         /* a thread without its own altstack: the text kept on the stack */
#define OUTCOME_BYTES 128              /* kept free for the report's last line */
#define SP_SLACK ((uintptr_t)64 << 10) /* how far below a guard a large frame may leave sp */
#define KILL_FRAME_GAP 256             /* bytes below the top where the kill starts */

static _Atomic int installed;
static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction prev[2];       /* SIGSEGV, SIGBUS before us */
static _Atomic int in_flight;          /* handlers writing a report */
static _Atomic int policy[4];          /* by vms_overflow_task */
static _Atomic(vms_overflow_fn) policy_fn;
static void *_Atomic policy_arg;

/* Free in a child after fork, whatever another thread was doing (core/fork.c). */
__attribute__((constructor)) static void install_lock_at_fork(void)
{
    vms__fork_mutex(VMS_FORK_FAULT_INSTALL, &install_lock);
}

static TLS_IE int alt_ready;           /* this thread has its altstack (or is getting it) */
static TLS_IE vms_stack alt;
static TLS_IE stack_t alt_prev;        /* the program's own altstack (before ours, or set since), restored at exit */
static TLS_IE uintptr_t passed_ip, passed_addr; /* the last fault this thread passed on */
/* alt below its top REPORT_BYTES, the report area, which starts at hi; NULLs without alt */
TLS_IE struct vms_altstack_range vms__altstack_own;
static TLS_IE sigjmp_buf *nested_env;  /* armed: a fault while unwinding jumps here */
static pthread_key_t alt_key;

/*
 * The kernel's alternate stack, never through the sigaltstack symbol:
 * under 'vmstack run' that is the program's view (vms__altstack_program).
 */
int vms__altstack_kernel(const stack_t *ss, stack_t *old)
{
    return (int)syscall(SYS_sigaltstack, ss, old);
}

/* ---- classification ---- */

/* The top of a live slot's stack: where the part its user sees ends (vms_task.size). */
static uintptr_t slot_top(uintptr_t base, const struct vms_task *task, const struct vms_region *r)
{
    return base + (task->size ? task->size : r->stack_size);
}

/* A slot's stack, and its task when the slot is live. */
static void slot_stack(const struct vms_region *r, size_t slot, struct vms_stack_task *st)
{
    const struct vms_slot *s = &r->slots[slot];

    st->lo = (uintptr_t)vms__slot_base(r, slot);
    st->hi = st->lo + r->stack_size;
    st->guard_lo = st->lo - r->guard_size;
    st->owned = (uint32_t)atomic_load_explicit(&s->state, memory_order_acquire) == VMS_SLOT_LIVE;
    if (st->owned) {
        st->task = s->task;
        st->hi = slot_top(st->lo, &st->task, r);
    }
}

/* The live stack whose usable bytes hold addr, and its task: false (out->owned too) when none. */
static bool stack_at(uintptr_t addr, struct vms_stack_task *out)
{
    struct vms_loc loc;

    vms__locate((const void *)addr, &loc);
    if (loc.where == VMS_AT_STACK)
        slot_stack(loc.region, loc.slot, out);
    else
        out->owned = loc.where == VMS_AT_NONE && vms__registry_find(addr, out) && addr >= out->lo;
    return out->owned;
}

/*
 * Was it the stack's own task running into the guard?  Its sp is on the
 * stack or in the guard; or below the guard when one large frame jumped
 * it, unless sp is on another live stack there (then it is that stack's
 * task writing above its top, and killing the wrong fiber must not happen).
 */
static bool sp_overflowed(const struct vms_fault *f)
{
    struct vms_stack_task other;

    if (f->sp >= f->stack.guard_lo && f->sp < f->stack.hi)
        return true;
    return f->sp < f->stack.guard_lo && f->stack.guard_lo - f->sp <= SP_SLACK && !stack_at(f->sp, &other);
}

/*
 * Threads' task records get their tid only here, when a report needs it:
 * a thread that overflowed, or whose stack made a wild access, runs on the
 * faulting thread, so gettid() names it (one system call per report
 * instead of one per thread).
 */
static void tid_here(struct vms_task *t)
{
    if (t->id == 0 && (t->kind == VMS_TASK_THREAD || t->kind == VMS_TASK_ALTSTACK))
        t->id = (uint64_t)gettid();
}

/*
 * The stack of the task running on this thread, when it is a vmstack
 * stack: a fiber, when one runs here; else the thread itself, on a vmstack
 * thread stack: glibc keeps the thread's descriptor, pthread_self(), at
 * the top of the stack it was given (a thread-pointer read, signal-safe).
 */
static bool runner_here(struct vms_stack_task *r)
{
    struct vms_fiber_desc *cur = vms__fiber_current();
    const void *on = cur ? (const void *)cur->base : (const void *)pthread_self();
    struct vms_loc loc;
    struct vms_slot *s;

    if (cur && !cur->task)
        return false;
    vms__locate(on, &loc);
    if (loc.where != VMS_AT_STACK)
        return false;
    s = &loc.region->slots[loc.slot];
    if (cur) {
        r->task = *cur->task;
        r->lo = (uintptr_t)cur->base;
        r->hi = r->lo + cur->size;
    } else {
        if ((uint32_t)atomic_load_explicit(&s->state, memory_order_acquire) != VMS_SLOT_LIVE ||
            s->task.kind != VMS_TASK_THREAD)
            return false;
        r->task = s->task;
        r->lo = (uintptr_t)s->base;
        r->hi = slot_top(r->lo, &s->task, loc.region);
    }
    r->guard_lo = r->lo - loc.region->guard_size;
    r->owned = true;
    return true;
}

/*
 * The offender is the task running on this thread, whatever stack the
 * access landed in.  A fiber or thread whose one large frame jumped its
 * own guard (its sp far below it) and hit the guard of another stack
 * further down overflowed its own stack: it is blamed, and the stack it
 * landed in (whose top it may have overwritten on the way) is named in
 * the report and marked possibly corrupted.
 */
static bool runner_jumped(struct vms_fault *f)
{
    struct vms_stack_task r;

    if (!runner_here(&r) || r.lo == f->stack.lo)
        return false;
    if (f->sp >= r.guard_lo || f->addr >= r.guard_lo || r.guard_lo - f->sp > SP_SLACK + (r.hi - r.lo))
        return false;
    f->landed = true;
    f->landed_in = f->stack;
    f->stack = r;
    tid_here(&f->stack.task);
    f->cls = VMS_FAULT_OVERFLOW;
    return true;
}

/*
 * This thread's alternate stack is what a signal handler that overflows it
 * ran on, not the runner's: the runner's own stack may lie right above it
 * (the same size class), and its overflow must not pass for a frame of
 * the runner's that jumped that stack's guard.
 */
static bool own_altstack(const struct vms_fault *f)
{
    return f->stack.task.kind == VMS_TASK_ALTSTACK && f->stack.lo == (uintptr_t)vms__altstack_own.lo;
}

static bool classify_guard(struct vms_fault *f, bool below_stack)
{
    bool overflowed = f->stack.owned && below_stack && sp_overflowed(f);

    if (!(overflowed && own_altstack(f)) && runner_jumped(f))
        return true;
    if (overflowed) {
        f->cls = VMS_FAULT_OVERFLOW;
        tid_here(&f->stack.task);
        return true;
    }
    f->cls = VMS_FAULT_WILD;
    if (stack_at(f->sp, &f->by))
        tid_here(&f->by.task);
    return true;
}

static bool classify_slot(struct vms_fault *f, const struct vms_loc *loc)
{
    slot_stack(loc->region, loc->slot, &f->stack);
    return classify_guard(f, loc->where == VMS_AT_GUARD_BELOW);
}

/*
 * An address on a live stack is a guard hit only in the guard a runtime
 * put between its record at the stack's low end and the stack
 * (vms_stack_alloc_opts' low_reserve): then the stack proper is the part
 * above that guard, and the hit is an overflow of it as at its own guard.
 */
static bool classify_inner(struct vms_fault *f, const struct vms_loc *loc)
{
    struct vms_region *r = loc->region;
    struct vms_slot *s = &r->slots[loc->slot];
    uintptr_t base = (uintptr_t)vms__slot_base(r, loc->slot), lo;

    if ((uint32_t)atomic_load_explicit(&s->state, memory_order_acquire) != VMS_SLOT_LIVE || !s->task.inner_len)
        return false;
    f->stack.task = s->task;
    lo = base + f->stack.task.inner_off;
    if (f->addr < lo || f->addr >= lo + f->stack.task.inner_len)
        return false;
    f->stack.guard_lo = lo;
    f->stack.lo = lo + f->stack.task.inner_len;
    f->stack.hi = slot_top(base, &f->stack.task, r);
    f->stack.owned = true;
    return classify_guard(f, true);
}

static bool classify_foreign(struct vms_fault *f)
{
    struct vms_stack_task hit; /* not in f->stack: the unmanaged classification wants it empty */

    if (!vms__registry_find(f->addr, &hit) || f->addr >= hit.lo)
        return false;
    f->stack = hit;
    return classify_guard(f, true);
}

static bool passes_to_program(int sig);

/* Fills *f; false when the fault is none of ours. */
static bool classify(int sig, siginfo_t *si, ucontext_t *uc, struct vms_fault *f)
{
    struct vms_loc loc;

    memset(f, 0, sizeof *f);
    f->signo = sig;
    f->uc = uc;
    f->addr = (uintptr_t)si->si_addr;
    f->ip = vms__uc_pc(uc);
    f->sp = vms__uc_sp(uc);
    f->bp = vms__uc_fp(uc);
    if (si->si_code <= 0) /* sent with kill() or sigqueue(), not a fault */
        return false;
    vms__locate((const void *)f->addr, &loc);
    if (loc.where == VMS_AT_GUARD_BELOW || loc.where == VMS_AT_GUARD_ABOVE)
        return classify_slot(f, &loc);
    if (loc.where == VMS_AT_STACK)
        return classify_inner(f, &loc);
    if (loc.where != VMS_AT_NONE)
        return false;
    /* Another runtime's stack: reported where no handler of the program's takes the fault (a JVM's does). */
    return classify_foreign(f) || (!passes_to_program(sig) && vms__classify_unmanaged(si, f));
}

/* ---- passing faults on ---- */

static void raise_default(int sig, const siginfo_t *si)
{
    struct sigaction dfl = {.sa_handler = SIG_DFL};

    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    /* A fault repeats when we return; a sent signal must be sent again. */
    if (si->si_code <= 0)
        syscall(SYS_tgkill, getpid(), gettid(), sig);
}

/* As the kernel would have run the earlier handler: its mask, its flags. */
static void call_prev(struct sigaction *p, int sig, siginfo_t *si, ucontext_t *uc)
{
    sigset_t mask = uc->uc_sigmask, old;
    void (*plain)(int) = p->sa_handler;
    void (*info)(int, siginfo_t *, void *) = p->sa_sigaction;
    bool siginfo = p->sa_flags & SA_SIGINFO;

    for (int s = 1; s < NSIG; s++)
        if (sigismember(&p->sa_mask, s) == 1)
            sigaddset(&mask, s);
    if (!(p->sa_flags & SA_NODEFER))
        sigaddset(&mask, sig);
    if (p->sa_flags & SA_RESETHAND) {
        p->sa_flags &= ~SA_SIGINFO;
        p->sa_handler = SIG_DFL;
    }
    pthread_sigmask(SIG_SETMASK, &mask, &old);
    if (siginfo)
        info(sig, si, uc);
    else
        plain(sig);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void pass_on(int sig, siginfo_t *si, ucontext_t *uc)
{
    struct sigaction *p = &prev[sig == SIGBUS];

    if (!(p->sa_flags & SA_SIGINFO) && p->sa_handler == SIG_IGN) {
        /* The kernel does not let a fault be ignored: it kills.  A sent signal is ignored. */
        if (si->si_code > 0)
            raise_default(sig, si);
        return;
    }
    if ((p->sa_flags & SA_SIGINFO) || p->sa_handler != SIG_DFL)
        call_prev(p, sig, si, uc);
    else
        raise_default(sig, si);
}

/* Will pass_on reach a handler of the program's (which then decides what happens)? */
static bool passes_to_program(int sig)
{
    bool (*hook)(int) = atomic_load_explicit(&vms__fault_chain_hook, memory_order_acquire);
    const struct sigaction *p = &prev[sig == SIGBUS];

    if (hook)
        return hook(sig);
    return (p->sa_flags & SA_SIGINFO) || (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN);
}

/* ---- policies ---- */

static vms_overflow_task task_kind(const struct vms_task *t)
{
    switch (t->kind) {
    case VMS_TASK_FIBER: return VMS_OVERFLOW_FIBER;
    case VMS_TASK_NONE: case VMS_TASK_STACK: return VMS_OVERFLOW_STACK;
    default: return VMS_OVERFLOW_THREAD;
    }
}

static vms_overflow_policy default_policy(const struct vms_fault *f, vms_overflow_task t)
{
    return t == VMS_OVERFLOW_FIBER || (t == VMS_OVERFLOW_STACK && f->stack.task.on_overflow) ? VMS_OVERFLOW_KILL
                                                                                         : VMS_OVERFLOW_ABORT;
}

static vms_overflow_policy ask_callback(const struct vms_fault *f, vms_overflow_task t,
                                        const struct vms_sbuf *b)
{
    vms_overflow_fn fn = atomic_load_explicit(&policy_fn, memory_order_acquire);
    char name[sizeof f->stack.task.name + 1];
    vms_overflow ov;

    if (!fn)
        return default_policy(f, t);
    vms__overflow_info(f, t, b, name, &ov);
    return fn(&ov, atomic_load_explicit(&policy_arg, memory_order_relaxed));
}

/* A stack whose runtime gave it an overflow handler: a kill ends the coroutine through it. */
static bool kills_stack(const struct vms_fault *f)
{
    return f->stack.task.kind == VMS_TASK_STACK && f->stack.task.on_overflow;
}

/*
 * A kill needs a fiber that is the one running here, on that stack; or a
 * stack whose runtime gave it an overflow handler.
 */
static enum vms_outcome kill_outcome(const struct vms_fault *f)
{
    struct vms_fiber_desc *cur;

    if (kills_stack(f))
        return VMS_OUT_KILL_STACK;
    if (f->stack.task.kind != VMS_TASK_FIBER)
        return VMS_OUT_UNKILLABLE;
    cur = vms__fiber_current();
    return cur && (uintptr_t)cur->base == f->stack.lo ? VMS_OUT_KILL_FIBER : VMS_OUT_UNKILLABLE;
}

static enum vms_outcome decide(struct vms_fault *f, const struct vms_sbuf *b)
{
    enum vms_outcome o;
    vms_overflow_task t = task_kind(&f->stack.task);
    vms_overflow_policy p = atomic_load_explicit(&policy[t], memory_order_relaxed);

    if (p == VMS_OVERFLOW_DEFAULT)
        p = default_policy(f, t);
    if (p == VMS_OVERFLOW_CALLBACK)
        p = ask_callback(f, t, b);
    if (p != VMS_OVERFLOW_KILL && p != VMS_OVERFLOW_ABORT)
        p = default_policy(f, t);
    if (p != VMS_OVERFLOW_KILL)
        return VMS_OUT_ABORT;
    if ((o = kill_outcome(f)) != VMS_OUT_KILL_FIBER && o != VMS_OUT_KILL_STACK)
        return o;
    /* A kill must never hang the process: none of the chain may hold a shared lock (f->kc). */
    f->kill_refused = !f->kc.followed || f->kc.holder;
    return f->kill_refused ? VMS_OUT_ABORT : o;
}

/* The context returns into vms__fiber_kill_current(KILLED_OVERFLOW) near the stack's top. */
static void redirect_to_kill(const struct vms_fault *f)
{
    vms__uc_redirect(f->uc, f->stack.hi - KILL_FRAME_GAP, vms__fiber_kill_current, VMS_FIBER_KILLED_OVERFLOW);
}

/*
 * Before a fault goes on to end the process: give overflows that other
 * threads hit at about the same time a moment (GRACE) to start reporting,
 * and let every report in flight finish (for two seconds at most), so that
 * two overflows at once give two whole reports, not one and a half.
 */
#define GRACE_NS 50000000L

static long elapsed_ns(const struct timespec *since)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - since->tv_sec) * 1000000000L + (now.tv_nsec - since->tv_nsec);
}

static void wait_for_other_reports(void)
{
    struct timespec start, nap = {0, 1000000};
    long t;

    clock_gettime(CLOCK_MONOTONIC, &start);
    while ((t = elapsed_ns(&start)) < GRACE_NS ||
           (atomic_load_explicit(&in_flight, memory_order_acquire) > 0 && t < 2000000000L))
        nanosleep(&nap, NULL);
}

/*
 * An earlier handler that returns without fixing anything makes the same
 * fault come back at once, forever, as it would without vmstack; report it
 * once, not forever.
 */
static bool repeated(const struct vms_fault *f)
{
    return f->ip == passed_ip && f->addr == passed_addr;
}

/* A stack's overflow handler came back instead of ending the coroutine. */
static void handler_returned(const struct vms_fault *f)
{
    char text[128];
    struct vms_sbuf b = {text, sizeof text, 0};

    vms__sb_str(&b, "vmstack: the overflow handler of stack '");
    vms__sb_name(&b, f->stack.task.name, sizeof f->stack.task.name);
    vms__sb_str(&b, "' returned: aborting\n");
    vms__report_emit(text, b.len);
}

static void handle(struct vms_fault *f, siginfo_t *si)
{
    char small[SMALL_REPORT_BYTES];
    char *text = vms__altstack_own.hi ? vms__altstack_own.hi : small;
    size_t cap = vms__altstack_own.hi ? REPORT_BYTES : sizeof small;
    struct vms_sbuf b = {text, cap - OUTCOME_BYTES, 0};
    enum vms_outcome o = VMS_OUT_ABORT;

    if (repeated(f)) {
        pass_on(f->signo, si, f->uc);
        return;
    }
    atomic_fetch_add_explicit(&in_flight, 1, memory_order_relaxed);
    /* Before the report, which demangles only where a kill could be safe, and the policy. */
    vms__kill_check(f, &f->kc, kills_stack(f));
    /* Before the report and the policy: a policy callback may look at the mark. */
    if (f->landed && f->landed_in.owned)
        vms__stack_taint((const void *)f->landed_in.lo);
    vms__report_begin(&b);
    vms__report_body(&b, f);
    if (f->cls == VMS_FAULT_OVERFLOW) {
        atomic_fetch_add_explicit(&vms__g.overflows, 1, memory_order_relaxed);
        o = decide(f, &b);
    }
    b.cap = cap;
    f->to_program = (o == VMS_OUT_ABORT || o == VMS_OUT_UNKILLABLE) && passes_to_program(f->signo);
    vms__report_outcome(&b, f, o);
    vms__report_end(&b);
    atomic_fetch_sub_explicit(&in_flight, 1, memory_order_release);
    if (o == VMS_OUT_KILL_FIBER) {
        redirect_to_kill(f);
        return;
    }
    if (o == VMS_OUT_KILL_STACK && f->stack.task.handler_on_stack) {
        vms__foreign_redirect(f, &b);
        return;
    }
    if (o == VMS_OUT_KILL_STACK) {
        vms__foreign_end(f, &b);
        handler_returned(f);
    }
    wait_for_other_reports();
    passed_ip = f->ip;
    passed_addr = f->addr;
    pass_on(f->signo, si, f->uc);
}

/* ---- the handler's own stack ---- */

void vms__fault_nested_arm(sigjmp_buf *env)
{
    sigset_t faults;

    sigemptyset(&faults);
    sigaddset(&faults, SIGSEGV);
    sigaddset(&faults, SIGBUS);
    nested_env = env;
    /* A fault while they are blocked would kill the process at once. */
    pthread_sigmask(SIG_UNBLOCK, &faults, NULL);
}

void vms__fault_nested_disarm(void)
{
    sigset_t faults;

    nested_env = NULL;
    sigemptyset(&faults);
    sigaddset(&faults, SIGSEGV);
    sigaddset(&faults, SIGBUS);
    pthread_sigmask(SIG_BLOCK, &faults, NULL);
}

static bool on_own_altstack(void)
{
    char here;

    return (uintptr_t)&here >= (uintptr_t)vms__altstack_own.lo && (uintptr_t)&here < (uintptr_t)vms__altstack_own.hi;
}

struct switched {
    struct vms_fault *f;
    siginfo_t *si;
    stack_t theirs;
    bool swapped;
};

/*
 * On our stack.  It becomes the registered alternate stack while the
 * handler runs, so that a nested fault (while unwinding) is delivered
 * below our frames rather than at the top of the program's alternate
 * stack, where the kernel keeps the context we return through.
 */
static void handle_switched(void *p, uintptr_t unused)
{
    (void)unused;
    struct switched *s = p;
    stack_t mine = {.ss_sp = vms__altstack_own.lo, .ss_size = (size_t)(vms__altstack_own.hi - vms__altstack_own.lo)};

    s->swapped = vms__altstack_kernel(&mine, &s->theirs) == 0;
    handle(s->f, s->si);
}

/*
 * The program may have put in an alternate stack of its own, often a small
 * one (SIGSTKSZ): the handler leaves it at once for this thread's own.
 */
static void handle_on_own_stack(struct vms_fault *f, siginfo_t *si)
{
    struct switched s = {.f = f, .si = si};

    if (!vms__altstack_own.hi || on_own_altstack()) {
        handle(f, si);
        return;
    }
    vms__call_on_stack((char *)((uintptr_t)vms__altstack_own.hi & ~(uintptr_t)15), handle_switched, &s);
    /* Back on the program's stack, which may be registered again now. */
    if (s.swapped)
        vms__altstack_kernel(&s.theirs, NULL);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    struct vms_fault f;

    bool (*tripwire)(const siginfo_t *, ucontext_t *) =
        atomic_load_explicit(&vms__fault_tripwire_hook, memory_order_acquire);

    /* A tripwire of the stack tracer is no fault: the access retries. */
    if (tripwire && tripwire(si, uc)) {
        errno = saved_errno;
        return;
    }
    /*
     * ASan: a signal handler that overflowed this stack left its frames'
     * redzones poisoned where the kernel now put ours (at the top again,
     * as the overflow left the stack).
     */
    if (on_own_altstack())
        vms__san_stack_reset(vms__altstack_own.lo, (size_t)(vms__altstack_own.hi - vms__altstack_own.lo));
    /* A fault inside our own unwinding: back to where it was armed. */
    if (nested_env && si->si_code > 0) {
        sigjmp_buf *env = nested_env;
        nested_env = NULL;
        siglongjmp(*env, 1);
    }
    if (classify(sig, si, uc, &f))
        handle_on_own_stack(&f, si);
    else
        pass_on(sig, si, uc);
    errno = saved_errno;
}

/* ---- installation ---- */

/*
 * libunwind sets itself up on first use; let that happen here, not in the
 * handler (vms__unwind_prepare).  Its address space keeps no cache of
 * parsed call-frame information: libunwind parses a frame's CFI while
 * holding the shared cache's lock with every signal blocked, and a fault
 * there (corrupt CFI) is a fault with SIGSEGV blocked, which the kernel
 * ends at once, the report cut short.  Without the cache it parses with
 * the handler's mask, and such a fault comes back to the nested-fault
 * jump: "(unwinding failed)", then the policy.  The price is a lookup of
 * every frame's CFI, about 1 us more for each frame walked (an overflow
 * 8,000 frames deep: 45 ms of CPU instead of 27).  The address space is
 * vmstack's own: the program's own use of libunwind keeps its settings.
 */
static void warm_unwinder(void)
{
    if (vms__unwind_begin())
        return;
    vms__unwind_prepare();
    vms__unwind_end();
}

static void altstack_release(void *unused);

static int install(void)
{
    struct sigaction sa = {.sa_sigaction = on_fault, .sa_flags = SA_SIGINFO | SA_ONSTACK};
    int rc = 0;

    if (atomic_load_explicit(&installed, memory_order_acquire))
        return 0;
    pthread_mutex_lock(&install_lock);
    if (!atomic_load_explicit(&installed, memory_order_relaxed)) {
        /* Without symbols the report is still right, only less readable. */
        vms__symbols_snapshot();
        vms__report_fd_init();
        warm_unwinder();
        if ((rc = pthread_key_create(&alt_key, altstack_release)))
            rc = vms__fail(rc, "no pthread key left for the alternate signal stacks");
        /* Nothing else interrupts a report; sigreturn restores the task's mask. */
        sigfillset(&sa.sa_mask);
        if (!rc && (sigaction(SIGSEGV, &sa, &prev[0]) || sigaction(SIGBUS, &sa, &prev[1])))
            rc = vms__fail(errno, "sigaction failed: %s", strerror(errno));
        atomic_store_explicit(&installed, rc == 0, memory_order_release);
    }
    pthread_mutex_unlock(&install_lock);
    return rc;
}

static size_t altstack_size(void)
{
    if (vms__g.altstack_size)
        return vms__g.altstack_size;
    /* Larger signal frames (SVE, SME) than the VMS_SIGFRAME_MIN the 64 KiB allow for: that much more. */
    size_t min = ALTSTACK_MIN + (vms__g.sigframe > VMS_SIGFRAME_MIN ? vms__g.sigframe - VMS_SIGFRAME_MIN : 0);

    return vms__g.cfg.stack_size > min ? vms__g.cfg.stack_size : min;
}

/* The task record of the vmstack thread stack the caller runs on, or NULL. */
static struct vms_task *own_thread_task(void)
{
    struct vms_loc loc;
    struct vms_slot *s;
    char here;

    /* One lookup: a live slot's record is its thread's once its kind says so. */
    vms__locate(&here, &loc);
    if (loc.where != VMS_AT_STACK)
        return NULL;
    s = &loc.region->slots[loc.slot];
    if ((uint32_t)atomic_load_explicit(&s->state, memory_order_acquire) != VMS_SLOT_LIVE ||
        s->task.kind != VMS_TASK_THREAD)
        return NULL;
    return &s->task;
}

int vms__altstack_ensure(void)
{
    stack_t ss = {0};
    struct vms_task *t;
    int rc;

    if (alt_ready)
        return 0;
    alt_ready = 1; /* before allocating: vms_stack_alloc comes back here */
    if ((rc = vms_stack_alloc(&alt, altstack_size()))) {
        alt_ready = 0;
        return rc;
    }
    atomic_fetch_add_explicit(&vms__g.altstacks, 1, memory_order_relaxed);
    t = vms__task_of(&alt);
    t->kind = VMS_TASK_ALTSTACK;
    strcpy(t->name, "altstack"); /* the tid is looked up if a report needs it: on this very thread */
    vms__altstack_own = (struct vms_altstack_range){alt.base, (char *)alt.base + alt.size - REPORT_BYTES};
    ss.ss_sp = alt.base;
    ss.ss_size = alt.size - REPORT_BYTES;
    if (vms__altstack_kernel(&ss, &alt_prev)) {
        rc = vms__fail(errno, "sigaltstack failed: %s", strerror(errno));
        atomic_fetch_sub_explicit(&vms__g.altstacks, 1, memory_order_relaxed);
        vms_stack_free(&alt);
        vms__altstack_own = (struct vms_altstack_range){NULL, NULL};
        alt_ready = 0;
        return rc;
    }
    /*
     * A thread on a vmstack stack with no alternate stack before ours: the
     * altstack is freed with the thread's stack, once the kernel has
     * cleared the thread's tid; no system call at exit.  Anywhere else
     * (the main thread, foreign stacks, a sanitizer's altstack to give
     * back) the destructor restores the previous one at thread exit.
     */
    if ((alt_prev.ss_flags & SS_DISABLE) && (t = own_thread_task()))
        t->companion = (uint64_t)alt.id << 32 | alt.gen;
    else
        pthread_setspecific(alt_key, &alt);
    return 0;
}

int vms__altstack_drop(void)
{
    if (!alt_ready)
        return 0;
    /* One call: it fails (EPERM) while we run on the altstack, which must then not be freed. */
    if (vms__altstack_kernel(&alt_prev, NULL))
        return vms__fail(EBUSY, "the alternate signal stack is in use: not from a signal handler");
    pthread_setspecific(alt_key, NULL);
    atomic_fetch_sub_explicit(&vms__g.altstacks, 1, memory_order_relaxed);
    vms_stack_free(&alt);
    vms__altstack_own = (struct vms_altstack_range){NULL, NULL};
    alt_ready = 0;
    return 0;
}

/*
 * The program sees its own alternate stack, never ours: without this a
 * sanitizer's runtime, finding one in place, leaves it, and at thread exit
 * disables it and unmaps what it read back (ASan: UnsetAlternateSignalStack),
 * our stack's memory, which the next thread to get that stack then faults
 * on.  So the program's stack is only recorded (alt_prev) while the kernel
 * keeps ours, and what it reads back is its own, as the kernel would give
 * it.  A stack it sets is first given to the kernel, which checks it
 * (EINVAL, ENOMEM, EPERM on the alternate stack) and keeps it as it would
 * without vmstack; ours goes back at once, with the signals that could
 * arrive in between blocked (synchronous faults cannot: none can happen).
 */
bool vms__altstack_program(const stack_t *ss, stack_t *old, int *rc)
{
    stack_t mine = {.ss_sp = vms__altstack_own.lo, .ss_size = (size_t)(vms__altstack_own.hi - vms__altstack_own.lo)}, now, kept;
    stack_t was = alt_prev;
    sigset_t all, mask;

    char here;

    if (!vms__altstack_own.hi || vms__altstack_kernel(NULL, &now) || now.ss_sp != mine.ss_sp)
        return false; /* none of ours, or the program set one past this call: the kernel's own answer */
    /* On its own (a handler the preload's trampoline runs there), or on ours where it would have been on its own. */
    if (!(was.ss_flags & SS_DISABLE) &&
        ((now.ss_flags & SS_ONSTACK) || (&here > (char *)was.ss_sp && &here <= (char *)was.ss_sp + was.ss_size)))
        was.ss_flags |= SS_ONSTACK;
    *rc = 0;
    if (ss && (was.ss_flags & SS_ONSTACK) && !(now.ss_flags & SS_ONSTACK)) {
        /* As the kernel: not while running on it. */
        errno = EPERM;
        *rc = -1;
    } else if (ss) {
        sigfillset(&all);
        sigdelset(&all, SIGSEGV);
        sigdelset(&all, SIGBUS);
        sigdelset(&all, SIGILL);
        sigdelset(&all, SIGFPE);
        sigdelset(&all, SIGTRAP);
        pthread_sigmask(SIG_BLOCK, &all, &mask);
        if ((*rc = vms__altstack_kernel(ss, NULL)) == 0) {
            vms__altstack_kernel(&mine, &kept);
            kept.ss_flags &= ~SS_ONSTACK;
            alt_prev = kept;
        }
        pthread_sigmask(SIG_SETMASK, &mask, NULL);
    }
    if (*rc == 0 && old)
        *old = was;
    return true;
}

/* Thread exit: the previous altstack back (a sanitizer may unmap it), ours freed. */
static void altstack_release(void *unused)
{
    (void)unused;
    vms__altstack_drop();
}

int vms__fault_thread_init(void)
{
    int rc;

    if (alt_ready)
        return 0;
    if ((rc = install()))
        return rc;
    return vms__altstack_ensure();
}

int vms_fault_install(void)
{
    int rc = vms__ensure_init();

    if (rc || (rc = install()))
        return rc;
    vms__symbols_snapshot();
    return vms__altstack_ensure();
}

bool (*_Atomic vms__fault_tripwire_hook)(const siginfo_t *si, ucontext_t *uc);
bool (*_Atomic vms__fault_chain_hook)(int sig);

/*
 * Core calls this layer on every thread's first allocation, through a hook.
 * Registered before any constructor of the program's can allocate a stack.
 */
__attribute__((constructor(101))) static void register_thread_ready(void)
{
    vms__thread_ready_hook = vms__fault_thread_init;
}

int vms_set_overflow_policy(vms_overflow_task task, vms_overflow_policy p)
{
    if ((task != VMS_OVERFLOW_FIBER && task != VMS_OVERFLOW_THREAD && task != VMS_OVERFLOW_STACK) ||
        p < VMS_OVERFLOW_DEFAULT ||
        p > VMS_OVERFLOW_CALLBACK)
        return vms__fail(EINVAL, "overflow policy %d for task kind %d: no such policy or task kind", (int)p,
                         (int)task);
    atomic_store_explicit(&policy[task], p, memory_order_relaxed);
    return 0;
}

void vms_set_overflow_callback(vms_overflow_fn fn, void *arg)
{
    atomic_store_explicit(&policy_arg, arg, memory_order_relaxed);
    atomic_store_explicit(&policy_fn, fn, memory_order_release);
}
