/* SPDX-License-Identifier: MIT */
/*
 * Geometry at the run-time page size (4 KiB on x86-64; 4, 16 or 64 KiB on
 * arm64, shown under qemu-aarch64 -p): every class of stack is whole pages,
 * and the byte below and the byte above each stack are inaccessible.  A guard that is
 * not whole pages is refused with one line naming the size.  And the guard
 * probe: where madvise(MADV_GUARD_INSTALL) is accepted but guards nothing
 * (qemu-user), vmstack must have chosen mprotect.
 */
#include "check.h"
#include "vmstack.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

/*
 * Whether the byte at p refuses to be read, asked of the kernel (or of
 * qemu, which checks its own page flags) by write(): EFAULT, no fault and
 * no fork, which qemu-user does not survive beside threads.
 */
static bool refused(const char *p)
{
    int fds[2];
    ssize_t n;

    CHECK_EQ(pipe(fds), 0);
    n = write(fds[1], p, 1);
    CHECK(n == 1 || errno == EFAULT);
    close(fds[0]);
    close(fds[1]);
    return n < 0;
}

/* Whether this system's madvise guard is accepted, and whether it then holds. */
static void probe_madvise(size_t pg)
{
    char *p = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int accepted, enforced;

    CHECK(p != MAP_FAILED);
    accepted = madvise(p, pg, MADV_GUARD_INSTALL) == 0;
    enforced = accepted && refused(p);
    munmap(p, 2 * pg);
    if (accepted && !enforced) {
        CHECK_EQ(vms_guard_mode_active(), VMS_GUARD_MPROTECT);
        printf("madvise guard accepted but not enforced: vmstack uses mprotect\n");
    } else {
        printf("madvise guard %s; vmstack uses %s\n", enforced ? "enforced" : "refused",
               vms_guard_mode_name(vms_guard_mode_active()));
        CHECK(!enforced || vms_guard_mode_active() == VMS_GUARD_MADVISE);
    }
}

int main(void)
{
    static const size_t sizes[] = {16 << 10, 64 << 10, (64 << 10) + 2048, 100000, 1 << 20};
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    vms_config cfg;

    vms_config_defaults(&cfg);
    cfg.reserve = (size_t)1 << 30;
    CHECK_EQ(vms_init(&cfg), 0);
    probe_madvise(pg);
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        vms_stack st;
        char *lo, *hi;

        CHECK_EQ(vms_stack_alloc(&st, sizes[i]), 0);
        lo = st.base;
        hi = vms_stack_top(&st);
        CHECK((uintptr_t)lo % pg == 0 && (uintptr_t)hi % pg == 0 && st.guard_size % pg == 0);
        CHECK((size_t)(hi - lo) >= sizes[i]);
        lo[0] = 1;
        hi[-1] = 1;
        CHECK(refused(lo - 1));
        CHECK(refused(hi));
        CHECK_EQ(vms_stack_free(&st), 0);
    }
    printf("page %zu: stacks of 16 KiB to 1 MiB are whole pages, the byte below and above each refused\n", pg);
    if (pg > 4096) {
        /* A 4 KiB guard cannot be installed on larger pages: refused, named, never silently missing. */
        vms_config bad;
        vms_config_defaults(&bad);
        bad.guard_size = 4096;
        CHECK_EQ(vms_init(&bad), -EINVAL);
        CHECK(strstr(vms_last_error(), "guard size 4096") != NULL);
        printf("refused: %s\n", vms_last_error());
    }
    return 0;
}
