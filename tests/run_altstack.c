/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' and 'trace' (test_run_same.sh): what a program sees of
 * its alternate signal stack, one line each, and threads that run one
 * after the other, each recursing, so that a thread's stack and alternate
 * stack are reused by the next.  Each thread reads back its alternate
 * stack, sets one of its own, has the kernel refuse bad ones (EINVAL,
 * ENOMEM, EPERM from a handler running on it), disables it and unmaps it:
 * what AddressSanitizer's runtime does to every thread, built with
 * -fsanitize=address or not.  The main thread recurses last; with argument
 * "overflow", a last thread recurses without end instead.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#define THREADS 8
#define OWN_SIZE (64 * 1024)

static char *own_base;

static const char *err(int rc)
{
    return rc ? strerrorname_np(errno) : "0";
}

/* The stack as read back: flags, and where it is relative to the one the thread set. */
static void show(const char *who, const char *when)
{
    stack_t ss;

    if (sigaltstack(NULL, &ss)) {
        printf("%s %s: sigaltstack failed: %s\n", who, when, strerrorname_np(errno));
        return;
    }
    printf("%s %s: flags %#x, %s, size %s\n", who, when, (unsigned)ss.ss_flags,
           !ss.ss_sp ? "no stack" : ss.ss_sp == own_base ? "its own" : "another",
           !ss.ss_size ? "0" : ss.ss_size == OWN_SIZE ? "its own" : "another");
}

static __attribute__((noinline)) int recurse(int n)
{
    volatile char frame[1024];

    memset((char *)frame, n, sizeof frame);
    return n > 1 ? recurse(n - 1) + frame[n % sizeof frame] : frame[0];
}

/* On the alternate stack: it reads back as in use, and cannot be replaced. */
static void on_usr1(int sig)
{
    stack_t other = { .ss_sp = own_base, .ss_size = OWN_SIZE };

    (void)sig;
    show("handler", "on it");
    printf("handler: replacing it: %s\n", err(sigaltstack(&other, NULL)));
}

static void *bottomless(void *arg)
{
    (void)arg;
    printf("bottomless: %d\n", recurse(1 << 30));
    return NULL;
}

static void *thread(void *arg)
{
    char who[16];
    stack_t ss = { .ss_size = OWN_SIZE }, bad, old;

    snprintf(who, sizeof who, "thread %d", (int)(long)arg);
    show(who, "at start");
    ss.ss_sp = own_base = mmap(NULL, OWN_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("%s: set: %s\n", who, err(sigaltstack(&ss, &old)));
    printf("%s: before it: flags %#x\n", who, (unsigned)old.ss_flags);
    show(who, "set");
    bad = ss;
    bad.ss_flags = 0x1234;
    printf("%s: bad flags: %s\n", who, err(sigaltstack(&bad, NULL)));
    bad = ss;
    bad.ss_size = 1;
    printf("%s: too small: %s\n", who, err(sigaltstack(&bad, NULL)));
    show(who, "still");
    raise(SIGUSR1);
    printf("%s: recursed: %d\n", who, recurse(100 + 50 * (int)(long)arg) != 1000);
    ss = (stack_t){ .ss_flags = SS_DISABLE };
    printf("%s: disable: %s\n", who, err(sigaltstack(&ss, &old)));
    printf("%s: it was %s\n", who, old.ss_sp == own_base && old.ss_size == OWN_SIZE ? "its own" : "another");
    show(who, "disabled");
    munmap(own_base, OWN_SIZE);
    return NULL;
}

int main(int argc, char **argv)
{
    struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_ONSTACK };
    pthread_t t;

    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, NULL);
    show("main", "at start");
    for (long i = 0; i < THREADS; i++) {
        if (pthread_create(&t, NULL, thread, (void *)i)) {
            printf("pthread_create failed\n");
            return 1;
        }
        pthread_join(t, NULL);
    }
    fflush(stdout);
    if (argc > 1 && !strcmp(argv[1], "overflow") && !pthread_create(&t, NULL, bottomless, NULL))
        pthread_join(t, NULL);
    printf("main: recursed: %d\n", recurse(3000) != 1000);
    show("main", "at exit");
    return 0;
}
