/* SPDX-License-Identifier: MIT */
/*
 * Stacks of other coroutine libraries: a coroutine run with swapcontext on
 * a named vmstack stack, as minicoro or Boost.Context would run it.
 *   handler       on a worker thread that only called vms_thread_attach:
 *                 two coroutines overflow one after the other; each gives
 *                 the report with its name, its handler longjmps back to
 *                 the worker, which frees the stack by address; a third
 *                 coroutine then runs to its end, and the process lives on
 *   kill_no_handler  the callback says KILL for a stack without a handler:
 *                 the report says why it aborts, death by SIGSEGV
 *   returning     a handler that returns: reported, death by SIGSEGV
 *   locked        with an overflow handler: a plain overflow is killed
 *                 (the handler ends the coroutine), then one inside a
 *                 stream's write function, which fprintf calls with the
 *                 FILE's lock held, is not: abort, and the report says why
 *   unattached    a worker that never called vmstack: no report can be
 *                 made, death by SIGSEGV (what vms_thread_attach is for);
 *                 unless a sanitizer gave the thread an alternate stack
 *   api           free by address, naming and handlers: errors and stats
 */
#include "overflow.h"

#include <errno.h>
#include <setjmp.h>
#include <ucontext.h>

#define STACK_TASK(name) "^vmstack: stack '" name "' on thread 'worker' \\(tid " DEC "\\)$"
#define FRAME(fn) "^vmstack:  \\[<" HEX ">\\] " fn "\\+" HEX "/" HEX " \\[test_overflow_foreign\\]" LINE "$"

/* A minimal coroutine runtime of the test's own, with swapcontext. */
struct coro {
    ucontext_t ctx, back;
    vms_stack st;
    jmp_buf recover;
    long depth, result;
    vms_overflow seen;   /* what the handler was told */
    char seen_name[32];
};

static __thread struct coro *running;

static void coro_body(void)
{
    struct coro *c = running;

    c->result = recurse(c->depth);
}

static void on_overflow(const vms_overflow *ov, void *arg)
{
    struct coro *c = arg;

    c->seen = *ov;
    strncpy(c->seen_name, ov->name, sizeof c->seen_name - 1);
    longjmp(c->recover, 1);
}

static void returning_handler(const vms_overflow *ov, void *arg)
{
    (void)ov;
    (void)arg;
}

/* A coroutine recursing depth levels on a new named stack, not started yet. */
static void coro_prepare(struct coro *c, const char *name, long depth, vms_stack_overflow_fn handler)
{
    memset(c, 0, sizeof *c);
    c->depth = depth;
    CHECK_EQ(vms_stack_alloc(&c->st, 0), 0);
    CHECK_EQ(vms_stack_set_name(&c->st, name), 0);
    if (handler)
        CHECK_EQ(vms_stack_on_overflow(&c->st, handler, c), 0);
    CHECK(getcontext(&c->ctx) == 0);
    c->ctx.uc_stack.ss_sp = c->st.base;
    c->ctx.uc_stack.ss_size = c->st.size;
    c->ctx.uc_link = &c->back;
    makecontext(&c->ctx, coro_body, 0);
}

/* Runs it to its end (0) or to its overflow (1); its stack is freed by address either way. */
static int coro_enter(struct coro *c)
{
    running = c;
    if (setjmp(c->recover)) {
        CHECK_EQ(vms_stack_free_sp(vms_stack_top(&c->st)), 0);
        return 1;
    }
    CHECK(swapcontext(&c->back, &c->ctx) == 0);
    CHECK_EQ(vms_stack_free_sp(c->st.base), 0);
    return 0;
}

/* ---- handler: coroutines made on the main thread, resumed by a worker ---- */

static struct coro coros[3];

static void *worker_handler(void *unused)
{
    (void)unused;
    pthread_setname_np(pthread_self(), "worker");
    CHECK_EQ(vms_thread_attach(), 0);
    CHECK_EQ(vms_thread_attach(), 0); /* once is enough; again is harmless */
    for (int i = 0; i < 2; i++) {
        struct coro *c = &coros[i];
        CHECK_EQ(coro_enter(c), 1);
        CHECK_EQ(c->seen.task, VMS_OVERFLOW_STACK);
        CHECK_EQ(c->seen.id, c->st.id);
        CHECK(!strcmp(c->seen_name, i ? "coro 1" : "coro 0"));
        CHECK(c->seen.stack_lo == c->st.base && c->seen.stack_hi == vms_stack_top(&c->st));
    }
    CHECK_EQ(coro_enter(&coros[2]), 0);
    CHECK_EQ(coros[2].result, recurse_expected(100));
    CHECK_EQ(vms_thread_unattach(), 0);
    CHECK_EQ(vms_thread_unattach(), 0);
    return NULL;
}

static void handler_child(void *unused)
{
    pthread_t t;
    vms_stats s;

    (void)unused;
    coro_prepare(&coros[0], "coro 0", 1L << 40, on_overflow);
    coro_prepare(&coros[1], "coro 1", 1L << 40, on_overflow);
    coro_prepare(&coros[2], "coro 2", 100, on_overflow);
    /* Made by glibc, never allocating: only vms_thread_attach makes it report-ready. */
    CHECK(pthread_create(&t, NULL, worker_handler, NULL) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    vms_stats_get(&s);
    CHECK_EQ(s.live, 0);
    CHECK_EQ(s.altstacks, 1); /* the main thread's, from its allocations */
    CHECK_EQ(s.overflows, 2);
    fprintf(stderr, "test: the process survived\n");
}

static void handler(void)
{
    struct child c;
    const char *pos;

    child_run(&c, handler_child, NULL);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "clean exit");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 2, c.text, "exactly two reports");
    pos = check_report(c.text, 0, STACK_TASK("coro 0"), FRAME("recurse"),
                       "^vmstack: killed stack 'coro 0': its overflow handler ends the coroutine$");
    check_report(pos, 0, STACK_TASK("coro 1"), FRAME("recurse"),
                 "^vmstack: killed stack 'coro 1': its overflow handler ends the coroutine$");
    CHECK_TEXT(count_lines(c.text, "^test: the process survived$") == 1, c.text, "survival");
    free(c.text);
}

/* ---- the scenarios that end the process ---- */

static struct coro doomed;

static vms_overflow_policy say_kill(const vms_overflow *ov, void *arg)
{
    (void)ov;
    (void)arg;
    return VMS_OVERFLOW_KILL;
}

static void *worker_dies(void *attach)
{
    stack_t ss;

    pthread_setname_np(pthread_self(), "worker");
    if (attach)
        CHECK_EQ(vms_thread_attach(), 0);
    /* A sanitizer's runtime gives every thread an alternate stack of its own. */
    CHECK(sigaltstack(NULL, &ss) == 0);
    fprintf(stderr, "test: alternate stack %s\n", ss.ss_flags & SS_DISABLE ? "none" : "set");
    coro_enter(&doomed);
    return NULL;
}

static void dies_child(void *how)
{
    pthread_t t;

    if (!strcmp(how, "kill_no_handler")) {
        vms_set_overflow_callback(say_kill, NULL);
        CHECK_EQ(vms_set_overflow_policy(VMS_OVERFLOW_STACK, VMS_OVERFLOW_CALLBACK), 0);
    }
    coro_prepare(&doomed, how, 1L << 40, strcmp(how, "returning") ? NULL : returning_handler);
    CHECK(pthread_create(&t, NULL, worker_dies, strcmp(how, "unattached") ? how : NULL) == 0);
    pthread_join(t, NULL);
    fprintf(stderr, "test: the process survived\n");
}

static void kill_no_handler(void)
{
    struct child c;

    child_run(&c, dies_child, "kill_no_handler");
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 1, c.text, "exactly one report");
    check_report(c.text, 0, STACK_TASK("kill_no_handler"), FRAME("recurse"),
                 "^vmstack: aborting: stack 'kill_no_handler' has no overflow handler to end it "
                 "\\(vms_stack_on_overflow\\)$");
    free(c.text);
}

static void returning(void)
{
    struct child c;
    const char *pos;
    size_t n;

    child_run(&c, dies_child, "returning");
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    pos = check_report(c.text, 0, STACK_TASK("returning"), FRAME("recurse"),
                       "^vmstack: killed stack 'returning': its overflow handler ends the coroutine$");
    pos = next_line(&pos, &n);
    CHECK_TEXT(pos && line_matches(pos, n, "^vmstack: the overflow handler of stack 'returning' returned: aborting$"),
               c.text, "the handler's return reported");
    free(c.text);
}

/* ---- locked: a kill that would leave libc's FILE lock held is refused ---- */

/* The stream's write function: libc calls it from fprintf, holding the FILE's lock. */
static ssize_t deep_write(void *cookie, const char *buf, size_t len)
{
    (void)cookie;
    (void)buf;
    return recurse(1L << 40) ? (ssize_t)len : 0;
}

static void locked_coro_body(void)
{
    FILE *f = fopencookie(NULL, "w", (cookie_io_functions_t){.write = deep_write});

    CHECK(f);
    setvbuf(f, NULL, _IONBF, 0); /* every fprintf writes at once */
    fprintf(f, "%s %d\n", "to the stream", 1);
}

static void *worker_locked(void *unused)
{
    struct coro plain, in_libc;

    (void)unused;
    pthread_setname_np(pthread_self(), "worker");
    CHECK_EQ(vms_thread_attach(), 0);
    coro_prepare(&plain, "plain", 1L << 40, on_overflow);
    CHECK_EQ(coro_enter(&plain), 1);
    fprintf(stderr, "test: the plain overflow was killed\n");
    coro_prepare(&in_libc, "in libc", 0, on_overflow);
    makecontext(&in_libc.ctx, locked_coro_body, 0);
    coro_enter(&in_libc);
    fprintf(stderr, "test: the overflow in libc was killed too\n");
    return NULL;
}

static void locked_child(void *unused)
{
    pthread_t t;

    (void)unused;
    CHECK(pthread_create(&t, NULL, worker_locked, NULL) == 0);
    pthread_join(t, NULL);
}

static void locked(void)
{
    struct child c;
    const char *pos;

    child_run(&c, locked_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 2, c.text, "exactly two reports");
    pos = check_report(c.text, 0, STACK_TASK("plain"), FRAME("recurse"),
                       "^vmstack: killed stack 'plain': its overflow handler ends the coroutine$");
    CHECK_TEXT(count_lines(c.text, "^test: the plain overflow was killed$") == 1, c.text, "the plain kill");
    /* The outermost frame that may hold a lock: fprintf, libc's or a sanitizer's interceptor. */
    check_report(pos, 0, STACK_TASK("in libc"), FRAME("recurse"),
                 "^vmstack: overflow inside [^ ]*fprintf \\((libc\\.so\\.6|lib[at]san\\.so[.0-9]*)\\): killing the "
                 "coroutine could leave a lock held; aborting$");
    CHECK_TEXT(!strstr(c.text, "test: the overflow in libc was killed too"), c.text, "no kill in libc");
    free(c.text);
}

/* Without any alternate stack the kernel cannot run a handler: death by SIGSEGV, unreported. */
static void unattached(void)
{
    struct child c;

    child_run(&c, dies_child, "unattached");
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    if (strstr(c.text, "test: alternate stack none"))
        CHECK_TEXT(!strstr(c.text, "vmstack: BUG"), c.text, "no report");
    else
        check_report(c.text, 0, STACK_TASK("unattached"), FRAME("recurse"),
                     "^vmstack: aborting: the stack has no overflow handler to end its task "
                     "\\(vms_stack_on_overflow\\); the size given to vms_stack_alloc sizes it$");
    free(c.text);
}

/* ---- api: free by address, names and handlers on what they do not fit ---- */

static void *fiber_fn(void *arg)
{
    vms_stack st;

    CHECK_EQ(vms_fiber_stack(vms_fiber_current(), &st), 0);
    CHECK_EQ(vms_stack_set_name(&st, "mine"), -EBUSY);
    CHECK_EQ(vms_stack_on_overflow(&st, returning_handler, NULL), -EBUSY);
    return arg;
}

/*
 * Free by the top, the address a context starts with, for the stacks of
 * more than one chunk (32 MiB of 80 KiB slots): the top of a chunk's last
 * stack is its trailing guard, every other top the next slot's guard.  One
 * byte above the top is no stack's (with guards).
 */
static void free_by_top(void)
{
    enum { N = 450 };
    static vms_stack st[N];

    for (int i = 0; i < N; i++)
        CHECK_EQ(vms_stack_alloc(&st[i], 16 << 10), 0);
    for (int i = 0; i < N; i++) {
        if (vms_guard_mode_active() != VMS_GUARD_NONE)
            CHECK_EQ(vms_stack_free_sp((char *)vms_stack_top(&st[i]) + 1), -EINVAL);
        CHECK_EQ(vms_stack_free_sp(vms_stack_top(&st[i])), 0);
        CHECK_EQ(vms_stack_free_sp(vms_stack_top(&st[i])), -EINVAL); /* freed already */
    }
}

static void api(void)
{
    vms_stack a, b, stale;
    char local[16];
    vms_fiber f;

    CHECK_EQ(vms_stack_alloc(&a, 0), 0);
    CHECK_EQ(vms_stack_alloc(&b, 0), 0);
    stale = a;
    CHECK_EQ(vms_stack_free_sp((char *)a.base + a.size / 2), 0);
    CHECK_EQ(vms_stack_free_sp(a.base), -EINVAL); /* freed already */
    CHECK(strstr(vms_last_error(), "on no live vmstack stack"));
    CHECK_EQ(vms_stack_free_sp(local), -EINVAL);
    CHECK_EQ(vms_stack_set_name(&stale, "late"), -EINVAL);
    CHECK(strstr(vms_last_error(), "not a live vmstack stack"));
    CHECK_EQ(vms_stack_on_overflow(&stale, returning_handler, NULL), -EINVAL);
    /* A long name is cut to 31 bytes; the stack stays b's. */
    CHECK_EQ(vms_stack_set_name(&b, "a name much longer than thirty-one bytes"), 0);
    CHECK_EQ(vms_stack_free_sp(vms_stack_top(&b)), 0);
    free_by_top();
    CHECK_EQ(vms_fiber_spawn(&f, fiber_fn, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_join(f, NULL), 0);
}

int main(int argc, char **argv)
{
    static const struct scenario list[] = {
        {"handler", handler},       {"kill_no_handler", kill_no_handler}, {"returning", returning},
        {"unattached", unattached}, {"api", api},                         {"locked", locked},
        {NULL, NULL},
    };

    return run_scenario(argc, argv, list);
}
