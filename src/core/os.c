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
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
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

/* linux/fs.h's PROCMAP_QUERY, which the headers of older systems lack. */
struct procmap_query {
    uint64_t size, query_flags, query_addr;
    uint64_t vma_start, vma_end, vma_flags, vma_page_size, vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_EXECUTABLE 0x04

int vms__os_mapping_at(int maps_fd, uintptr_t addr, struct vms_mapping *m)
{
    struct procmap_query q = {.size = sizeof q, .query_addr = addr};

    if (ioctl(maps_fd, PROCMAP_QUERY, &q))
        return -errno;
    m->lo = (uintptr_t)q.vma_start;
    m->hi = (uintptr_t)q.vma_end;
    m->exec = q.vma_flags & PROCMAP_QUERY_VMA_EXECUTABLE;
    return 0;
}

void vms__os_maps_each(char *buf, size_t cap, void (*line)(const char *l, void *ctx), void *ctx)
{
    size_t have = 0;
    ssize_t got;
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return;
    while ((got = read(fd, buf + have, cap - 1 - have)) > 0) {
        char *l = buf, *nl;
        have += (size_t)got;
        buf[have] = '\0';
        while ((nl = memchr(l, '\n', have - (size_t)(l - buf)))) {
            *nl = '\0';
            line(l, ctx);
            l = nl + 1;
        }
        have -= (size_t)(l - buf);
        memmove(buf, l, have);
        if (have == cap - 1)
            have = 0; /* a line longer than the buffer: what was read of it is dropped */
    }
    close(fd);
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

/*
 * Files for a process that has used up its descriptors (RLIMIT_NOFILE):
 * the overflow report and the table must still name functions (read from
 * the modules' files) and threads (/proc), and no descriptor may be kept
 * in reserve for it, since the program would see it.  So an open that
 * fails with EMFILE is made again with the soft limit raised by one for
 * that open alone, where the hard limit allows; else in a task that
 * shares this memory but not the descriptor table: its own copy, in which
 * it closes fd 0 to make room, opens, uses and closes the file, and ends.
 * What it maps is in this memory.  The program sees no descriptor, no
 * child in its wait() (the task has no exit signal and is reaped here)
 * and no signal (it runs with all of them blocked, as the caller waits
 * for it: CLONE_VFORK); only a pid, for a moment.  It runs on the
 * caller's TLS, which is idle meanwhile, so it makes plain system calls
 * only.  Where no such task can be made (a seccomp filter that refuses
 * clone; qemu-user, which makes a fork of it, whose mapping stays in the
 * fork), nor under valgrind, which refuses it on stderr, the names are
 * lost.
 */
struct file_use {
    const char *path;
    int (*use)(int fd, void *arg); /* 0 or -errno */
    void *arg;
    int rc;
};

#define SPARE_TASK_STACK ((size_t)64 << 10)

static int spare_task(void *p)
{
    struct file_use *u = p;
    int fd;

    close(0); /* its own table's copy: a free slot the program's table has not */
    fd = open(u->path, O_RDONLY | O_CLOEXEC);
    u->rc = fd < 0 ? -errno : u->use(fd, u->arg);
    return 0;
}

static int use_in_spare_task(struct file_use *u)
{
    char *stack;
    sigset_t all, old;
    int status;
    pid_t pid;

    if (vms__san_on_valgrind() || !(stack = vms__os_alloc(SPARE_TASK_STACK)))
        return -EMFILE;
    u->rc = -EMFILE;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid = clone(spare_task, stack + SPARE_TASK_STACK, CLONE_VM | CLONE_VFORK | CLONE_UNTRACED, u);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    while (pid > 0 && waitpid(pid, &status, __WCLONE) < 0 && errno == EINTR)
        ;
    munmap(stack, SPARE_TASK_STACK);
    return u->rc;
}

static int open_raised(const char *path)
{
    struct rlimit was, more;
    int fd;

    if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &was) || was.rlim_cur >= was.rlim_max)
        return -1;
    more = (struct rlimit){was.rlim_cur + 1, was.rlim_max};
    if (syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &more, NULL))
        return -1;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &was, NULL);
    return fd;
}

/* Opens path read-only, hands the descriptor to use, closes it; out of descriptors as above. */
static int use_file(const char *path, int (*use)(int fd, void *arg), void *arg)
{
    struct file_use u = {path, use, arg, 0};
    int fd = open(path, O_RDONLY | O_CLOEXEC), e = errno;

    if (fd < 0 && e == EMFILE && (fd = open_raised(path)) < 0) {
        u.rc = use_in_spare_task(&u);
        errno = e;
        return u.rc;
    }
    if (fd < 0)
        return -e;
    u.rc = use(fd, arg);
    close(fd);
    return u.rc;
}

struct file_map {
    void *p;
    size_t bytes;
};

static int map_whole(int fd, void *arg)
{
    struct file_map *m = arg;
    struct stat sb;

    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode) || sb.st_size <= 0)
        return -EINVAL;
    m->p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    m->bytes = (size_t)sb.st_size;
    return m->p == MAP_FAILED ? -ENOMEM : 0;
}

void *vms__os_map_file(const char *path, size_t *bytes)
{
    struct file_map m = {MAP_FAILED, 0};

    if (use_file(path, map_whole, &m) || m.p == MAP_FAILED)
        return NULL;
    *bytes = m.bytes;
    return m.p;
}

struct file_read {
    char *buf;
    size_t cap;
    ssize_t got;
};

static int read_once(int fd, void *arg)
{
    struct file_read *r = arg;

    r->got = read(fd, r->buf, r->cap);
    return r->got < 0 ? -errno : 0;
}

ssize_t vms__os_read_file(const char *path, char *buf, size_t cap)
{
    struct file_read r = {buf, cap, 0};
    int rc = use_file(path, read_once, &r);

    return rc ? rc : r.got;
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
