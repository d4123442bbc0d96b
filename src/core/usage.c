/* SPDX-License-Identifier: MIT */
/*
 * Stack usage without painting, as the kernel's stack_not_used(): stacks
 * start zero-filled, so the deepest non-zero word marks the high-water
 * mark.  mincore() tells which pages were ever touched, so only the deepest
 * resident page needs scanning, and untouched pages are never faulted in.
 */
#include "core/internal.h"
#include "core/sanitizer.h"

#include <errno.h>
#include <sys/mman.h>

#define PAGES_PER_CALL 256

/*
 * Reads raw stack memory that may belong to a running task: ASan would see
 * its poisoned redzones, so this function is not instrumented.
 */
__attribute__((no_sanitize_address)) static const char *first_nonzero(const char *p, size_t len, bool at_base)
{
    const volatile uint64_t *w = (const volatile uint64_t *)p;
    /* A fiber's canary is not usage, as the kernel's stack_not_used() skips STACK_END_MAGIC. */
    size_t i = at_base && w[0] == VMS_STACK_END_MAGIC;

    for (; i < len / sizeof *w; i++)
        if (w[i])
            return (const char *)&w[i];
    return NULL;
}

size_t vms__used_bytes(const char *base, size_t size)
{
    size_t pg = vms__g.page, npages = size / pg;
    unsigned char vec[PAGES_PER_CALL];

    for (size_t first = 0; first < npages; first += PAGES_PER_CALL) {
        size_t n = npages - first < PAGES_PER_CALL ? npages - first : PAGES_PER_CALL;
        if (mincore((void *)(base + first * pg), n * pg, vec))
            return 0;
        for (size_t i = 0; i < n; i++) {
            const char *hit;
            if (!(vec[i] & 1))
                continue;
            vms__san_quiet_begin();
            hit = first_nonzero(base + (first + i) * pg, pg, first + i == 0);
            vms__san_quiet_end();
            if (hit)
                return (size_t)(base + size - hit);
        }
    }
    return 0;
}

/*
 * As vms__used_bytes, but looking from the top down, in windows of 32 to
 * 256 pages, and stopping below the deepest resident page once HOLE_PAGES
 * pages in a row are not resident: the cost follows the use, not the stack
 * size (mincore costs per page walked, some microseconds for 8 MiB), which
 * matters for 'vmstack run', where every thread has an 8 MiB stack and is
 * measured when it ends: one mincore call for a thread that used less than
 * 64 KiB.  The price: a frame that leaves HOLE_PAGES pages (64 KiB) of its
 * memory untouched hides anything deeper.  Code built with
 * -fstack-clash-protection touches every page of its frames: no such holes.
 */
#define HOLE_PAGES 16

size_t vms__used_bytes_top(const char *base, size_t size)
{
    size_t pg = vms__g.page, hi = size / pg, win = 2 * HOLE_PAGES, hole = 0;
    size_t lowest = SIZE_MAX; /* page index of the deepest resident page */
    unsigned char vec[PAGES_PER_CALL];

    while (hi > 0 && hole < HOLE_PAGES) {
        size_t lo = hi > win ? hi - win : 0;
        if (mincore((void *)(base + lo * pg), (hi - lo) * pg, vec))
            return 0;
        for (size_t i = hi - lo; i-- > 0 && hole < HOLE_PAGES;) {
            if (vec[i] & 1) {
                lowest = lo + i;
                hole = 0;
            } else {
                hole++;
            }
        }
        hi = lo;
        win = win * 2 < PAGES_PER_CALL ? win * 2 : PAGES_PER_CALL;
    }
    for (size_t p = lowest; p < size / pg; p++) {
        const char *hit;
        vms__san_quiet_begin();
        hit = first_nonzero(base + p * pg, pg, p == 0);
        vms__san_quiet_end();
        if (hit)
            return (size_t)(base + size - hit);
    }
    return 0;
}

size_t vms_stack_used(const vms_stack *st)
{
    struct vms_region *r;
    struct vms_slot *s = vms__handle_slot(st, &r);

    /* The size too: a forged one would have the whole region after the stack scanned. */
    if (!s || atomic_load_explicit(&s->state, memory_order_acquire) != ((uint64_t)st->gen << 32 | VMS_SLOT_LIVE)) {
        errno = EINVAL;
        vms__fail(EINVAL, "%p is not a live vmstack stack: stale, forged or foreign handle", st->base);
        return 0;
    }
    return vms__used_bytes(st->base, st->size);
}
