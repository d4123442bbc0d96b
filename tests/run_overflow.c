/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' (test_run.sh): a thread named "overflower" with start
 * routine overflow_thread recurses without end; or, with argument "main",
 * the main thread does; with "reopen FILE", fd 2 is first reopened as the
 * program's own data file FILE; with "low FILE", the program execs itself
 * with only fds 0 to 2 open, opens FILE, which must get fd 3 as it does
 * without vmstack, and copies it onto 4 and 5.  With "jump", a thread
 * "jumper" makes one frame that jumps its own guard and the stack of the
 * thread "good" made just before it, into the middle of good's guard (it
 * exits 3 when good's stack is not right below its own, one guard apart).
 * Under 'vmstack run' this ends in the overflow report and death by
 * SIGSEGV.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bottomless.h"

static void *overflow_thread(void *arg)
{
    pthread_setname_np(pthread_self(), "overflower");
    return (void *)(long)bottomless(*(int *)arg);
}

static char *good_lo, *good_hi;
static volatile int good_ready;

static void *good_thread(void *unused)
{
    pthread_attr_t a;
    size_t size;
    void *lo;

    (void)unused;
    pthread_setname_np(pthread_self(), "good");
    if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &size))
        exit(4);
    good_lo = lo;
    good_hi = (char *)lo + size;
    __atomic_store_n(&good_ready, 1, __ATOMIC_RELEASE);
    for (;;)
        pause();
}

/* One frame of n bytes whose lowest byte is written first. */
static __attribute__((noinline)) int big_frame(size_t n)
{
    volatile char buf[n];

    buf[0] = 1;
    buf[n - 1] = 2;
    return buf[0] + buf[n - 1];
}

static void *jump_thread(void *unused)
{
    pthread_attr_t a;
    size_t size, guard;
    void *lo;
    char here = 0;

    (void)unused;
    pthread_setname_np(pthread_self(), "jumper");
    if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &size))
        exit(4);
    guard = (size_t)((char *)lo - good_hi);
    if ((char *)lo <= good_hi || guard > ((size_t)1 << 30)) {
        fprintf(stderr, "jumper: good's stack %p..%p is not right below mine at %p\n", (void *)good_lo,
                (void *)good_hi, lo);
        exit(3);
    }
    return (void *)(intptr_t)big_frame((size_t)(&here - good_lo) + guard / 2);
}

static int jump(void)
{
    pthread_t good, jumper;

    if (pthread_create(&good, NULL, good_thread, NULL))
        return 1;
    while (!__atomic_load_n(&good_ready, __ATOMIC_ACQUIRE))
        usleep(1000);
    if (pthread_create(&jumper, NULL, jump_thread, NULL) || pthread_join(jumper, NULL))
        return 1;
    return 0;
}

int main(int argc, char **argv)
{
    int one = 1;
    pthread_t t;

    if (argc > 1 && !strcmp(argv[1], "main"))
        return bottomless(one);
    if (argc > 1 && !strcmp(argv[1], "jump"))
        return jump();
    if (argc > 2 && !strcmp(argv[1], "reopen")) {
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 2) != 2 || write(2, "the program's own\n", 18) != 18)
            return 1;
        close(fd);
    }
    if (argc > 2 && !strcmp(argv[1], "low") && !getenv("RUN_OVERFLOW_LOW")) {
        /* Whatever the test harness left open goes; the new image starts with 0, 1 and 2. */
        setenv("RUN_OVERFLOW_LOW", "1", 1);
        close_range(3, ~0u, 0);
        execv("/proc/self/exe", argv);
        return 1;
    }
    if (argc > 2 && !strcmp(argv[1], "low")) {
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd != 3 || dup2(fd, 4) != 4 || dup2(fd, 5) != 5 || write(fd, "the program's own\n", 18) != 18)
            return 1;
    }
    if (pthread_create(&t, NULL, overflow_thread, &one) || pthread_join(t, NULL))
        return 1;
    return 0;
}
