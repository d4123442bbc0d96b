/* SPDX-License-Identifier: MIT */
/*
 * A program with known frames for tests/test_trace.sh: a thread named
 * "frames" and the main thread each run
 *
 *     frames_f1 (1000-byte array) -> frames_f2 (3000) -> frames_f3 (200)
 *         -> frames_recurse (512) x (depth + 1)
 *
 * with every array written, so that it is really on the stack.  At the
 * deepest point it measures the truth the tracer is checked against: the
 * distance from the top of the stack to the stack pointer, printed as
 * "truth THREAD BYTES".  The script compares the frame sizes with gcc's
 * -fstack-usage for the same build.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sp.h"

#define NOINLINE __attribute__((noinline, noclone))

static __thread uintptr_t deepest; /* lowest stack pointer seen */

NOINLINE int frames_recurse(int n)
{
    volatile unsigned char buf[512];

    buf[0] = (unsigned char)n;
    buf[511] = (unsigned char)n;
    if (n == 0) {
        deepest = stack_pointer();
        return buf[0];
    }
    /* Used after the call: no tail call. */
    return frames_recurse(n - 1) + buf[511];
}

NOINLINE int frames_f3(int depth)
{
    volatile unsigned char buf[200];

    buf[0] = 3;
    buf[199] = 3;
    return frames_recurse(depth) + buf[0] + buf[199];
}

NOINLINE int frames_f2(int depth)
{
    volatile unsigned char buf[3000];

    buf[0] = 2;
    buf[2999] = 2;
    return frames_f3(depth) + buf[0] + buf[2999];
}

NOINLINE int frames_f1(int depth)
{
    volatile unsigned char buf[1000];

    buf[0] = 1;
    buf[999] = 1;
    return frames_f2(depth) + buf[0] + buf[999];
}

/*
 * Top of the calling thread's stack, as vmstack counts it: glibc's for a
 * thread (its descriptor and TLS included); for the main thread the end of
 * the [stack] mapping (arguments and environment included), which is above
 * glibc's idea of it.
 */
static uintptr_t stack_top(bool main_thread)
{
    pthread_attr_t a;
    char line[512];
    void *lo, *hi;
    size_t size;
    FILE *f;

    if (main_thread) {
        if (!(f = fopen("/proc/self/maps", "r")))
            abort();
        while (fgets(line, sizeof line, f))
            if (strstr(line, "[stack]") && sscanf(line, "%p-%p", &lo, &hi) == 2) {
                fclose(f);
                return (uintptr_t)hi;
            }
        abort();
    }
    if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &size))
        abort();
    pthread_attr_destroy(&a);
    return (uintptr_t)lo + size;
}

static void run_chain(const char *who, int depth)
{
    uintptr_t top = stack_top(!strcmp(who, "main"));

    if (frames_f1(depth) < 0)
        abort();
    printf("truth %s %lu\n", who, (unsigned long)(top - deepest));
}

static void *frames_thread(void *arg)
{
    pthread_setname_np(pthread_self(), "frames");
    run_chain("frames", (int)(intptr_t)arg);
    return NULL;
}

int main(int argc, char **argv)
{
    int depth = argc > 1 ? atoi(argv[1]) : 40;
    pthread_t t;

    if (pthread_create(&t, NULL, frames_thread, (void *)(intptr_t)depth) || pthread_join(t, NULL))
        return 1;
    run_chain("main", depth / 2);
    return 0;
}
