/* SPDX-License-Identifier: MIT */
/*
 * The program's signal handlers under 'vmstack run' and 'trace', entered
 * on the stack the program chose.  The kernel keeps vmstack's alternate
 * stack for overflow reports, while the program sees its own (fault.c,
 * vms__altstack_program); and under trace, the kernel cannot write a
 * signal frame next to a tripwire window (it would drop the signal for a
 * SIGSEGV).  So the kernel delivers the program's signals on vmstack's
 * alternate stack, to this trampoline, which writes where the kernel
 * would have written without vmstack -- below the interrupted stack
 * pointer, or at the top of the program's own alternate stack for an
 * SA_ONSTACK handler -- the siginfo, the ucontext (its uc_stack the
 * program's) and the vector state, and calls the program's handler there,
 * its stack pointer right below: a handler that scans its own stack (a
 * conservative collector's suspend handler) finds the interrupted
 * registers and every frame above them, as plain.  Writing into a
 * tripwire from user space is an ordinary tripwire fault.  While the
 * handler runs, vmstack's alternate stack is cut below the trampoline's
 * frame, so that a signal delivered there meanwhile does not overwrite
 * it; what the handler changes in its context goes back to the kernel's
 * frame for sigreturn.
 *
 * The handler's mask is the program's less SIGSEGV and SIGBUS, which a
 * traced thread never blocks (tracepreload.c).  Async-signal-safe:
 * sigaltstack, memcpy, and the program's handler.
 */
#include "arch/arch.h"
#include "fault/fault.h"
#include "preload/preload.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

/* What call_handler and the switch to it take below the copies, before the program's handler runs. */
#define CALL_FRAME 1024

/* The program's actions that the trampoline stands for, by signal, and whether the kernel has it. */
static struct sigaction programs[NSIG];
static _Atomic bool installed[NSIG];

struct tramp {
    int sig;
    siginfo_t *si;
    ucontext_t *uc;
    const struct sigaction *act;
    char *cut;      /* the alternate stack ends here while the handler runs */
    sigset_t mask;  /* the handler's, as the kernel set it */
    int errnum;     /* errno, as the handler gets it and as it leaves it */
};

/* Every signal that can wait blocked: one delivered on vmstack's alternate stack now would land on the trampoline. */
static void block_all(sigset_t *old)
{
    sigset_t all;

    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    pthread_sigmask(SIG_BLOCK, &all, old);
}

static bool runs_handler(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) || (sa->sa_handler != SIG_DFL && sa->sa_handler != SIG_IGN);
}

/*
 * On the stack the handler runs on, entered with every signal blocked:
 * vmstack's alternate stack cut below the trampoline first, the handler's
 * own mask only while it runs, every signal blocked again before the
 * alternate stack is whole again (the trampoline's return restores the
 * interrupted mask).
 */
static void call_handler(void *p, uintptr_t unused)
{
    struct tramp *t = p;
    stack_t now, cut;
    bool cutting = false;

    (void)unused;
    if (vms__altstack_kernel(NULL, &now) == 0 && !(now.ss_flags & SS_DISABLE) && t->cut > (char *)now.ss_sp &&
        t->cut <= (char *)now.ss_sp + now.ss_size) {
        cut = now;
        cut.ss_flags &= ~SS_ONSTACK;
        cut.ss_size = (size_t)(t->cut - (char *)now.ss_sp);
        cutting = cut.ss_size >= (size_t)MINSIGSTKSZ && vms__altstack_kernel(&cut, NULL) == 0;
    }
    pthread_sigmask(SIG_SETMASK, &t->mask, NULL);
    errno = t->errnum;
    if (t->act->sa_flags & SA_SIGINFO)
        t->act->sa_sigaction(t->sig, t->si, t->uc);
    else
        t->act->sa_handler(t->sig);
    t->errnum = errno;
    block_all(NULL);
    if (cutting) {
        now.ss_flags &= ~SS_ONSTACK;
        vms__altstack_kernel(&now, NULL);
    }
}

static bool within(const stack_t *ss, uintptr_t sp)
{
    return !(ss->ss_flags & SS_DISABLE) && sp > (uintptr_t)ss->ss_sp && sp <= (uintptr_t)ss->ss_sp + ss->ss_size;
}

/*
 * Where the kernel would have written the frame without vmstack, and the
 * uc_stack it would have given: the program's own alternate stack as it
 * sees it (SS_DISABLE when it has none).
 */
static uintptr_t frame_top(const struct sigaction *act, uintptr_t sp, stack_t *uc_stack)
{
    stack_t prog = {.ss_flags = SS_DISABLE};
    int rc;

    if (!vms__altstack_program(NULL, &prog, &rc))
        prog.ss_flags = SS_DISABLE;
    *uc_stack = prog;
    uc_stack->ss_flags = (prog.ss_flags & SS_DISABLE) ? SS_DISABLE : within(&prog, sp) ? SS_ONSTACK : 0;
    if ((act->sa_flags & SA_ONSTACK) && !(prog.ss_flags & SS_DISABLE) && !within(&prog, sp))
        return ((uintptr_t)prog.ss_sp + prog.ss_size) & ~(uintptr_t)15;
    return sp - VMS_ARCH_RED_ZONE;
}

static void trampoline(int sig, siginfo_t *si, void *ctx)
{
    ucontext_t *uc = ctx;
    struct sigaction act = programs[sig];
    struct tramp t = {.sig = sig, .act = &act, .errnum = errno};
    stack_t here, uc_stack;
    size_t fsize;
    void *fp = vms__uc_fpstate(uc, &fsize);
    uintptr_t at;
    char *fp_copy = NULL;

    if (!runs_handler(&act))
        return; /* changed since the delivery: the kernel would have run the new action */
    /*
     * Not on an alternate stack (none was there), or interrupting code that
     * already ran on it (vmstack's own, or a handler): the kernel's frame is
     * right below that code's, where it would be without the trampoline.
     */
    if (vms__altstack_kernel(NULL, &here) || !(here.ss_flags & SS_ONSTACK) || within(&here, vms__uc_sp(uc))) {
        errno = t.errnum;
        if (act.sa_flags & SA_SIGINFO)
            act.sa_sigaction(sig, si, uc);
        else
            act.sa_handler(sig);
        return;
    }
    block_all(&t.mask);
    at = frame_top(&act, vms__uc_sp(uc), &uc_stack);
    if (fp) {
        at = (at - fsize) & ~(uintptr_t)63;
        fp_copy = memcpy((void *)at, fp, fsize);
    }
    at = (at - sizeof *uc) & ~(uintptr_t)15;
    t.uc = memcpy((void *)at, uc, sizeof *uc);
    t.uc->uc_stack = uc_stack;
    at = (at - sizeof *si) & ~(uintptr_t)15;
    t.si = memcpy((void *)at, si, sizeof *si);
    if (fp)
        vms__uc_set_fpstate(t.uc, fp_copy);
    /* call_handler's own frame there, touched from here: a tripwire in it faults now, onto this stack. */
    for (uintptr_t a = at - 1; a >= at - CALL_FRAME; a -= 64)
        (void)*(volatile const char *)a;
    t.cut = (char *)((vms__arch_sp() - VMS_ARCH_RED_ZONE) & ~(uintptr_t)15);
    vms__call_on_stack((void *)at, call_handler, &t);
    uc_stack = uc->uc_stack;
    memcpy(uc, t.uc, sizeof *uc);
    uc->uc_stack = uc_stack;
    if (fp) {
        memcpy(fp, fp_copy, fsize);
        vms__uc_set_fpstate(uc, fp);
    }
    errno = t.errnum;
}

bool vms__tramp_wrap(int sig, const struct sigaction *act, struct sigaction *out)
{
    if (sig <= 0 || sig >= NSIG || sig == SIGSEGV || sig == SIGBUS || !runs_handler(act))
        return false;
    programs[sig] = *act;
    *out = *act;
    out->sa_sigaction = trampoline;
    out->sa_flags |= SA_SIGINFO | SA_ONSTACK;
    sigdelset(&out->sa_mask, SIGSEGV);
    sigdelset(&out->sa_mask, SIGBUS);
    return true;
}

/*
 * The kernel's action read back as the program's: the trampoline as the
 * handler it stands for, or, after a one-shot (SA_RESETHAND) delivery
 * reset it, SIG_DFL with the flags the program gave.
 */
static void unwrap(struct sigaction *kernel, const struct sigaction *program, bool ours)
{
    bool tramp = (kernel->sa_flags & SA_SIGINFO) && kernel->sa_sigaction == trampoline;

    if (!tramp && !(ours && kernel->sa_handler == SIG_DFL))
        return;
    kernel->sa_flags = (kernel->sa_flags & ~(SA_SIGINFO | SA_ONSTACK)) | (program->sa_flags & (SA_SIGINFO | SA_ONSTACK));
    if (!tramp)
        return;
    if (program->sa_flags & SA_SIGINFO)
        kernel->sa_sigaction = program->sa_sigaction;
    else
        kernel->sa_handler = program->sa_handler;
    kernel->sa_mask = program->sa_mask;
    sigdelset(&kernel->sa_mask, SIGKILL);
    sigdelset(&kernel->sa_mask, SIGSTOP);
}

int vms__tramp_sigaction(int sig, const struct sigaction *act, struct sigaction *old,
                         int (*real)(int, const struct sigaction *, struct sigaction *))
{
    struct sigaction sa, was = {0};
    bool ours = false, wrap = false;
    int rc;

    if (sig > 0 && sig < NSIG) {
        was = programs[sig];
        ours = atomic_load(&installed[sig]);
    }
    if (act && (wrap = vms__tramp_wrap(sig, act, &sa)))
        act = &sa;
    rc = real(sig, act, old);
    if (rc == 0 && act && sig > 0 && sig < NSIG)
        atomic_store(&installed[sig], wrap);
    if (rc == 0 && old)
        unwrap(old, &was, ours);
    return rc;
}

void vms__tramp_start(int (*real)(int, const struct sigaction *, struct sigaction *))
{
    struct sigaction sa, tramp;

    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGSEGV && sig != SIGBUS && real(sig, NULL, &sa) == 0 && vms__tramp_wrap(sig, &sa, &tramp) &&
            real(sig, &tramp, NULL) == 0)
            atomic_store(&installed[sig], true);
}
