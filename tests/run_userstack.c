/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' (test_run.sh): a thread on a stack of the program's own
 * (pthread_attr_setstack, 256 KiB from mmap, with a PROT_NONE page below)
 * recurses 40 levels of 1 KiB frames; it must run untouched and be
 * reported as "user stack".  With argument "overflow" it recurses without
 * end: the overflow report names it.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define STACK (256 << 10)

static __attribute__((noinline)) int recurse(int n)
{
    volatile char frame[1024];

    memset((char *)frame, 0x5a, sizeof frame);
    return n > 1 ? recurse(n - 1) + frame[0] : frame[0];
}

static void *user_thread(void *arg)
{
    return (void *)(long)recurse(*(int *)arg);
}

int main(int argc, char **argv)
{
    char *map = mmap(NULL, 4096 + STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *stack = map + 4096;
    int levels = argc > 1 && !strcmp(argv[1], "overflow") ? 1 << 30 : 40;
    pthread_attr_t a;
    pthread_t t;
    void *ret;

    if (map == MAP_FAILED || mprotect(map, 4096, PROT_NONE))
        return 1;
    pthread_attr_init(&a);
    pthread_attr_setstack(&a, stack, STACK);
    if (pthread_create(&t, &a, user_thread, &levels) || pthread_join(t, &ret))
        return 1;
    printf("user stack ok %ld\n", (long)ret);
    return 0;
}
