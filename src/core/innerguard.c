/* SPDX-License-Identifier: MIT */
/*
 * A guard inside a stack, for runtimes that keep their own record at the
 * low end of the block they run a coroutine on (minicoro does: record,
 * context and storage, then the stack above).  The stack grows down onto
 * that record, so an overflow would run over it before it reached the
 * guard below the block; a guard between the two stops it there, and the
 * fault handler knows the guard from the stack's task record.
 *
 * In mprotect mode the pages are dropped before they are protected: a
 * warm stack's pages would stay resident under PROT_NONE, where usage
 * scans (mincore, then a read) would fault on them.  The guard costs two
 * VMAs there, and a system call at allocation and at free in both modes.
 */
#include "core/internal.h"

#include <errno.h>
#include <string.h>

int vms__inner_guard(const vms_stack *st, struct vms_task *t, size_t off, size_t len)
{
    char *at = (char *)st->base + off;
    int rc;

    if (vms__g.mode == VMS_GUARD_MPROTECT)
        vms__os_release(at, len);
    if ((rc = vms__os_guard(at, len, vms__g.mode)))
        return vms__fail(-rc, "the guard above a runtime's record at %p failed: %s%s", (void *)at, strerror(-rc),
                         rc == -ENOMEM ? " (vm.max_map_count reached? use Linux >= 6.13 guard regions)" : "");
    t->inner_off = (uint32_t)off;
    t->inner_len = (uint32_t)len;
    return 0;
}

void vms__inner_guard_drop(struct vms_task *t, const char *base)
{
    vms__os_unguard((void *)(base + t->inner_off), t->inner_len, vms__g.mode);
}
