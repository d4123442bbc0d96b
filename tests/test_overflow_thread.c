/* SPDX-License-Identifier: MIT */
/*
 * Threads on vmstack stacks that overflow: reported, then the process dies
 * by SIGSEGV as if unhandled (policy abort, the default for threads).
 *   abort        one thread, policy abort set explicitly: its report (thread
 *                name, tid, start routine), "aborting" and why, death by SIGSEGV
 *   default      the same with the default policy
 *   two_threads  two threads overflowing at the same moment: two whole
 *                reports, then death by SIGSEGV
 *   foreign      a glibc thread on a stack vmstack did not allocate, made
 *                known with vms__stack_register (as `vmstack run` does):
 *                reported like our own; unregistered, none of ours
 *   bare         a plain vms_stack_alloc stack (the program's own context
 *                switching): reported as a stack without a task, aborting
 */
#include "overflow.h"

#include "fault/fault.h"

#include <pthread.h>
#include <sys/mman.h>
#include <ucontext.h>

#define THREAD_TASK(name) \
    "^vmstack: thread '" name "' \\(tid " DEC "\\), start routine deep_thread\\+0x0/" HEX " \\[test_overflow_thread\\]$"
#define FRAME(fn) "^vmstack:  \\[<" HEX ">\\] " fn "\\+" HEX "/" HEX " \\[test_overflow_thread\\]" LINE "$"
/* The last line of a thread's report: why it aborts, and what sizes the stack. */
#define THREAD_ABORT                                                                                               \
    "^vmstack: aborting: a thread cannot be killed alone without risking the rest of the process; the stack size " \
    "of its pthread_attr_t \\(else VMSTACK_STACK_SIZE\\) sizes its stack$"
#define BARE_ABORT                                                                                                 \
    "^vmstack: aborting: the stack has no overflow handler to end its task \\(vms_stack_on_overflow\\); the size " \
    "given to vms_stack_alloc sizes it$"

static pthread_barrier_t together;
static int use_barrier;

static void *deep_thread(void *arg)
{
    volatile long r;

    if (use_barrier)
        pthread_barrier_wait(&together);
    r = recurse((long)arg);
    return (void *)r;
}

static void start(pthread_t *t, const char *name)
{
    CHECK_EQ(vms_thread_create(t, thread_attr(), deep_thread, (void *)(1L << 40), name), 0);
}

static void one_thread_child(void *set_policy)
{
    pthread_t t;

    if (set_policy)
        CHECK_EQ(vms_set_overflow_policy(VMS_OVERFLOW_THREAD, VMS_OVERFLOW_ABORT), 0);
    start(&t, "deep-thread");
    vms_thread_join(t, NULL);
    fprintf(stderr, "test: the process survived\n");
}

static void check_abort(void *set_policy)
{
    struct child c;

    child_run(&c, one_thread_child, set_policy);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 1, c.text, "exactly one report");
    check_report(c.text, 0, THREAD_TASK("deep-thread"), FRAME("recurse"), THREAD_ABORT);
    CHECK_TEXT(count_lines(c.text, FRAME("deep_thread")) == 1, c.text, "the start routine in the trace");
    CHECK_TEXT(!strstr(c.text, "test: the process survived"), c.text, "no survival");
    free(c.text);
}

static void abort_policy(void)
{
    check_abort((void *)1);
}

static void default_policy(void)
{
    check_abort(NULL);
}

static void two_threads_child(void *unused)
{
    pthread_t a, b;

    (void)unused;
    use_barrier = 1;
    pthread_barrier_init(&together, NULL, 2);
    start(&a, "left");
    start(&b, "right");
    vms_thread_join(a, NULL);
    vms_thread_join(b, NULL);
}

static void two_threads(void)
{
    struct child c;

    child_run(&c, two_threads_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 2, c.text, "two reports");
    for (int i = 0; i < 2; i++)
        check_report(c.text, i, THREAD_TASK("(left|right)"), FRAME("recurse"), THREAD_ABORT);
    CHECK_TEXT(count_lines(c.text, THREAD_TASK("left")) == 1 && count_lines(c.text, THREAD_TASK("right")) == 1, c.text,
               "one report each");
    free(c.text);
}

/* ---- foreign: a stack vmstack did not allocate, made known with the registry ---- */

#ifdef VMS_TSAN /* room for ThreadSanitizer's static TLS, see thread_attr() */
#define FOREIGN_STACK ((size_t)4 << 20)
#define FOREIGN_STACK_KIB "4096"
#else
#define FOREIGN_STACK ((size_t)256 << 10)
#define FOREIGN_STACK_KIB "256"
#endif
#define FOREIGN_GUARD ((size_t)64 << 10)

static char *foreign_lo;
static int foreign_registered;

static void *foreign_thread(void *arg)
{
    struct vms_task task = {.kind = VMS_TASK_THREAD, .id = (uint64_t)gettid(), .name = "foreign",
                            .start = (void *)foreign_thread};
    int h;
    volatile long r;

    CHECK_EQ(vms__fault_thread_init(), 0);
    h = vms__stack_register(foreign_lo, foreign_lo + FOREIGN_STACK, FOREIGN_GUARD, &task);
    CHECK(h >= 0);
    if (!foreign_registered)
        vms__stack_unregister(h);
    r = recurse((long)arg);
    return (void *)r;
}

/* A glibc thread on a stack of our own making, with a PROT_NONE guard below it. */
static void foreign_child(void *registered)
{
    size_t total = FOREIGN_GUARD + FOREIGN_STACK;
    char *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    pthread_attr_t a;
    pthread_t t;

    CHECK(m != MAP_FAILED);
    CHECK(mprotect(m, FOREIGN_GUARD, PROT_NONE) == 0);
    foreign_lo = m + FOREIGN_GUARD;
    foreign_registered = registered != NULL;
    pthread_attr_init(&a);
    CHECK(pthread_attr_setstack(&a, foreign_lo, FOREIGN_STACK) == 0);
    CHECK(pthread_create(&t, &a, foreign_thread, (void *)(1L << 40)) == 0);
    pthread_join(t, NULL);
}

static void foreign(void)
{
    struct child c;

    child_run(&c, foreign_child, (void *)1);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 1, c.text, "exactly one report");
    check_report(c.text, 0,
                 "^vmstack: thread 'foreign' \\(tid " DEC "\\), start routine foreign_thread\\+0x0/" HEX " \\[test_overflow_thread\\]$",
                 FRAME("recurse"), THREAD_ABORT);
    CHECK_TEXT(count_lines(c.text, "^vmstack: stack " FOREIGN_STACK_KIB " KiB, guard 64 KiB at " HEX "\\.\\." HEX "; sp is " DEC " bytes below the top$") == 1,
               c.text, "the registered geometry");
    free(c.text);
    /* Unregistered, the same overflow is none of ours: plain SIGSEGV, no report. */
    child_run(&c, foreign_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    CHECK_TEXT(!strstr(c.text, "vmstack:"), c.text, "no report");
    free(c.text);
}

/* ---- bare: a vms_stack_alloc stack run with swapcontext, no task recorded ---- */

static ucontext_t bare_main, bare_ctx;

static void bare_entry(void)
{
    recurse(1L << 40);
}

static void bare_child(void *unused)
{
    vms_stack st;

    (void)unused;
    CHECK_EQ(vms_stack_alloc(&st, 0), 0);
    CHECK(getcontext(&bare_ctx) == 0);
    bare_ctx.uc_stack.ss_sp = st.base;
    bare_ctx.uc_stack.ss_size = st.size;
    bare_ctx.uc_link = &bare_main;
    makecontext(&bare_ctx, bare_entry, 0);
    CHECK(swapcontext(&bare_main, &bare_ctx) == 0);
    fprintf(stderr, "test: survived\n");
}

static void bare(void)
{
    struct child c;

    child_run(&c, bare_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 1, c.text, "exactly one report");
    check_report(c.text, 0, "^vmstack: a stack without a task, on thread '[^']*' \\(tid " DEC "\\)$", FRAME("recurse"),
                 BARE_ABORT);
    free(c.text);
}

int main(int argc, char **argv)
{
    static const struct scenario list[] = {
        {"abort", abort_policy}, {"default", default_policy}, {"two_threads", two_threads}, {"foreign", foreign},
        {"bare", bare},          {NULL, NULL},
    };

    return run_scenario(argc, argv, list);
}
