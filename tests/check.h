/* SPDX-License-Identifier: MIT */
/* Minimal assertions for the tests: print where and what, then exit 1. */
#ifndef VMS_CHECK_H
#define VMS_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#define CHECK_EQ(a, b)                                                                 \
    do {                                                                               \
        long long a_ = (long long)(a), b_ = (long long)(b);                            \
        if (a_ != b_) {                                                                \
            fprintf(stderr, "%s:%d: check failed: %s == %s (%lld != %lld)\n",          \
                    __FILE__, __LINE__, #a, #b, a_, b_);                               \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

#endif
