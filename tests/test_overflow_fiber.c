/* SPDX-License-Identifier: MIT */
/*
 * Fibers that overflow their stacks are reported and killed; everything
 * else goes on.  Each scenario runs in a child whose stderr is checked:
 *   one_in_1000  deep recursion in one fiber of 1,000: one report, the other
 *                999 finish with correct results, exit 0
 *   libc         recursion calling snprintf at every level: caught in libc, where
 *                a kill could leave a lock held: aborted instead
 *   large_frame  one frame larger than the stack, landing inside the guard
 *   many         10,000 fibers overflowing in turn (2,000 under TSan): all reported and killed;
 *                afterwards slots, RSS (within 10%), fds and VMAs as before
 *   two_threads  two threads' fibers overflowing at the same moment: two
 *                whole reports, both fibers killed, exit 0
 *   callback     policy callback (told the task, addresses and report; its
 *                answer kills or aborts), report fd, the fiber's kill hook
 */
#include "core/internal.h"
#include "overflow.h"

#include <dirent.h>
#include <errno.h>
#include <sys/mman.h>
#include <pthread.h>

#define FIBER_TASK(name, fn) \
    "^vmstack: fiber '" name "' \\(id " DEC "\\) on thread '[^']*' \\(tid " DEC "\\), start routine " fn "\\+0x0/" HEX " \\[test_overflow_fiber\\]$"
#define FRAME(fn) "^vmstack:  \\[<" HEX ">\\] " fn "\\+" HEX "/" HEX " \\[test_overflow_fiber\\]" LINE "$"

static void *deep_fiber(void *arg)
{
    volatile long r = recurse((long)arg); /* not a tail call: deep_fiber stays in the trace */

    return (void *)r;
}

static void *work_fiber(void *arg)
{
    vms_yield();
    return (void *)recurse((long)arg);
}

static void *printf_fiber(void *arg)
{
    return (void *)recurse_printf((long)arg);
}

/* From near the top, a frame of the whole stack and half the guard ends inside the guard. */
static void *big_fiber(void *arg)
{
    vms_stack st;

    (void)arg;
    CHECK_EQ(vms_fiber_stack(vms_fiber_current(), &st), 0);
    return (void *)(long)big_frame(st.size + st.guard_size / 2);
}

static vms_fiber spawn(void *(*fn)(void *), void *arg, const char *name)
{
    vms_fiber_opts o = {.name = name};
    vms_fiber f;

    CHECK_EQ(vms_fiber_spawn(&f, fn, arg, &o), 0);
    return f;
}

static void print_stack(const char *what, vms_fiber f)
{
    vms_stack st;

    CHECK_EQ(vms_fiber_stack(f, &st), 0);
    fprintf(stderr, "test: %s stack %p..%p guard %zu\n", what, st.base, vms_stack_top(&st), st.guard_size);
}

/* Joined, killed by overflow, and its stack (free now, still mapped) was wiped. */
static void expect_killed(vms_fiber f)
{
    vms_fiber_status s;
    vms_stack dead;

    CHECK_EQ(vms_fiber_stack(f, &dead), 0);
    CHECK_EQ(vms_fiber_join(f, &s), 0);
    CHECK_EQ(s.end, VMS_FIBER_KILLED_OVERFLOW);
    CHECK(s.result == NULL);
    CHECK_EQ(vms__used_bytes(dead.base, dead.size), 0);
}

/* The report's stack is the fiber's, and the fault address lies in its guard. */
static void check_addresses(const char *text, int index)
{
    uintptr_t fault, lo, hi, tlo, thi;
    size_t guard;
    const char *p = strstr(text, "test: deep stack ");

    CHECK_TEXT(p, text, "stack line of the test");
    CHECK(sscanf(p, "test: deep stack %lx..%lx guard %zu", &tlo, &thi, &guard) == 3);
    report_addresses(text, index, &fault, &lo, &hi);
    CHECK_TEXT(lo == tlo && hi == thi, text, "the fiber's stack in the report");
    CHECK_TEXT(fault < lo && fault >= lo - guard, text, "fault address in the guard");
}

/* ---- one_in_1000 ---- */

#define N 1000
#define DEEP 500

static void one_in_1000_child(void *unused)
{
    static vms_fiber f[N];
    vms_stats st;

    (void)unused;
    for (long i = 0; i < N; i++)
        f[i] = i == DEEP ? spawn(deep_fiber, (void *)(1L << 40), "deep") : spawn(work_fiber, (void *)(i % 100), "worker");
    print_stack("deep", f[DEEP]);
    CHECK_EQ(vms_run(), 0);
    for (long i = 0; i < N; i++) {
        vms_fiber_status s;
        if (i == DEEP) {
            expect_killed(f[i]);
            continue;
        }
        CHECK_EQ(vms_fiber_join(f[i], &s), 0);
        CHECK_EQ(s.end, VMS_FIBER_RETURNED);
        CHECK_EQ((long)s.result, recurse_expected(i % 100));
    }
    vms_stats_get(&st);
    CHECK_EQ(st.overflows, 1);
    fprintf(stderr, "test: %d finished, 1 killed\n", N - 1);
}

static void one_in_1000(void)
{
    struct child c;

    child_run(&c, one_in_1000_child, NULL);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "exit 0");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 1, c.text, "exactly one report");
    check_report(c.text, 0, FIBER_TASK("deep", "deep_fiber"), FRAME("recurse"), "^vmstack: killed fiber 'deep'$");
    CHECK_TEXT(count_lines(c.text, "^vmstack:  \\.\\.\\. " DEC " more frames of recurse\\+" HEX "/" HEX
                                   " \\[test_overflow_fiber\\]$") >= 1,
               c.text, "folded recursion");
    CHECK_TEXT(count_lines(c.text, "^vmstack:  \\[<" HEX ">\\] deep_fiber\\+" HEX "/" HEX " \\[test_overflow_fiber\\]" LINE "$") == 1,
               c.text, "the fiber's function in the trace");
    check_addresses(c.text, 0);
    CHECK_TEXT(strstr(c.text, "test: 999 finished, 1 killed\n"), c.text, "the others finished");
    free(c.text);
}

/* ---- libc ---- */

static void libc_child(void *unused)
{
    vms_fiber f;

    (void)unused;
    f = spawn(printf_fiber, (void *)(1L << 40), "printf");
    print_stack("deep", f);
    vms_run();
    fprintf(stderr, "test: the process went on\n");
}

/*
 * The guard is hit inside snprintf, which may hold a lock of libc's: the
 * kill would be unsafe, so the policy becomes abort and the report says
 * why.  The top frame is in libc (or the sanitizer's interceptor).
 */
static void libc(void)
{
    struct child c;

    child_run(&c, libc_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 1, c.text, "exactly one report");
    check_report(c.text, 0, FIBER_TASK("printf", "printf_fiber"), "^vmstack:  \\[<" HEX ">\\] .* \\[(libc|libasan|libubsan)[^]]*\\]" LINE "$",
                 "^vmstack: overflow inside [^ ]*snprintf[^ ]* \\((libc\\.so\\.6|lib[at]san\\.so[.0-9]*)\\): killing the "
                 "fiber could leave a lock held; aborting$");
    CHECK_TEXT(count_lines(c.text, "recurse_printf\\+" HEX "/" HEX " \\[test_overflow_fiber\\]$") >= 1, c.text,
               "recurse_printf in the trace");
    CHECK_TEXT(!strstr(c.text, "test: the process went on"), c.text, "no kill");
    check_addresses(c.text, 0);
    free(c.text);
}

/* ---- large_frame ---- */

static void large_frame_child(void *unused)
{
    vms_fiber f;

    (void)unused;
    f = spawn(big_fiber, NULL, "big");
    print_stack("deep", f);
    CHECK_EQ(vms_run(), 0);
    expect_killed(f);
}

static void large_frame(void)
{
    struct child c;

    child_run(&c, large_frame_child, NULL);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "exit 0");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 1, c.text, "exactly one report");
    check_report(c.text, 0, FIBER_TASK("big", "big_fiber"), FRAME("big_frame"), "^vmstack: killed fiber 'big'$");
    check_addresses(c.text, 0);
    free(c.text);
}

/* ---- many ---- */

/*
 * ThreadSanitizer's interceptors make each report about 30 ms there, and
 * its runtime's growth leaves the memory bounds unchecked: what it can
 * still find, a race between reports, shows in fewer of them.
 */
#ifdef VMS_TSAN
#define MANY 2000
#else
#define MANY 10000
#endif
#define BATCH 100

static _Atomic long reports, bad_reports;

/* Counts reports instead of printing 10,000 of them; signal context, so no stdio. */
static void count_report(const char *text, size_t len, void *arg)
{
    static const char head[] = "vmstack: BUG: stack guard page was hit at ";
    static const char tail[] = "vmstack: killed fiber 'many'\n";

    (void)arg;
    if (len > sizeof tail && memcmp(text, head, sizeof head - 1) == 0 &&
        memcmp(text + len - (sizeof tail - 1), tail, sizeof tail - 1) == 0)
        reports++;
    else
        bad_reports++;
}

static long rss_kib(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");

    CHECK(f && fscanf(f, "%ld %ld", &pages, &rss) == 2);
    fclose(f);
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static long count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    long n = 0;

    CHECK(d);
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static long count_vmas(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    long n = 0;
    int ch;

    CHECK(f);
    while ((ch = getc(f)) != EOF)
        n += ch == '\n';
    fclose(f);
    return n;
}

static void overflow_batch(void)
{
    vms_fiber f[BATCH];

    for (int i = 0; i < BATCH; i++)
        f[i] = spawn(deep_fiber, (void *)(1L << 40), "many");
    CHECK_EQ(vms_run(), 0);
    for (int i = 0; i < BATCH; i++)
        expect_killed(f[i]);
}

static void many_child(void *unused)
{
    long rss0, fds0, vmas0, rss1, fds1, vmas1;
    vms_stats s0, s1;

    (void)unused;
    vms_set_report_callback(count_report, NULL);
    overflow_batch(); /* warm up: chunks mapped, caches and libunwind set up */
    vms_trim();
    vms_stats_get(&s0);
    rss0 = rss_kib();
    fds0 = count_entries("/proc/self/fd");
    vmas0 = count_vmas();
    for (int b = 1; b < MANY / BATCH; b++)
        overflow_batch();
    vms_trim();
    vms_stats_get(&s1);
    rss1 = rss_kib();
    fds1 = count_entries("/proc/self/fd");
    vmas1 = count_vmas();
    fprintf(stderr, "test: reports %ld bad %ld overflows %llu; live %zu -> %zu; rss %ld -> %ld KiB; fds %ld -> %ld; "
                    "vmas %ld -> %ld\n",
            (long)reports, (long)bad_reports, (unsigned long long)s1.overflows, s0.live, s1.live, rss0, rss1, fds0,
            fds1, vmas0, vmas1);
    CHECK_EQ(reports, MANY);
    CHECK_EQ(bad_reports, 0);
    CHECK_EQ(s1.overflows, MANY);
    CHECK_EQ(s1.live, s0.live);
    CHECK_EQ(s1.slots, s0.slots);
    CHECK_EQ(fds1, fds0);
#ifndef VMS_TSAN /* ThreadSanitizer's runtime maps and fills memory for its own bookkeeping as it goes */
    CHECK(rss1 <= rss0 + rss0 / 10);
    CHECK_EQ(vmas1, vmas0);
#endif
}

static void many(void)
{
    struct child c;

    child_run(&c, many_child, NULL);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "exit 0");
    free(c.text);
}

/* ---- two_threads ---- */

static pthread_barrier_t together;

static void *barrier_fiber(void *arg)
{
    pthread_barrier_wait(&together);
    return (void *)recurse((long)arg);
}

static void *fiber_thread(void *name)
{
    vms_fiber f = spawn(barrier_fiber, (void *)(1L << 40), name);

    CHECK_EQ(vms_run(), 0);
    expect_killed(f);
    return NULL;
}

static void two_threads_child(void *unused)
{
    pthread_t a, b;

    (void)unused;
    pthread_barrier_init(&together, NULL, 2);
    CHECK_EQ(pthread_create(&a, NULL, fiber_thread, "left"), 0);
    CHECK_EQ(pthread_create(&b, NULL, fiber_thread, "right"), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    fprintf(stderr, "test: both threads went on\n");
}

static void two_threads(void)
{
    struct child c;

    child_run(&c, two_threads_child, NULL);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "exit 0");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 2, c.text, "two reports");
    for (int i = 0; i < 2; i++)
        check_report(c.text, i, FIBER_TASK("(left|right)", "barrier_fiber"), FRAME("recurse"),
                     "^vmstack: killed fiber '(left|right)'$");
    CHECK_TEXT(count_lines(c.text, "^vmstack: killed fiber 'left'$") == 1 &&
                   count_lines(c.text, "^vmstack: killed fiber 'right'$") == 1,
               c.text, "one report each");
    CHECK_TEXT(strstr(c.text, "test: both threads went on\n"), c.text, "the threads went on");
    free(c.text);
}

/* ---- callback ---- */

static vms_overflow seen;
static char seen_name[32], seen_first[64];
static _Atomic int hook_runs;

/* Signal context: copies what it was told, decides by name. */
static vms_overflow_policy decide(const vms_overflow *ov, void *arg)
{
    seen = *ov;
    strncpy(seen_name, ov->name, sizeof seen_name - 1);
    memcpy(seen_first, ov->report, ov->report_len < sizeof seen_first - 1 ? ov->report_len : sizeof seen_first - 1);
    return strcmp(ov->name, "kill-me") == 0 ? VMS_OVERFLOW_KILL : *(vms_overflow_policy *)arg;
}

static void on_kill(void *arg)
{
    hook_runs += (int)(long)arg;
}

static void *hooked_fiber(void *arg)
{
    CHECK_EQ(vms_fiber_on_kill(on_kill, (void *)1L), 0);
    return deep_fiber(arg);
}

static void callback_child(void *unused)
{
    static vms_overflow_policy otherwise = VMS_OVERFLOW_ABORT;
    char text[16384];
    vms_fiber f;
    vms_stack st;
    ssize_t n;
    int fd = memfd_create("reports", 0);

    (void)unused;
    CHECK(fd >= 0);
    CHECK_EQ(vms_set_report_fd(fd), 0);
    CHECK_EQ(vms_set_overflow_policy(VMS_OVERFLOW_FIBER, VMS_OVERFLOW_CALLBACK), 0);
    CHECK_EQ(vms_set_overflow_policy(VMS_OVERFLOW_FIBER, (vms_overflow_policy)99), -EINVAL);
    vms_set_overflow_callback(decide, &otherwise);
    f = spawn(hooked_fiber, (void *)(1L << 40), "kill-me");
    CHECK_EQ(vms_fiber_stack(f, &st), 0);
    CHECK_EQ(vms_run(), 0);
    expect_killed(f);
    CHECK_EQ(hook_runs, 1);
    CHECK_EQ(seen.task, VMS_OVERFLOW_FIBER);
    CHECK(strcmp(seen_name, "kill-me") == 0);
    CHECK(seen.stack_lo == st.base && seen.stack_hi == vms_stack_top(&st));
    CHECK((char *)seen.guard_lo == (char *)st.base - st.guard_size);
    CHECK((char *)seen.fault_addr >= (char *)seen.guard_lo && seen.fault_addr < seen.stack_lo);
    CHECK(seen.signo == SIGSEGV && seen.id == f.id && seen.sp != NULL && seen.ip != NULL);
    CHECK(strncmp(seen_first, "vmstack: BUG: stack guard page was hit at 0x", 44) == 0);
    /* The report went to the fd, not to stderr: copy it there for the parent to check. */
    n = pread(fd, text, sizeof text - 1, 0);
    CHECK(n > 0);
    text[n] = 0;
    fprintf(stderr, "test: from the fd:\n%s", text);
    fflush(stderr);
    vms_set_report_fd(2);
    f = spawn(deep_fiber, (void *)(1L << 40), "abort-me");
    vms_run();
    fprintf(stderr, "test: survived\n");
}

static void callback(void)
{
    struct child c;
    const char *rest;

    child_run(&c, callback_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV when the callback says abort");
    CHECK_TEXT(strncmp(c.text, "test: from the fd:\n", 19) == 0, c.text, "first report to the fd only");
    rest = check_report(c.text, 0, FIBER_TASK("kill-me", "hooked_fiber"), FRAME("recurse"), "^vmstack: killed fiber 'kill-me'$");
    CHECK_TEXT(*rest, c.text, "a second report");
    check_report(c.text, 1, FIBER_TASK("abort-me", "deep_fiber"), FRAME("recurse"),
                 "^vmstack: aborting: the overflow policy for fibers is abort \\(vms_set_overflow_policy\\); "
                 "vms_fiber_opts.stack_size sizes a fiber's stack$");
    CHECK_TEXT(!strstr(c.text, "test: survived"), c.text, "no survival");
    free(c.text);
}

int main(int argc, char **argv)
{
    static const struct scenario list[] = {
        {"one_in_1000", one_in_1000}, {"libc", libc}, {"large_frame", large_frame},
        {"many", many},               {"two_threads", two_threads}, {"callback", callback},
        {NULL, NULL},
    };

    return run_scenario(argc, argv, list);
}
