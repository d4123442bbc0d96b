/* SPDX-License-Identifier: MIT */
/*
 * What the overflow tests share: functions that overflow a stack in the
 * ways the acceptance asks for, and the scenario dispatcher.  The functions
 * are global and noinline/noclone so that they keep their names in reports.
 */
#ifndef VMS_OVERFLOW_H
#define VMS_OVERFLOW_H

#include "child.h"
#include "vmstack.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NOINLINE __attribute__((noinline, noclone))

/* Recursion with a 128-byte frame; the volatile read after the call keeps it a real recursion. */
NOINLINE long recurse(long n)
{
    volatile char pad[128];
    long r;

    pad[n & 127] = (char)n;
    if (n == 0)
        return 0;
    r = recurse(n - 1);
    return r + n + pad[n & 127];
}

/* recurse(n) computed without a stack, for checking results. */
static inline long recurse_expected(long n)
{
    long r = 0;

    for (long i = 1; i <= n; i++)
        r += i + (signed char)(char)i;
    return r;
}

/* Recursion that calls snprintf at every level: the guard is hit inside libc. */
NOINLINE long recurse_printf(long n)
{
    char buf[64];
    long r;

    snprintf(buf, sizeof buf, "%ld %g %s", n, (double)n / 3, "level");
    if (n == 0)
        return buf[0];
    r = recurse_printf(n - 1);
    return r + buf[1];
}

/* One frame of n bytes whose lowest byte is written first. */
NOINLINE int big_frame(size_t n)
{
    volatile char buf[n];

    buf[0] = 1;
    buf[n - 1] = 2;
    return buf[0] + buf[n - 1];
}

/* A NULL dereference the compiler cannot see through, and UBSan lets happen. */
__attribute__((no_sanitize_undefined)) static inline void null_write(void)
{
    volatile int *volatile p = NULL;

    *p = 1;
}

/*
 * Thread attributes for vms_thread_create: the default stack, except under
 * ThreadSanitizer, whose runtime wants about 1 MiB of static TLS at the
 * top of every thread stack.
 */
static inline const pthread_attr_t *thread_attr(void)
{
#ifdef VMS_TSAN
    static pthread_attr_t a;

    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, (size_t)4 << 20);
    return &a;
#else
    return NULL;
#endif
}

/* Dispatch: argv[1] names the scenario. */
struct scenario {
    const char *name;
    void (*run)(void);
};

static inline int run_scenario(int argc, char **argv, const struct scenario *list)
{
    for (const struct scenario *s = list; argc > 1 && s->name; s++)
        if (strcmp(s->name, argv[1]) == 0) {
            s->run();
            printf("%s: ok\n", s->name);
            return 0;
        }
    fprintf(stderr, "usage: %s SCENARIO; scenarios:", argv[0]);
    for (const struct scenario *s = list; s->name; s++)
        fprintf(stderr, " %s", s->name);
    fprintf(stderr, "\n");
    return 2;
}

/* Parses "(stack is 0xLO..0xHI)" and the fault address of the index-th report. */
static inline void report_addresses(const char *text, int index, uintptr_t *fault, uintptr_t *lo, uintptr_t *hi)
{
    const char *p = text;

    for (int i = 0; i <= index; i++) {
        p = strstr(p, "vmstack: BUG: stack guard page was hit at ");
        CHECK_TEXT(p, text, "BUG line");
        p += 1;
    }
    CHECK(sscanf(p - 1, "vmstack: BUG: stack guard page was hit at %lx (stack is %lx..%lx)", fault, lo, hi) == 3);
}

#endif
