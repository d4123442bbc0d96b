/*
 * Stack usage without painting, as the kernel's stack_not_used(): stacks
 * start zero-filled, so the deepest non-zero word marks the high-water
 * mark.  mincore() tells which pages were ever touched, so only the deepest
 * resident page needs scanning, and untouched pages are never faulted in.
 */
#include "internal.h"

#include <sys/mman.h>

#define PAGES_PER_CALL 256

/*
 * Reads raw stack memory that may belong to a running task: ASan would see
 * its poisoned redzones, so this function is not instrumented.
 */
__attribute__((no_sanitize_address)) static const char *first_nonzero(const char *p, size_t len)
{
    const volatile uint64_t *w = (const volatile uint64_t *)p;

    for (size_t i = 0; i < len / sizeof *w; i++)
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
            hit = first_nonzero(base + (first + i) * pg, pg);
            if (hit)
                return (size_t)(base + size - hit);
        }
    }
    return 0;
}

size_t vms_stack_used(const vms_stack *st)
{
    vms_stack cur;

    if (!vms_on_stack(st->base, &cur) || cur.gen != st->gen || cur.base != st->base)
        return 0;
    return vms__used_bytes(st->base, st->size);
}
