/* SPDX-License-Identifier: MIT */
/*
 * The operating-system layer: reserving address space, committing chunks,
 * installing guards, returning memory, and probing what the kernel really
 * does.  Everything else asks this file, so a port starts here.
 */
#include "core/internal.h"
#include "core/sanitizer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* Linux 6.13: PTE guard markers */
#endif
#ifndef MADV_GUARD_REMOVE
#define MADV_GUARD_REMOVE 103
#endif

void *vms__os_reserve(size_t bytes)
{
    /* PROT_NONE + NORESERVE: address space only, no commit charge. */
    void *p = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    if (p == MAP_FAILED)
        return NULL;
    /*
     * Reserved space holds nothing a core dump needs; gdb's gcore would
     * otherwise write all of it out as zeros (hundreds of GiB).  Committed
     * chunks are new mappings, dumped as usual.
     */
    madvise(p, bytes, MADV_DONTDUMP);
    return p;
}

int vms__os_commit(void *addr, size_t bytes)
{
    /*
     * MAP_NORESERVE: under the default overcommit policy, a million 64 KiB
     * stacks would otherwise charge 80 GB of commit, and fork() of the
     * process would then fail.  Under the strict policy (vm.overcommit_memory
     * = 2) the kernel ignores the flag and accounts anyway, so there the
     * error still comes here, as a return value.  Consecutive chunks merge
     * into one VMA.
     */
    void *p = mmap(addr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);

    if (p == MAP_FAILED) {
        int e = errno;
        vms__os_decommit(addr, bytes);
        return -e;
    }
    /*
     * Stacks never get huge pages: with transparent huge pages "always"
     * (Fedora's and RHEL's default), the first touch at the top of an
     * 8 MiB thread stack would take a whole 2 MiB page, 100 times what the
     * thread uses, and a guard could no longer sit on its own 4 KiB.  Said
     * here, on the new mapping: MAP_FIXED replaced the reservation's VMA,
     * and with it any advice given to that.  Fails only on kernels without
     * huge pages, where it has nothing to prevent.
     */
    madvise(addr, bytes, MADV_NOHUGEPAGE);
    return 0;
}

/* Gives a range back to the reservation: no memory, no charge, no guards. */
void vms__os_decommit(void *addr, size_t bytes)
{
    if (mmap(addr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0) != MAP_FAILED)
        madvise(addr, bytes, MADV_DONTDUMP);
}

/*
 * The guard alone, told to no sanitizer or valgrind.  The tracer's
 * tripwires (src/trace/trace.c) need it: a tripwire lies in the live part
 * of a stack, which the program may touch at any moment.  memcheck must
 * not call such a touch an invalid write (the tracer catches the fault and
 * moves the window down), nor take never-written stack bytes for defined
 * when the window moves away.
 */
int vms__os_guard_raw(void *addr, size_t bytes, vms_guard_mode mode, bool on)
{
    int rc = 0;

    if (mode == VMS_GUARD_MADVISE)
        rc = madvise(addr, bytes, on ? MADV_GUARD_INSTALL : MADV_GUARD_REMOVE);
    else if (mode == VMS_GUARD_MPROTECT)
        rc = mprotect(addr, bytes, on ? PROT_NONE : PROT_READ | PROT_WRITE);
    return rc ? -errno : 0;
}

/* valgrind sees an mprotect for itself; PTE guard markers it must be told about. */
int vms__os_guard(void *addr, size_t bytes, vms_guard_mode mode)
{
    int rc = vms__os_guard_raw(addr, bytes, mode, true);

    if (rc == 0 && mode == VMS_GUARD_MADVISE)
        vms__san_noaccess(addr, bytes);
    return rc;
}

int vms__os_unguard(void *addr, size_t bytes, vms_guard_mode mode)
{
    int rc = vms__os_guard_raw(addr, bytes, mode, false);

    if (rc == 0 && mode == VMS_GUARD_MADVISE)
        vms__san_accessible(addr, bytes);
    return rc;
}

int vms__os_release(void *addr, size_t bytes)
{
    /* MADV_DONTNEED keeps guard markers and PROT_NONE, and refills with zeros. */
    return madvise(addr, bytes, MADV_DONTNEED) ? -errno : 0;
}

void *vms__os_alloc(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

    if (p == MAP_FAILED)
        return NULL;
    /*
     * Our tables are sized for every slot a region could have and touched
     * only where stacks are: a 2 MiB page would make a sparse table dense
     * (13 MiB of task records for 8 MiB stacks, 200 threads touching 80 KiB).
     */
    madvise(p, bytes, MADV_NOHUGEPAGE);
    return p;
}

/*
 * Does the page refuse to be read?  Asked of a system call, not of a load:
 * the kernel copies from the page and answers EFAULT when the guard holds,
 * so there is no fault, no child, no core dump and nothing for a debugger
 * or valgrind to see.  process_vm_readv on ourselves needs no descriptor;
 * where a sandbox refuses it, write() into a pipe asks the same question.
 */
static bool read_refused(char *page)
{
    char byte;
    struct iovec local = { &byte, 1 }, remote = { page, 1 };
    int fds[2];
    ssize_t n;

    n = syscall(SYS_process_vm_readv, getpid(), &local, 1UL, &remote, 1UL, 0UL);
    if (n == 1)
        return false;
    if (n < 0 && errno == EFAULT)
        return true;
    if (pipe2(fds, O_CLOEXEC))
        return false;
    n = write(fds[1], page, 1);
    n = n < 0 && errno == EFAULT ? -1 : 0;
    close(fds[0]);
    close(fds[1]);
    return n < 0;
}

/*
 * Chooses the guard mechanism.  madvise(MADV_GUARD_INSTALL) is believed only
 * if the guarded page really cannot be read: emulators and seccomp filters
 * can accept the call and do nothing.  Returns VMS_GUARD_AUTO only if the
 * probe could not even map its pages.
 */
vms_guard_mode vms__os_probe_guard(vms_guard_mode wanted)
{
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    char *p;
    bool ok;

    if (wanted == VMS_GUARD_MPROTECT || wanted == VMS_GUARD_NONE)
        return wanted;
    p = vms__os_alloc(2 * pg);
    if (!p)
        return VMS_GUARD_AUTO;
    ok = madvise(p, pg, MADV_GUARD_INSTALL) == 0 && read_refused(p);
    munmap(p, 2 * pg);
    return ok ? VMS_GUARD_MADVISE : VMS_GUARD_MPROTECT;
}

/*
 * Lines of /proc/self/maps, read with plain syscalls.  The buffer is small
 * on purpose: this runs on a fiber's stack when a spawn grows a region in
 * mprotect mode, with locks held, and a frame that overflowed there could
 * not be killed.
 */
long vms__os_count_vmas(void)
{
    char buf[2048];
    long n = 0;
    ssize_t got;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    while ((got = read(fd, buf, sizeof buf)) > 0)
        for (ssize_t i = 0; i < got; i++)
            n += buf[i] == '\n';
    close(fd);
    return n;
}

long vms__os_max_map_count(void)
{
    char buf[32] = { 0 };
    long v = 65530;
    int fd = open("/proc/sys/vm/max_map_count", O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        if (read(fd, buf, sizeof buf - 1) > 0)
            v = strtol(buf, NULL, 10);
        close(fd);
    }
    return v;
}

int vms__os_write_some(int fd, const char **p, size_t *len, size_t max)
{
    ssize_t n;

    do
        n = write(fd, *p, *len < max ? *len : max);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return n < 0 ? -errno : -EIO;
    *p += n;
    *len -= (size_t)n;
    return 0;
}

int vms__os_write_all(int fd, const char *p, size_t len)
{
    int rc;

    while (len)
        if ((rc = vms__os_write_some(fd, &p, &len, len)))
            return rc;
    return 0;
}

#ifndef AT_MINSIGSTKSZ
#define AT_MINSIGSTKSZ 51
#endif

/*
 * The room a signal frame takes on this machine, with 2 KiB to spare for
 * the red zone and alignment: the kernel's minimum (AT_MINSIGSTKSZ), which
 * grows with the vector state (AVX-512; on arm64 SVE and SME, whose ZA
 * alone is up to 64 KiB), and VMS_SIGFRAME_MIN when that is smaller or
 * not given (kernels before 5.14 on x86-64, qemu-user: 0).
 */
size_t vms__os_sigframe(void)
{
    size_t k = (size_t)getauxval(AT_MINSIGSTKSZ) + ((size_t)2 << 10);

    return k > VMS_SIGFRAME_MIN ? (k + 1023) & ~(size_t)1023 : VMS_SIGFRAME_MIN;
}
