/* SPDX-License-Identifier: MIT */
/*
 * libunwind, reading memory without a descriptor.
 *
 * libunwind's own address space for the running process checks that an
 * address is readable before it reads a word there, by writing a byte
 * from it into a pipe it opens on first use: two descriptors that the
 * program then finds open (a test of the program's that counts its
 * descriptors, or closes all above some number, sees them), at numbers
 * the program may reuse.  So vmstack unwinds through an address space of
 * its own (unw_create_addr_space) with libunwind's local accessors except
 * two: registers come from the interrupted context, and memory is read
 * through read_word below, which asks process_vm_readv (a system call
 * that answers EFAULT where a read would fault: guard pages, unmapped
 * memory) once per PROBE_PAGES pages and remembers PAGES_KNOWN pages that answered,
 * in a direct-mapped cache: a lookup in a large binary's unwind table
 * reads a dozen pages of its binary search, the same ones for every
 * frame of a recursion, which a short round-robin list evicted each time
 * (a traced V8 made three million system calls).  That is one system
 * call per new page at most, as libunwind's check costs (it makes two or three).
 * The pipe libunwind would open at its initialisation is refused
 * (unwindpipe.c), so no descriptor of ours is ever open.
 *
 * Under valgrind every word is copied by process_vm_readv: memcheck does
 * not look into what the kernel copies, so the stack bytes libunwind
 * reads (uninitialised padding, words below a frame) are neither invalid
 * reads nor uninitialised values in the program's error count.
 *
 * The same bracket (vms__unwind_begin/end) keeps fork() from copying a
 * thread's unwinding half done: libunwind looks up each frame with
 * dl_iterate_phdr, which holds the dynamic loader's lock, and a child
 * forked at that moment has the lock held forever (its first unwinding,
 * or dlopen, then hangs).  Before fork, new unwinding is refused (the
 * overflow handler's waits for the fork to pass) and the unwinding in
 * progress is waited for; a report whose fork does not pass says so
 * instead of a backtrace.  Everything here but
 * vms__unwind_prepare and the fork handlers is async-signal-safe.
 */
#include "fault/fault.h"
#include "core/sanitizer.h"

#include <errno.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static unw_addr_space_t space;    /* ours; NULL until prepared */
static unw_addr_space_t cached;   /* the same, with libunwind's per-thread cache of parsed frames */
static unsigned long long unloads; /* the loader's count of unloaded modules when `cached` was last flushed */
static bool on_valgrind;
static _Atomic int inside;        /* threads between begin and end */
static _Atomic bool forking;
static _Atomic pid_t forker;      /* the thread that set forking */

/* ---- memory ---- */

#define PROBE_PAGES 16 /* pages asked about at once, upwards: an unwinder walks up the stack */

/*
 * How many pages from page upwards can be read, at most PROBE_PAGES: the
 * kernel copies one byte of each, in one call, and stops at the first
 * that cannot be read.
 */
static unsigned readable_pages(const struct vms_unwind *u, uintptr_t page)
{
    char bytes[PROBE_PAGES];
    struct iovec local = {bytes, sizeof bytes}, remote[PROBE_PAGES];
    uintptr_t pg = vms__g.page;
    unsigned k = 0;
    long n;

    for (; k < PROBE_PAGES && page + k * pg >= page; k++)
        remote[k] = (struct iovec){(void *)(page + k * pg), 1};
    n = syscall(SYS_process_vm_readv, u->pid, &local, 1UL, remote, (unsigned long)k, 0UL);
    /* qemu-user fails the whole call for one page it cannot read (the kernel stops there): the first alone. */
    if (n < 0 && errno == EFAULT && k > 1)
        n = syscall(SYS_process_vm_readv, u->pid, &local, 1UL, remote, 1UL, 0UL);
    /* Refused by a sandbox (EPERM, ENOSYS): read anyway; a fault comes back to the nested-fault jump. */
    if (n < 0)
        return errno != EFAULT && errno != ESRCH;
    return (unsigned)n;
}

static bool known_readable(struct vms_unwind *u, uintptr_t addr)
{
    uintptr_t pg = vms__g.page, page = addr & ~(pg - 1);
    unsigned n;

    /* Page 0 first: the cache's empty entries are 0 too. */
    if (!page)
        return false;
    if (u->pages[page / pg % PAGES_KNOWN] == page)
        return true;
    if (!(n = readable_pages(u, page)))
        return false;
    for (unsigned i = 0; i < n; i++)
        u->pages[(page / pg + i) % PAGES_KNOWN] = page + i * pg;
    return true;
}

/* A word anywhere: libunwind reads unaligned ones too (CFI). */
struct __attribute__((packed, may_alias)) any_word {
    unw_word_t v;
};

/*
 * Reads raw stack memory that may belong to a running task (words below
 * a frame, in the middle of another's locals): ASan would see its
 * poisoned redzones, so this function is not instrumented.
 */
__attribute__((no_sanitize_address)) static int read_word(struct vms_unwind *u, uintptr_t addr, unw_word_t *val)
{
    if (on_valgrind) {
        struct iovec local = {val, sizeof *val}, remote = {(void *)addr, sizeof *val};
        return syscall(SYS_process_vm_readv, u->pid, &local, 1UL, &remote, 1UL, 0UL) == sizeof *val ? 0
                                                                                               : -UNW_EINVAL;
    }
    if ((addr < u->live_lo || addr + sizeof *val > u->live_hi) &&
        (!known_readable(u, addr) || !known_readable(u, addr + sizeof *val - 1)))
        return -UNW_EINVAL;
    *val = ((const volatile struct any_word *)addr)->v;
    return 0;
}

static int access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
    (void)as;
    return write ? -UNW_EREADONLYREG : read_word(arg, (uintptr_t)addr, val);
}

/* ---- registers: from the interrupted context ---- */

static int access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
    const struct vms_unwind *u = arg;
    uintptr_t v;

    (void)as;
    if (write || !vms__uc_unw_reg(u->uc, (int)reg, &v))
        return -UNW_EBADREG;
    *val = (unw_word_t)v;
    return 0;
}

static int access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write, void *arg)
{
    (void)as, (void)reg, (void)val, (void)write, (void)arg;
    return -UNW_EBADREG;
}

static int resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
    (void)as, (void)c, (void)arg;
    return -UNW_EINVAL;
}

#if UNW_VERSION >= UNW_VERSION_CODE(1, 7)
/*
 * libunwind 1.7 on strips a signed return address (pac-ret) by itself only
 * in its own local address space; in any other it clears the bits this
 * says, and the local accessors copied here say none.
 */
static unw_word_t ptrauth_insn_mask(unw_addr_space_t as, void *arg)
{
    (void)as, (void)arg;
    return vms__arch_pac_mask();
}
#endif

/* ---- the address space ---- */

/* libunwind initialises itself on its first call, this one. */
static void get_local_accessors(void *acc)
{
    *(unw_accessors_t *)acc = *unw_get_accessors(unw_local_addr_space);
}

/*
 * Creates the address space (with a first unwinding, so that libunwind's
 * lazy set-up is done before any signal handler needs it).  Caching off:
 * see warm_unwinder in fault.c.  Idempotent; not async-signal-safe.
 */
void vms__unwind_prepare(void)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    unw_accessors_t acc;
    unw_context_t ctx;
    struct vms_unwind u;

    pthread_mutex_lock(&lock);
    if (!__atomic_load_n(&space, __ATOMIC_ACQUIRE)) {
        on_valgrind = vms__san_on_valgrind();
        vms__unwind_init_pipeless(get_local_accessors, &acc);
        acc.access_mem = access_mem;
        acc.access_reg = access_reg;
        acc.access_fpreg = access_fpreg;
        acc.resume = resume;
#if UNW_VERSION >= UNW_VERSION_CODE(1, 7)
        acc.ptrauth_insn_mask = ptrauth_insn_mask;
#endif
        unw_addr_space_t as = unw_create_addr_space(&acc, 0), as_cached = unw_create_addr_space(&acc, 0);
        if (as_cached) {
            unw_set_caching_policy(as_cached, UNW_CACHE_GLOBAL);
            __atomic_store_n(&cached, as_cached, __ATOMIC_RELEASE);
        }
        if (as) {
            unw_set_caching_policy(as, UNW_CACHE_NONE);
            __atomic_store_n(&space, as, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&lock);
    if (unw_getcontext(&ctx) == 0 && vms__unwind_init(&u, (const ucontext_t *)&ctx) == 0)
        unw_step(&u.c);
}

static int init_in(unw_addr_space_t as, struct vms_unwind *u, const ucontext_t *uc)
{
    if (!as)
        return -UNW_EUNSPEC;
    u->uc = uc;
    u->pid = (pid_t)syscall(SYS_getpid);
    for (unsigned i = 0; i < PAGES_KNOWN; i++)
        u->pages[i] = 0;
    u->live_lo = u->live_hi = 0;
    return unw_init_remote(&u->c, as, u);
}

int vms__unwind_init(struct vms_unwind *u, const ucontext_t *uc)
{
    return init_in(__atomic_load_n(&space, __ATOMIC_ACQUIRE), u, uc);
}

/*
 * With libunwind's cache of parsed frames: a hit skips the lookup of the
 * frame's module and the parsing of its call-frame information, so a
 * recursion's frames cost a fraction of a microsecond each.  The cache
 * is under a lock (Debian's libunwind has no per-thread one), taken with
 * every signal blocked: for the tracer, whose reads never fault
 * (read_word checks every page but the task's live frames), so that no
 * fault can leave the lock held.  A cached rule is stale once its module is unloaded (another may
 * be loaded at the same addresses): the cache is flushed when the
 * loader's count of unloads moved.
 */
int vms__unwind_init_cached(struct vms_unwind *u, const ucontext_t *uc)
{
    unw_addr_space_t as = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
    unsigned long long adds, subs;

    if (as) {
        vms__modules_counts(&adds, &subs);
        if (__atomic_exchange_n(&unloads, subs, __ATOMIC_ACQ_REL) != subs)
            unw_flush_cache(as, 0, 0);
    }
    return init_in(as, u, uc);
}

void vms__unwind_live(struct vms_unwind *u, uintptr_t lo, uintptr_t hi)
{
    u->live_lo = lo;
    u->live_hi = hi;
}

/* ---- the bracket ---- */

const char *vms__unwind_begin(void)
{
    atomic_fetch_add_explicit(&inside, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&forking, memory_order_seq_cst)) {
        atomic_fetch_sub_explicit(&inside, 1, memory_order_release);
        return "another thread is forking";
    }
    return NULL;
}

/*
 * A fork in another thread takes a few milliseconds at most: the overflow
 * handler waits for it to pass, up to FORK_PATIENCE_NS, rather than give
 * up the unwinding, and with it the proof a kill needs (killsafe.c).
 * Waiting is safe: the fork waits for no thread outside the bracket, and
 * the locks its handlers take are held by this thread only when the
 * interrupted code holds them, which the unwinding would have refused to
 * kill anyway; a fork that does not pass in time is such a fork, and the
 * report says so.  The thread that forks itself (a fault in an atfork
 * handler) cannot wait for its own fork.
 */
#define FORK_PATIENCE_NS 1000000000L
#define FORK_NAP_NS 100000L

static long ns_since(const struct timespec *t0)
{
    struct timespec now;

    clock_gettime(CLOCK_MONOTONIC, &now);
    return (now.tv_sec - t0->tv_sec) * 1000000000L + (now.tv_nsec - t0->tv_nsec);
}

const char *vms__unwind_begin_waiting(void)
{
    struct timespec t0, nap = {0, FORK_NAP_NS};
    const char *why;

    if (!(why = vms__unwind_begin()))
        return NULL;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        if (atomic_load_explicit(&forker, memory_order_relaxed) == (pid_t)syscall(SYS_gettid))
            return "this thread is forking";
        nanosleep(&nap, NULL);
        if (!(why = vms__unwind_begin()))
            return NULL;
    } while (ns_since(&t0) < FORK_PATIENCE_NS);
    return why;
}

void vms__unwind_end(void)
{
    atomic_fetch_sub_explicit(&inside, 1, memory_order_release);
}

#define MODULES_PATIENCE 1000 /* yields: a fork passes in far fewer, unless it waits for us */

int vms__modules_begin(void)
{
    for (int i = 0; vms__unwind_begin(); i++) {
        if (i == MODULES_PATIENCE)
            return -EAGAIN;
        sched_yield();
    }
    return 0;
}

static void drain_for_fork(void)
{
    atomic_store_explicit(&forker, (pid_t)syscall(SYS_gettid), memory_order_relaxed);
    atomic_store_explicit(&forking, true, memory_order_seq_cst);
    while (atomic_load_explicit(&inside, memory_order_seq_cst) > 0)
        sched_yield();
}

static void after_fork(void)
{
    atomic_store_explicit(&forking, false, memory_order_release);
    atomic_store_explicit(&forker, 0, memory_order_relaxed);
}

/* In the child the counter may count threads that are gone: none is inside. */
static void after_fork_child(void)
{
    atomic_store_explicit(&inside, 0, memory_order_relaxed);
    after_fork();
}

__attribute__((constructor)) static void unwind_at_fork(void)
{
    vms__fork_hook(VMS_FORK_UNWIND, drain_for_fork, after_fork, after_fork_child);
}
