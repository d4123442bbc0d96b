/* SPDX-License-Identifier: MIT */
/*
 * Stack size classes: every requested size is rounded up to one of a fixed
 * set, so that a coroutine library asking for arbitrary sizes (a page more
 * here, 100000 bytes there) never runs out of regions.
 *
 * Four classes per power of two: 1, 1.25, 1.5 and 1.75 times it, from
 * 16 KiB to 1 GiB (65 classes: 16, 20, 24, 28, 32, 40, 48, 56, 64, 80 KiB,
 * ... 8, 10, 12, 14 MiB, ... 1 GiB).  Powers of two, which most programs
 * use (64 KiB fibers, 8 MiB threads), are classes themselves.  The cost of
 * rounding: a stack has up to 25% more usable bytes than asked for, which
 * costs address space only (untouched pages use no memory), and an
 * overflow is caught that much deeper.  A region per class keeps the O(1)
 * address-to-slot division the fault handler relies on.
 */
#include "core/internal.h"

/* One region per class: 1 + 4 classes for each of the 16 doublings from 16 KiB to 1 GiB. */
_Static_assert(VMS_MAX_SIZES == 1 + 4 * 16, "a region for every size class");

size_t vms__size_class(size_t size)
{
    size_t octave, step;

    if (size > VMS_MAX_STACK)
        return 0;
    if (size <= VMS_MIN_STACK)
        return VMS_MIN_STACK;
    /*
     * The power of two below size, then quarter steps of it: 2^k < size <=
     * 2^(k+1).  Masks, not a division: this runs on every allocation.
     */
    octave = (size_t)1 << (63 - __builtin_clzll((unsigned long long)(size - 1)));
    step = octave >> 2;
    return (size + step - 1) & ~(step - 1);
}
