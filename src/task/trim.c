/* SPDX-License-Identifier: MIT */
/*
 * Idle fibers give memory back.  A fiber that once went deep keeps the
 * pages it touched for as long as it lives; while it waits, everything
 * below its saved stack pointer (and the red zone under it) holds nothing
 * live.  Those whole pages are released with MADV_DONTNEED: touched again
 * they fault in as zeros, as a fresh stack's do.  Only the calling
 * thread's own fibers are trimmed, since a fiber of another thread could
 * resume and write there while the pages go.
 *
 * Once per wait: a fiber that blocks goes on its thread's list of fibers
 * that waited since they were last trimmed, and leaves it when trimmed
 * (or found running again, or ended).  A trim walks only that list, so
 * its cost follows the fibers that ran since the last one: a second trim
 * over 10,000 fibers that did not run meanwhile makes no system call,
 * where a scan of every slot made one madvise per idle fiber, every time.
 */
#include "task/task.h"

#include <time.h>

#define DEFAULT_IDLE_NS (1000 * 1000000ull)

/* The calling thread's list, as its first fiber's ref + 1 (0: empty). */
static TLS_IE uint32_t untrimmed;

static struct vms_fiber_desc *fiber_of_link(uint32_t link)
{
    return vms__slot_fiber(vms__slot_of_id(link - 1));
}

void vms__trim_note(struct vms_fiber_desc *f)
{
    if (f->trim_listed || !f->owns_stack)
        return;
    f->trim_listed = true;
    f->trim_prev = 0;
    f->trim_next = untrimmed;
    if (untrimmed)
        fiber_of_link(untrimmed)->trim_prev = f->ref + 1;
    untrimmed = f->ref + 1;
}

void vms__trim_forget(struct vms_fiber_desc *f)
{
    if (!f->trim_listed)
        return;
    f->trim_listed = false;
    if (f->trim_prev)
        fiber_of_link(f->trim_prev)->trim_next = f->trim_next;
    else
        untrimmed = f->trim_next;
    if (f->trim_next)
        fiber_of_link(f->trim_next)->trim_prev = f->trim_prev;
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Releases the pages of f's stack below its stack pointer; whether there were any. */
static bool trim_fiber(struct vms_fiber_desc *f)
{
    uintptr_t page = vms__g.page, lo = (uintptr_t)f->base;
    uintptr_t hi = ((uintptr_t)f->sp - VMS_ARCH_RED_ZONE) & ~(page - 1);

    /* Where a canary guards the lowest word (no guard below), its page stays. */
    if (f->canary)
        lo += page;
    if (hi <= lo)
        return false;
    return vms__os_release((void *)lo, hi - lo) == 0;
}

long vms_fiber_trim(uint64_t idle_ns)
{
    uint64_t now = now_ns();
    long trimmed = 0;

    for (uint32_t link = untrimmed, next; link; link = next) {
        struct vms_fiber_desc *f = fiber_of_link(link);

        next = f->trim_next;
        /* Not idle long enough yet: it stays listed for a later trim. */
        if (f->wait != VMS_WAIT_NONE && f->sp && now - f->wait_since < idle_ns)
            continue;
        /* Running or ready again (listed anew at its next wait), or trimmed now for this wait. */
        vms__trim_forget(f);
        if (f->wait != VMS_WAIT_NONE && f->sp)
            trimmed += trim_fiber(f);
    }
    return trimmed;
}

static long trim_idle(void)
{
    return vms_fiber_trim(DEFAULT_IDLE_NS);
}

__attribute__((constructor)) static void trim_register(void)
{
    atomic_store(&vms__trim_hook, trim_idle);
}
