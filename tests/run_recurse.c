/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' (test_run.sh): a thread recurses N levels (argv[1],
 * default 100) of 1 KiB frames, then prints how deep it really went,
 * measured from the top of its stack, for comparison with the usage table.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *deepest;

static __attribute__((noinline)) int recurse(int n)
{
    volatile char frame[1024];

    memset((char *)frame, 0x5a, sizeof frame);
    if (n > 1)
        return recurse(n - 1) + frame[0];
    deepest = (char *)frame;
    return frame[0];
}

static void *deep_thread(void *arg)
{
    pthread_attr_t a;
    void *lo;
    size_t size;

    recurse(*(int *)arg);
    pthread_getattr_np(pthread_self(), &a);
    pthread_attr_getstack(&a, &lo, &size);
    printf("%zu\n", (size_t)((char *)lo + size - deepest));
    return NULL;
}

int main(int argc, char **argv)
{
    int levels = argc > 1 ? atoi(argv[1]) : 100;
    pthread_t t;

    if (pthread_create(&t, NULL, deep_thread, &levels) || pthread_join(t, NULL))
        return 1;
    return 0;
}
