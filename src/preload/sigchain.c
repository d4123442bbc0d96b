/* SPDX-License-Identifier: MIT */
/*
 * The program's own SIGSEGV and SIGBUS handlers under 'vmstack run'.
 *
 * The overflow handler must stay installed for the whole run, yet a
 * program that installs its own handler (to catch its own faults, e.g.
 * with sigsetjmp) must keep it.  So sigaction() and signal() are
 * interposed for these two signals: the program's handler is recorded here
 * and what the program reads back is its own, while the kernel keeps ours.
 * The overflow handler passes faults on to the handler that was installed
 * before it, which is dispatch() below; dispatch() calls the program's
 * handler as the kernel would have.  That includes overflows, after our
 * report: a program that catches its own stack overflow (GNU m4 through
 * libsigsegv, Python's faulthandler) must go on doing so, and one that
 * returns from its handler retries the fault as it would without vmstack.
 * Without a handler of the program's, the process dies by the signal.
 *
 * vmstack's own calls to sigaction (the guard probe, the install) come
 * before chaining is switched on and go straight to libc.
 */
#include "fault/fault.h"
#include "preload/preload.h"
#include "trace/trace.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static __sighandler_t (*real_signal)(int, __sighandler_t);
static struct sigaction prog[2]; /* the program's SIGSEGV, SIGBUS */
static _Atomic bool chained;

static bool chained_signal(int sig)
{
    return (sig == SIGSEGV || sig == SIGBUS) && atomic_load_explicit(&chained, memory_order_acquire);
}

static void resolve(void)
{
    if (!real_sigaction) {
        real_sigaction = dlsym(RTLD_NEXT, "sigaction");
        real_signal = dlsym(RTLD_NEXT, "signal");
    }
}

/* The default action: a fault repeats on return and kills; a sent signal is sent again. */
static void die_by(int sig, const siginfo_t *si)
{
    struct sigaction dfl = { .sa_handler = SIG_DFL };

    sigemptyset(&dfl.sa_mask);
    real_sigaction(sig, &dfl, NULL);
    if (si->si_code <= 0)
        syscall(SYS_tgkill, getpid(), gettid(), sig);
}

static void dispatch(int sig, siginfo_t *si, void *uc)
{
    struct sigaction *p = &prog[sig == SIGBUS];
    bool info = p->sa_flags & SA_SIGINFO;
    void (*fn)(int, siginfo_t *, void *) = p->sa_sigaction;
    void (*plain)(int) = p->sa_handler;
    sigset_t mask, old;

    if (!info && (plain == SIG_DFL || plain == SIG_IGN)) {
        die_by(sig, si);
        return;
    }
    /* As the kernel would have called it: its mask added, the signal blocked unless SA_NODEFER. */
    pthread_sigmask(SIG_BLOCK, &p->sa_mask, &old);
    sigemptyset(&mask);
    if (!(p->sa_flags & SA_NODEFER))
        sigaddset(&mask, sig);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    if (p->sa_flags & SA_RESETHAND) {
        p->sa_flags &= ~SA_SIGINFO;
        p->sa_handler = SIG_DFL;
    }
    if (info)
        fn(sig, si, uc);
    else
        plain(sig);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * Before the overflow handler is installed: makes dispatch() the handler it
 * will chain to, with the program's disposition so far as its target.
 */
void vms__sigchain_init(void)
{
    struct sigaction sa = { .sa_sigaction = dispatch, .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER };

    resolve();
    sigemptyset(&sa.sa_mask);
    real_sigaction(SIGSEGV, &sa, &prog[0]);
    real_sigaction(SIGBUS, &sa, &prog[1]);
}

void vms__sigchain_undo(void)
{
    real_sigaction(SIGSEGV, &prog[0], NULL);
    real_sigaction(SIGBUS, &prog[1], NULL);
}

/* For the report's last line: does a fault passed on reach a handler of the program's? */
static bool program_handles(int sig)
{
    const struct sigaction *p = &prog[sig == SIGBUS];

    return (p->sa_flags & SA_SIGINFO) || (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN);
}

void vms__sigchain_start(void)
{
    atomic_store_explicit(&vms__fault_chain_hook, program_handles, memory_order_release);
    atomic_store_explicit(&chained, true, memory_order_release);
}

VMS_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    struct sigaction *p = &prog[sig == SIGBUS];

    resolve();
    /* While tracing, the program's handlers run on the alternate stack, clear of the tripwire. */
    if (!chained_signal(sig) && act && atomic_load_explicit(&vms__trace_armed, memory_order_relaxed))
        return vms__trace_sigaction(sig, act, old, real_sigaction);
    if (!chained_signal(sig))
        return real_sigaction(sig, act, old);
    if (old)
        *old = *p;
    if (act)
        *p = *act;
    return 0;
}

VMS_API __sighandler_t signal(int sig, __sighandler_t handler)
{
    struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART }, old;

    resolve();
    if (!chained_signal(sig) && !atomic_load_explicit(&vms__trace_armed, memory_order_relaxed))
        return real_signal(sig, handler); /* traced: through sigaction above */
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, &old);
    return old.sa_handler;
}
