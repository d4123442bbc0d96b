/* SPDX-License-Identifier: MIT */
/*
 * Size classes: any size up to 1 GiB is rounded up to a class that holds
 * it, at most 25% larger and never smaller than 16 KiB; stacks of hundreds
 * of different sizes (what a coroutine library asking for arbitrary sizes
 * does) all come from the 65 classes' regions, with usable bytes as
 * large as the handle says (the class in whole pages, whatever the page
 * size); a size above 1 GiB is refused.
 */
#include "check.h"
#include "core/internal.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

static void rounding(void)
{
    size_t prev = 0, classes = 0;

    for (size_t size = 1; size <= VMS_MAX_STACK; size += size < ((size_t)1 << 20) ? 1000 : size / 7) {
        size_t c = vms__size_class(size);
        /* Classes are the same at every page size (4 KiB multiples); a stack is its class in whole pages. */
        CHECK(c >= size && c >= VMS_MIN_STACK && c % 4096 == 0);
        CHECK(size <= VMS_MIN_STACK || c <= size + size / 4);
        CHECK(vms__size_class(c) == c); /* a class is its own class */
        CHECK(c >= prev);
        prev = c;
    }
    for (size_t c = VMS_MIN_STACK; c; c = vms__size_class(c + 1))
        classes++;
    CHECK_EQ(classes, VMS_MAX_SIZES);
    CHECK_EQ(vms__size_class(VMS_MAX_STACK + 1), 0);
    CHECK_EQ(vms__size_class((size_t)64 << 10), (size_t)64 << 10);
    CHECK_EQ(vms__size_class(((size_t)64 << 10) + 1), (size_t)80 << 10);
    CHECK_EQ(vms__size_class(100000), (size_t)112 << 10);
}

#define NSIZES 300

/* A class in whole pages of the run-time page size (16 or 64 KiB on some arm64 kernels). */
static size_t in_pages(size_t c)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);

    return (c + pg - 1) / pg * pg;
}

static void many_sizes(void)
{
    static vms_stack st[NSIZES];
    vms_stack big;
    vms_config cfg;
    vms_stats stats;

    vms_config_defaults(&cfg);
    cfg.reserve = (size_t)2 << 30; /* 65 regions of 2 GiB, not of 256 GiB, for the sanitizers' sake */
    CHECK_EQ(vms_init(&cfg), 0);
    for (int i = 0; i < NSIZES; i++) {
        size_t want = 1000 + (size_t)i * 7777 + ((size_t)(i % 5) << 22);
        CHECK_EQ(vms_stack_alloc(&st[i], want), 0);
        CHECK(st[i].size == in_pages(vms__size_class(want)));
        memset(st[i].base, 0xa5, 64);
        ((char *)vms_stack_top(&st[i]))[-1] = 1; /* the usable bytes go up to the top */
    }
    CHECK_EQ(vms_stack_alloc(&big, (size_t)1 << 30), 0);
    CHECK_EQ(big.size, (size_t)1 << 30);
    CHECK_EQ(vms_stack_free(&big), 0);
    vms_stats_get(&stats);
    CHECK(stats.sizes > 16 && stats.sizes <= VMS_MAX_SIZES);
    for (int i = 0; i < NSIZES; i++)
        CHECK_EQ(vms_stack_free(&st[i]), 0);
    CHECK_EQ(vms_stack_alloc(&st[0], ((size_t)1 << 30) + 1), -EINVAL);
}

int main(void)
{
    rounding();
    many_sizes();
    printf("test_sizeclass: ok\n");
    return 0;
}
