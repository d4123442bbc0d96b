/* SPDX-License-Identifier: MIT */
/*
 * Faults that are not overflows are passed on untouched.
 *   null           a NULL dereference in a fiber, in a vmstack thread, and a
 *                  SIGSEGV sent with kill(): each process dies by SIGSEGV
 *                  exactly as one without vmstack does, with no report
 *   wild           code writing into the guard of another task's stack: a
 *                  "wild access" report, then death by SIGSEGV
 *   prior_handler  the program's own SIGSEGV handler, installed before
 *                  vmstack, still gets the faults that are not ours (from a
 *                  fiber and from a thread), while overflows are handled
 *   later_handler  a handler installed after vmstack that chains to ours:
 *                  overflows are still reported and killed
 *   returning_handler  an earlier handler gets an aborting overflow and
 *                  returns, so the fault repeats: reported once, not forever
 */
#include "overflow.h"

#include <pthread.h>

static void *null_fiber(void *unused)
{
    (void)unused;
    null_write();
    return NULL;
}

static void *deep_fiber(void *arg)
{
    volatile long r = recurse((long)arg);

    return (void *)r;
}

static void spawn_run(void *(*fn)(void *), const char *name, vms_fiber_end want)
{
    vms_fiber_opts o = {.name = name};
    vms_fiber_status s;
    vms_fiber f;

    CHECK_EQ(vms_fiber_spawn(&f, fn, (void *)(1L << 40), &o), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(f, &s), 0);
    CHECK_EQ(s.end, want);
}

/* ---- null ---- */

static void plain_null(void *unused)
{
    (void)unused;
    null_write();
}

static void fiber_null(void *unused)
{
    (void)unused;
    spawn_run(null_fiber, "null", VMS_FIBER_RETURNED);
}

static void thread_null(void *unused)
{
    pthread_t t;

    (void)unused;
    CHECK_EQ(vms_thread_create(&t, thread_attr(), null_fiber, NULL, "null"), 0);
    vms_thread_join(t, NULL);
}

static void sent_segv(void *unused)
{
    vms_stack st;

    (void)unused;
    CHECK_EQ(vms_stack_alloc(&st, 0), 0);
    kill(getpid(), SIGSEGV);
    fprintf(stderr, "test: survived a sent SIGSEGV\n");
}

static void expect_plain_death(void (*fn)(void *), int baseline)
{
    struct child c;

    child_run(&c, fn, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV && c.status == baseline, c.text, "death by SIGSEGV as without vmstack");
    CHECK_TEXT(!strstr(c.text, "vmstack:"), c.text, "no report");
    free(c.text);
}

static void null(void)
{
    struct child c;
    int baseline;

    child_run(&c, plain_null, NULL); /* without vmstack */
    baseline = c.status;
    free(c.text);
    CHECK(WIFSIGNALED(baseline) && WTERMSIG(baseline) == SIGSEGV);
    expect_plain_death(fiber_null, baseline);
    expect_plain_death(thread_null, baseline);
    expect_plain_death(sent_segv, baseline);
}

/* ---- wild ---- */

static void *idle_fiber(void *unused)
{
    (void)unused;
    return NULL;
}

NOINLINE static void wild_child(void *unused)
{
    vms_fiber_opts o = {.name = "victim"};
    vms_fiber f;
    vms_stack st;

    (void)unused;
    CHECK_EQ(vms_fiber_spawn(&f, idle_fiber, NULL, &o), 0);
    CHECK_EQ(vms_fiber_stack(f, &st), 0);
    fprintf(stderr, "test: victim stack %p..%p\n", st.base, vms_stack_top(&st));
    ((volatile char *)st.base)[-1] = 1; /* from the main thread's stack */
    fprintf(stderr, "test: survived a wild write\n");
}

static void wild(void)
{
    struct child c;
    const char *pos, *s;
    size_t n = 0;
    uintptr_t lo, hi, fault, tlo, thi;

    child_run(&c, wild_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    CHECK_TEXT(!strstr(c.text, "survived"), c.text, "no survival");
    pos = strstr(c.text, "vmstack: BUG: wild access");
    CHECK_TEXT(pos, c.text, "a wild-access report");
    CHECK(sscanf(pos, "vmstack: BUG: wild access to a stack guard page at %lx (stack is %lx..%lx)", &fault, &lo, &hi) == 3);
    CHECK(sscanf(strstr(c.text, "test: victim stack "), "test: victim stack %lx..%lx", &tlo, &thi) == 2);
    CHECK_TEXT(lo == tlo && hi == thi && fault == lo - 1, c.text, "addresses");
    s = next_line(&pos, &n);
    CHECK_TEXT(line_matches(s, n, "^vmstack: BUG: wild access to a stack guard page at " HEX " \\(stack is " HEX "\\.\\." HEX "\\)$"),
               c.text, "first line");
    s = next_line(&pos, &n);
    CHECK_TEXT(line_matches(s, n, "^vmstack: the stack belongs to fiber 'victim' \\(id " DEC "\\), start routine idle_fiber\\+0x0/" HEX " \\[test_overflow_passon\\]$"),
               c.text, "owner line");
    s = next_line(&pos, &n);
    CHECK_TEXT(line_matches(s, n, "^vmstack: accessed by thread '[^']*' \\(tid " DEC "\\), sp on no known stack$"), c.text,
               "accessor line");
    s = next_line(&pos, &n);
    CHECK_TEXT(line_matches(s, n, "^vmstack: ip " HEX " sp " HEX " bp " HEX "$"), c.text, "register line");
    s = next_line(&pos, &n);
    CHECK_TEXT(line_matches(s, n, "^vmstack: Call Trace:$"), c.text, "Call Trace line");
    s = next_line(&pos, &n);
    CHECK_TEXT(line_matches(s, n, "^vmstack:  \\[<" HEX ">\\] wild_child\\+" HEX "/" HEX " \\[test_overflow_passon\\]" LINE "$"),
               c.text, "top frame");
    while ((s = next_line(&pos, &n)) && line_matches(s, n, "^vmstack:  "))
        ;
    CHECK_TEXT(s && line_matches(s, n, "^vmstack: not an overflow: passing SIGSEGV on$"), c.text, "last line");
    free(c.text);
}

/* ---- prior_handler ---- */

static void own_handler(int sig, siginfo_t *si, void *uc)
{
    char line[] = "test: own handler got signal 00 at address 0x0\n";
    size_t at = sizeof "test: own handler got signal " - 1;

    (void)uc;
    line[at] = (char)('0' + sig / 10);
    line[at + 1] = (char)('0' + sig % 10);
    if (si->si_addr != NULL)
        line[sizeof line - 3] = '?';
    (void)!write(2, line, sizeof line - 1);
    _exit(42);
}

static void install_own(void)
{
    struct sigaction sa = {.sa_sigaction = own_handler, .sa_flags = SA_SIGINFO};

    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
}

static void prior_fiber(void *unused)
{
    (void)unused;
    install_own();
    spawn_run(deep_fiber, "deep", VMS_FIBER_KILLED_OVERFLOW);
    fprintf(stderr, "test: overflow handled\n");
    spawn_run(null_fiber, "null", VMS_FIBER_RETURNED);
}

static void prior_thread(void *unused)
{
    (void)unused;
    install_own();
    thread_null(NULL);
}

static void prior_handler(void)
{
    struct child c;

    child_run(&c, prior_fiber, NULL);
    CHECK_TEXT(child_exit(&c) == 42, c.text, "exit 42 from the program's handler");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG: stack guard page was hit") == 1, c.text, "one report");
    CHECK_TEXT(count_lines(c.text, "^vmstack: killed fiber 'deep'$") == 1, c.text, "killed");
    CHECK_TEXT(strstr(c.text, "test: overflow handled\ntest: own handler got signal 11 at address 0x0\n"), c.text,
               "the NULL fault went to the program's handler");
    free(c.text);
    child_run(&c, prior_thread, NULL);
    CHECK_TEXT(child_exit(&c) == 42, c.text, "exit 42 from the program's handler");
    CHECK_TEXT(!strstr(c.text, "vmstack:"), c.text, "no report");
    CHECK_TEXT(strstr(c.text, "test: own handler got signal 11 at address 0x0\n"), c.text, "the program's handler");
    free(c.text);
}

/* ---- returning_handler ---- */

static _Atomic int returning_calls;

/* Returns twice without fixing anything (the fault comes back), then exits. */
static void returning(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)si, (void)uc;
    if (++returning_calls == 3)
        _exit(43);
}

static void *deep_thread(void *arg)
{
    return deep_fiber(arg);
}

static void returning_child(void *unused)
{
    struct sigaction sa = {.sa_sigaction = returning, .sa_flags = SA_SIGINFO};
    pthread_t t;

    (void)unused;
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGSEGV, &sa, NULL) == 0);
    CHECK_EQ(vms_thread_create(&t, thread_attr(), deep_thread, (void *)(1L << 40), "deep"), 0);
    vms_thread_join(t, NULL);
}

/* An aborting overflow goes to the earlier handler; when it returns, the fault repeats: one report. */
static void returning_handler(void)
{
    struct child c;

    child_run(&c, returning_child, NULL);
    CHECK_TEXT(child_exit(&c) == 43, c.text, "exit 43 from the program's handler, third call");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 1, c.text, "one report");
    CHECK_TEXT(count_lines(c.text, "^vmstack: passing SIGSEGV to the program's own handler$") == 1, c.text,
               "passed to the program's handler");
    free(c.text);
}

/* ---- later_handler ---- */

static struct sigaction ours;
static _Atomic int later_calls;

static void later(int sig, siginfo_t *si, void *uc)
{
    later_calls++;
    ours.sa_sigaction(sig, si, uc);
}

static void later_child(void *unused)
{
    struct sigaction sa = {.sa_sigaction = later, .sa_flags = SA_SIGINFO | SA_ONSTACK};

    (void)unused;
    CHECK_EQ(vms_fault_install(), 0);
    sigemptyset(&sa.sa_mask);
    CHECK(sigaction(SIGSEGV, &sa, &ours) == 0);
    CHECK(ours.sa_flags & SA_SIGINFO);
    spawn_run(deep_fiber, "deep", VMS_FIBER_KILLED_OVERFLOW);
    CHECK_EQ(later_calls, 1);
    fprintf(stderr, "test: the later handler chained\n");
    spawn_run(null_fiber, "null", VMS_FIBER_RETURNED);
}

static void later_handler(void)
{
    struct child c;

    child_run(&c, later_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV for the NULL dereference");
    CHECK_TEXT(count_lines(c.text, "^vmstack: killed fiber 'deep'$") == 1, c.text, "killed");
    CHECK_TEXT(strstr(c.text, "test: the later handler chained\n"), c.text, "chained");
    free(c.text);
}

int main(int argc, char **argv)
{
    static const struct scenario list[] = {
        {"null", null}, {"wild", wild}, {"prior_handler", prior_handler}, {"later_handler", later_handler},
        {"returning_handler", returning_handler}, {NULL, NULL},
    };

    return run_scenario(argc, argv, list);
}
