/* SPDX-License-Identifier: MIT */
/* A recursion without end, 1 KiB a frame: the overflow the run_* programs make. */
#ifndef VMS_TEST_BOTTOMLESS_H
#define VMS_TEST_BOTTOMLESS_H

#include <string.h>

static __attribute__((noinline)) int bottomless(int n)
{
    volatile char frame[1024];

    memset((char *)frame, n, sizeof frame);
    if (n == 0) /* never: n counts up from 1; keeps the compiler from calling this infinite */
        return 0;
    return bottomless(n + 1) + frame[3];
}

#endif
