/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' (test_run.sh): a program with its own SIGSEGV handler
 * catches its own faults (a NULL dereference, in main and in a thread)
 * with sigsetjmp, and prints "caught 2".  With argument "overflow" a
 * thread then overflows its stack, and the same handler catches that too
 * (on the alternate stack 'vmstack run' gives every thread): the program
 * then prints "caught its overflow" and exits 0.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bottomless.h"

static __thread sigjmp_buf where;
static volatile int caught;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
    caught++;
    siglongjmp(where, 1);
}

static void null_deref(void)
{
    if (!sigsetjmp(where, 1))
        *(volatile int *)NULL = 1;
}

static void *thread(void *arg)
{
    if (arg) {
        if (!sigsetjmp(where, 1))
            return (void *)(long)bottomless(1);
        printf("caught its overflow\n");
        return NULL;
    }
    null_deref();
    return NULL;
}

int main(int argc, char **argv)
{
    struct sigaction sa = { .sa_sigaction = on_segv, .sa_flags = SA_SIGINFO };
    pthread_t t;

    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, NULL);
    null_deref();
    if (pthread_create(&t, NULL, thread, NULL) || pthread_join(t, NULL))
        return 1;
    printf("caught %d\n", caught);
    fflush(stdout);
    if (argc > 1 && !strcmp(argv[1], "overflow")) {
        if (pthread_create(&t, NULL, thread, (void *)1) || pthread_join(t, NULL))
            return 1;
        return caught == 3 ? 0 : 1;
    }
    return caught == 2 ? 0 : 1;
}
