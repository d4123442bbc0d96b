/* SPDX-License-Identifier: MIT */
/*
 * Where a program's signal handlers run (test_run.sh, case handler_stack):
 * one without SA_ONSTACK on the interrupted stack, in the main thread and
 * in a thread; one with SA_ONSTACK on the program's own alternate stack.
 * Each prints where its frame is, what uc_stack says, and which of a few
 * signals its mask blocks: the same lines plain, under run and under trace.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

static char *lo, *hi;        /* the stack of the thread that raises the signal */
static char alt[1 << 16];    /* the program's own alternate stack */
static char line[256];

static const char *where(const void *p)
{
    if ((char *)p >= alt && (char *)p < alt + sizeof alt)
        return "own altstack";
    if ((char *)p >= lo && (char *)p < hi)
        return "interrupted stack";
    return "elsewhere";
}

static void handler(int sig, siginfo_t *si, void *ctx)
{
    volatile char here = 0;
    ucontext_t *uc = ctx;
    sigset_t now;

    (void)si;
    pthread_sigmask(SIG_BLOCK, NULL, &now);
    snprintf(line, sizeof line, "sig %d: frame on %s, uc_stack %s flags %d, blocks USR1 %d USR2 %d TERM %d", sig,
             where((const void *)&here), uc->uc_stack.ss_sp == alt ? "own altstack" : "other",
             uc->uc_stack.ss_flags, sigismember(&now, SIGUSR1), sigismember(&now, SIGUSR2), sigismember(&now, SIGTERM));
}

/* The current thread's stack, from pthread_getattr_np. */
static void this_stack(void)
{
    pthread_attr_t a;
    size_t size;
    void *base;

    pthread_getattr_np(pthread_self(), &a);
    pthread_attr_getstack(&a, &base, &size);
    pthread_attr_destroy(&a);
    lo = base;
    hi = (char *)base + size;
}

static void raise_both(const char *who)
{
    this_stack();
    raise(SIGUSR1);
    printf("%s: %s\n", who, line);
    raise(SIGUSR2);
    printf("%s: %s\n", who, line);
}

static void *thread(void *arg)
{
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};

    (void)arg;
    sigaltstack(&ss, NULL);
    raise_both("thread");
    return NULL;
}

int main(void)
{
    struct sigaction plain = {.sa_sigaction = handler, .sa_flags = SA_SIGINFO};
    struct sigaction onstack = {.sa_sigaction = handler, .sa_flags = SA_SIGINFO | SA_ONSTACK};
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
    pthread_t t;

    sigemptyset(&plain.sa_mask);
    sigaddset(&plain.sa_mask, SIGTERM);
    sigemptyset(&onstack.sa_mask);
    sigaction(SIGUSR1, &plain, NULL);
    sigaction(SIGUSR2, &onstack, NULL);
    sigaltstack(&ss, NULL);
    raise_both("main");
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    if (pthread_create(&t, NULL, thread, NULL) || pthread_join(t, NULL))
        return 1;
    return 0;
}
