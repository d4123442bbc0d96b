/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' (test_run_same.sh): the calls other than sigaction and
 * signal that set a disposition (bsd_signal, ssignal, sysv_signal, sigset
 * with SIG_HOLD too, sigignore, siginterrupt), on SIGSEGV and SIGBUS, which
 * vmstack keeps for itself, and SIGUSR1.  What each returns, what sigaction
 * reads back after it, and what a signal sent then does are printed, and
 * must be the same plain, under run and under trace.  SIG_HOLD is tried on
 * SIGUSR1 only: vmstack keeps SIGSEGV and SIGBUS out of every signal mask
 * (docs/limits.md).
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

/* Old calls, which is the point: real programs still make them. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
__sighandler_t bsd_signal(int sig, __sighandler_t handler); /* not declared under _GNU_SOURCE */

static volatile sig_atomic_t caught;

static void handler(int sig)
{
    caught = sig;
}

static const char *name(__sighandler_t h)
{
    return h == SIG_DFL ? "SIG_DFL" : h == SIG_IGN ? "SIG_IGN" : h == SIG_HOLD ? "SIG_HOLD" :
           h == SIG_ERR ? "SIG_ERR" : h == handler ? "handler" : "other";
}

/* The disposition as sigaction reads it back, and the signal sent (not when it would kill). */
static void show(const char *what, __sighandler_t ret, int sig, int send)
{
    struct sigaction sa;
    sigset_t mask;

    sigaction(sig, NULL, &sa);
    sigprocmask(SIG_BLOCK, NULL, &mask);
    caught = 0;
    if (send)
        kill(getpid(), sig);
    /* The kernel's own flags (SA_RESTORER: glibc's) are left out: only what the program set. */
    printf("%-24s sig %2d returned %-8s now %-8s flags %#010x blocked %d caught %d\n", what, sig, name(ret),
           name(sa.sa_handler), (unsigned)sa.sa_flags & ~0x04000000u, sigismember(&mask, sig), (int)caught);
}

static void each(int sig, int hold)
{
    sigset_t set;

    show("bsd_signal handler", bsd_signal(sig, handler), sig, 1);
    show("ssignal SIG_IGN", ssignal(sig, SIG_IGN), sig, 1);
    show("sysv_signal handler", sysv_signal(sig, handler), sig, 1);
    show("after the one shot", SIG_DFL, sig, 0);
    show("sigset handler", sigset(sig, handler), sig, 1);
    show("siginterrupt 1", siginterrupt(sig, 1) ? SIG_ERR : SIG_DFL, sig, 0);
    show("siginterrupt 0", siginterrupt(sig, 0) ? SIG_ERR : SIG_DFL, sig, 0);
    if (hold) {
        show("sigset SIG_HOLD", sigset(sig, SIG_HOLD), sig, 0);
        show("sigset SIG_HOLD again", sigset(sig, SIG_HOLD), sig, 0);
    }
    show("sigset SIG_IGN", sigset(sig, SIG_IGN), sig, 1);
    show("sigset SIG_DFL", sigset(sig, SIG_DFL), sig, 0);
    show("sigignore", sigignore(sig) ? SIG_ERR : SIG_DFL, sig, 1);
    show("signal SIG_DFL", signal(sig, SIG_DFL), sig, 0);
    sigemptyset(&set);
    sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, NULL);
}

int main(void)
{
    each(SIGSEGV, 0);
    each(SIGBUS, 0);
    each(SIGUSR1, 1);
    show("sysv_signal SIG_ERR", sysv_signal(SIGUSR1, SIG_ERR), SIGUSR1, 0);
    return 0;
}
