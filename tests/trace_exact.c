/* SPDX-License-Identifier: MIT */
/*
 * Programs with known deepest points, for tests/test_trace_exact.sh, which
 * builds this file with -fstack-usage and runs it under 'vmstack trace'
 * (threads) or links it with libvmstack (fibers: vms_trace_enable and
 * vms_trace_report).  Every case prints "truth NAME BYTES": the distance
 * from the top of the task's stack to the stack pointer at its deepest
 * point, measured by the program itself.
 *
 *   sweep      256 threads in turn, thread k shifting its stack by
 *              alloca(k * 16), then sweep_recurse x 21 (528-byte frames)
 *              -> sweep_middle (about 1,200) -> sweep_leaf (about 3,000),
 *              every array written
 *   fibers     the same on 256 fibers; the report goes to argv[2]
 * The special cases run on a thread, below a 12,000-byte frame, so that
 * their deepest point is deeper than anything libc does for the program.
 *
 *   leafret    the deepest call is to a leaf that writes nothing but the
 *              return address its call pushed
 *   comeback   a deep call, back up, then a deeper one
 *   bigframe   a 64 KiB frame that never probes its pages
 *   overwrite  a deep chain that no tripwire saw, whose middle a later,
 *              shallower call overwrites (its deepest words stay)
 *   noreturn   the deepest chain holds a call that is its function's last
 *              instruction (to a function that exits the process); no
 *              truth printed
 *   read       read() of 64 KiB from /dev/zero into a fresh stack buffer,
 *              on a thread and on the main thread: prints "read N"
 */
#define _GNU_SOURCE
#include <alloca.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sp.h"
#ifdef WITH_VMSTACK
#include "vmstack.h"
#endif

#define NOINLINE __attribute__((noinline, noclone))
#define SWEEP 256

static uintptr_t top;      /* the current task's stack top */
static uintptr_t deepest;  /* the stack pointer at its deepest point */

static void fill(volatile unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i++)
        p[i] = v;
}

static uintptr_t thread_top(void)
{
    pthread_attr_t a;
    void *lo;
    size_t size;

    if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &size))
        abort();
    pthread_attr_destroy(&a);
    return (uintptr_t)lo + size;
}

/* ---- the sweep ---- */

NOINLINE void sweep_leaf(void)
{
    volatile unsigned char buf[3000];

    fill(buf, sizeof buf, 1);
    deepest = stack_pointer();
}

NOINLINE void sweep_middle(void)
{
    volatile unsigned char buf[1200];

    fill(buf, sizeof buf, 2);
    sweep_leaf();
    buf[0] = 3;
}

NOINLINE int sweep_recurse(int n)
{
    volatile unsigned char buf[512];

    fill(buf, sizeof buf, 4);
    if (n == 0)
        sweep_middle();
    else
        sweep_recurse(n - 1);
    return buf[7];
}

static void sweep_run(unsigned k)
{
    volatile char *shift = alloca(k * 16 + 1);

    shift[0] = 1;
    sweep_recurse(20);
}

static void *sweep_thread(void *arg)
{
    unsigned k = (unsigned)(uintptr_t)arg;
    char name[16];

    snprintf(name, sizeof name, "sweep-%u", k);
    pthread_setname_np(pthread_self(), name);
    top = thread_top();
    sweep_run(k);
    printf("truth %s %lu\n", name, (unsigned long)(top - deepest));
    return NULL;
}

/* ---- the special cases, each on a thread ---- */

NOINLINE void leaf_nothing(void)
{
    __asm__ volatile("" ::: "memory");
}

NOINLINE void leafret_caller(void)
{
    volatile unsigned char buf[2000];

    fill(buf, sizeof buf, 5);
    deepest = stack_pointer() - sizeof(void *); /* where the call pushes its return address */
    leaf_nothing();
    buf[0] = 6;
}

NOINLINE void comeback_a(int n)
{
    volatile unsigned char buf[512];

    fill(buf, sizeof buf, 7);
    if (n)
        comeback_a(n - 1);
}

NOINLINE void comeback_b_leaf(void)
{
    volatile unsigned char buf[1500];

    fill(buf, sizeof buf, 8);
    deepest = stack_pointer();
}

NOINLINE void comeback_b(int n)
{
    volatile unsigned char buf[512];

    fill(buf, sizeof buf, 9);
    if (n)
        comeback_b(n - 1);
    else
        comeback_b_leaf();
}

NOINLINE void big_frame(void)
{
    volatile unsigned char buf[65536];

    buf[0] = 10; /* the lowest byte only: no page above it is touched */
    deepest = stack_pointer();
}

/* Not a leaf (a leaf may write below its stack pointer, in the red zone): its callee is deepest. */
NOINLINE void over_f3(void)
{
    volatile unsigned char buf[3000];

    fill(buf, sizeof buf, 11);
    deepest = stack_pointer() - sizeof(void *);
    leaf_nothing();
    buf[0] = 12;
}

NOINLINE void over_f2(void)
{
    volatile unsigned char buf[1000];

    fill(buf, sizeof buf, 12);
    over_f3();
    buf[0] = 13;
}

/* Its frame covers over_f2's and the upper half of over_f3's, not over_f3's deepest words. */
NOINLINE void over_g(void)
{
    volatile unsigned char buf[2500];

    fill(buf, sizeof buf, 0x5a);
}

NOINLINE void over_f1(void)
{
    volatile unsigned char buf[256];

    fill(buf, sizeof buf, 14);
    over_f2();
    over_g();
    buf[0] = 15;
}

NOINLINE ssize_t read_zero(void)
{
    unsigned char buf[65536];
    int fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        abort();
    n = read(fd, buf, sizeof buf);
    close(fd);
    __asm__ volatile("" : : "r"(buf) : "memory");
    return n;
}

NOINLINE void deep_fill(void)
{
    volatile unsigned char buf[8000];

    fill(buf, sizeof buf, 19);
}

/*
 * Ends the process from a thread, after a deep call: the thread's chain
 * is read at exit (exit's own frames overwrite the top of it).
 */
NOINLINE __attribute__((noreturn)) void exit_deep(void)
{
    volatile unsigned char buf[2000];

    fill(buf, sizeof buf, 18);
    deep_fill();
    exit(buf[0] - 18);
}

/* Its call is its last instruction: the return address is the next function's first byte. */
NOINLINE void ends_with_call(void)
{
    exit_deep();
}

/*
 * Reads the stack below the stack pointer: the tripwires move below it
 * (their chain is this function's) while the memory stays zero, so that
 * the deeper calls that follow fault on nothing: only the dead stack can
 * tell where they went.
 */
NOINLINE void probe_below(size_t bytes)
{
    const volatile char *sp = (const volatile char *)stack_pointer();

    for (size_t i = 64; i <= bytes; i += 64)
        (void)sp[-(ptrdiff_t)i];
}

/* Each case runs below this frame: deeper than what libc's own calls (printf) reach from case_thread. */
NOINLINE void padded(const char *which)
{
    volatile unsigned char pad[12000];

    fill(pad, sizeof pad, 16);
    if (!strcmp(which, "leafret")) {
        probe_below(8192); /* no tripwire sees leafret_caller's frame: --warn-frame must find it dead */
        leafret_caller();
    } else if (!strcmp(which, "comeback")) {
        comeback_a(40);
        comeback_b(44);
    } else if (!strcmp(which, "bigframe")) {
        big_frame();
    } else if (!strcmp(which, "noreturn")) {
        ends_with_call();
    } else if (!strcmp(which, "overwrite")) {
        probe_below(8192);
        over_f1();
    }
    pad[0] = 17;
}

static void *case_thread(void *arg)
{
    const char *which = arg;

    pthread_setname_np(pthread_self(), which);
    top = thread_top();
    if (!strcmp(which, "read")) {
        printf("read %zd\n", read_zero());
        return NULL;
    }
    padded(which);
    printf("truth %s %lu\n", which, (unsigned long)(top - deepest));
    return NULL;
}

/* ---- fibers, through the API ---- */

#ifdef WITH_VMSTACK
static void *sweep_fiber(void *arg)
{
    sweep_run((unsigned)(uintptr_t)arg);
    return (void *)deepest;
}

static int fibers(const char *report)
{
    int fd;

    if (vms_trace_enable(0, 0))
        return 1;
    for (unsigned k = 0; k < SWEEP; k++) {
        char name[16];
        vms_fiber f;
        vms_stack st;
        vms_fiber_status s;

        snprintf(name, sizeof name, "sweep-%u", k);
        if (vms_fiber_spawn(&f, sweep_fiber, (void *)(uintptr_t)k, &(vms_fiber_opts){.name = name}) ||
            vms_fiber_stack(f, &st) || vms_run() || vms_fiber_join(f, &s))
            return 1;
        printf("truth %s %lu\n", name, (unsigned long)((uintptr_t)vms_stack_top(&st) - (uintptr_t)s.result));
    }
    if ((fd = open(report, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0 || vms_trace_report(fd))
        return 1;
    close(fd);
    return 0;
}
#endif

int main(int argc, char **argv)
{
    pthread_t t;

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2)
        return 2;
    if (!strcmp(argv[1], "sweep")) {
        for (unsigned k = 0; k < SWEEP; k++)
            if (pthread_create(&t, NULL, sweep_thread, (void *)(uintptr_t)k) || pthread_join(t, NULL))
                return 1;
        return 0;
    }
#ifdef WITH_VMSTACK
    if (!strcmp(argv[1], "fibers"))
        return argc > 2 ? fibers(argv[2]) : 2;
#endif
    if (pthread_create(&t, NULL, case_thread, argv[1]) || pthread_join(t, NULL))
        return 1;
    if (!strcmp(argv[1], "read"))
        printf("read %zd\n", read_zero());
    return 0;
}
