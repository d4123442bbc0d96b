/* SPDX-License-Identifier: MIT */
/*
 * A coroutine runtime of the test's own with the two traits of minicoro's
 * assembly backend that kept vmstack from ending one of its coroutines
 * alone: its record (state, saved context, storage) at the low end of the
 * block it runs a coroutine on, with the stack right above it; and a
 * sentinel return address (0xdeaddeaddeaddead) as every coroutine's
 * outermost frame.  It gets its blocks from an allocator callback, as
 * minicoro's MCO_ALLOC; the test's callback puts them on vmstack with
 * vms_stack_alloc_opts.
 *   several       four coroutines take turns; the third overflows on its
 *                 second turn: the report names it and ends at the
 *                 runtime's entry, its handler ends it alone, the others
 *                 finish with the right results, and every record (the
 *                 overflowed one's too) still has its checksum
 *   on_stack      the same with the handler on the coroutine's own stack
 *                 (handler_on_stack), where it ends the coroutine by the
 *                 runtime's own switch away from it, as minicoro's
 *                 mco_yield would
 *   no_outermost  the sentinel not named: the chain cannot be followed to
 *                 the stack's entry, so the kill is refused: death by
 *                 SIGSEGV, and the report's last line says why
 *   no_reserve    no reserve for the record: the coroutine is ended, but
 *                 the overflow ran over its record first (the checksum
 *                 fails), which is what the reserve is for
 *   api           vms_stack_alloc_opts' errors, and a stack that had an
 *                 inner guard is whole again for its next user
 */
#include "overflow.h"

#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>

#define SENTINEL ((uintptr_t)0xdeaddeaddeaddeadULL)
#define CORO_SIZE ((size_t)64 << 10)

/* ---- the runtime ---- */

enum { MC_SUSPENDED, MC_RUNNING, MC_DEAD, MC_OVERFLOWED };

/* At the low end of its block, the stack above it (as minicoro keeps its mco_coro and context). */
struct mc_coro {
    void *sp;              /* saved while suspended */
    int state;
    long result;
    struct {
        uint64_t magic;
        int index;
        long depth;        /* the recursion of its second turn */
        size_t size;
        unsigned char storage[2900];
    } fixed;
    uint64_t sum;          /* of fixed */
};

typedef void *(*mc_alloc_fn)(size_t size);

static void *mc_sched_sp;
static struct mc_coro *mc_current;
static jmp_buf mc_recover;

/* Saves the callee-saved registers on the stack and *save, loads them from to. */
void mc_switch(void **save, void *to);
/* The first switch into a coroutine returns here, which enters mc_main with the sentinel as its return address. */
void mc_wrap(void);

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl mc_switch\n.type mc_switch,@function\n"
        "mc_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size mc_switch, .-mc_switch\n"
        ".globl mc_wrap\n.type mc_wrap,@function\n"
        "mc_wrap:\n"
        "  movq %r13, %rdi\n  jmpq *%r12\n"
        ".size mc_wrap, .-mc_wrap\n");
enum { SAVED_WORDS = 6 };
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl mc_switch\n.type mc_switch,%function\n"
        "mc_switch:\n"
        "  sub sp, sp, #160\n"
        "  stp x19, x20, [sp, #0]\n  stp x21, x22, [sp, #16]\n  stp x23, x24, [sp, #32]\n"
        "  stp x25, x26, [sp, #48]\n  stp x27, x28, [sp, #64]\n  stp x29, x30, [sp, #80]\n"
        "  stp d8, d9, [sp, #96]\n  stp d10, d11, [sp, #112]\n  stp d12, d13, [sp, #128]\n"
        "  stp d14, d15, [sp, #144]\n"
        "  mov x2, sp\n  str x2, [x0]\n  mov sp, x1\n"
        "  ldp x19, x20, [sp, #0]\n  ldp x21, x22, [sp, #16]\n  ldp x23, x24, [sp, #32]\n"
        "  ldp x25, x26, [sp, #48]\n  ldp x27, x28, [sp, #64]\n  ldp x29, x30, [sp, #80]\n"
        "  ldp d8, d9, [sp, #96]\n  ldp d10, d11, [sp, #112]\n  ldp d12, d13, [sp, #128]\n"
        "  ldp d14, d15, [sp, #144]\n"
        "  add sp, sp, #160\n  ret\n"
        ".size mc_switch, .-mc_switch\n"
        ".globl mc_wrap\n.type mc_wrap,%function\n"
        "mc_wrap:\n"
        "  mov x0, x19\n  mov x30, x21\n  br x20\n"
        ".size mc_wrap, .-mc_wrap\n");
#else
#error "the test's coroutine switch is written for x86-64 and aarch64"
#endif

static uint64_t mc_checksum(const struct mc_coro *co)
{
    const unsigned char *p = (const unsigned char *)&co->fixed;
    uint64_t h = 1469598103934665603ULL;

    for (size_t i = 0; i < sizeof co->fixed; i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
}

static void mc_yield(void)
{
    struct mc_coro *co = mc_current;

    co->state = MC_SUSPENDED;
    mc_switch(&co->sp, mc_sched_sp);
}

/* Three turns: a little work, a deep recursion, a little work. */
NOINLINE void mc_main(struct mc_coro *co)
{
    co->result = recurse(10);
    mc_yield();
    co->result += recurse(co->fixed.depth);
    mc_yield();
    co->result += recurse(20);
    co->state = MC_DEAD;
    mc_switch(&co->sp, mc_sched_sp);
    __builtin_unreachable(); /* a dead coroutine is never switched to again */
}

static struct mc_coro *mc_create(mc_alloc_fn alloc, int index, long depth)
{
    struct mc_coro *co = alloc(CORO_SIZE);
    uintptr_t *top;

    CHECK(co);
    memset(co, 0, sizeof *co);
    co->fixed.magic = 0x6d696e69636f726fULL;
    co->fixed.index = index;
    co->fixed.depth = depth;
    co->fixed.size = CORO_SIZE;
    for (size_t i = 0; i < sizeof co->fixed.storage; i++)
        co->fixed.storage[i] = (unsigned char)(i * 7 + (size_t)index);
    co->sum = mc_checksum(co);
    top = (uintptr_t *)(((uintptr_t)co + CORO_SIZE) & ~(uintptr_t)15);
#if defined(__x86_64__)
    /* r15 r14 r13 r12 rbx rbp, then mc_switch's return to mc_wrap, then mc_main's return address. */
    top[-1] = SENTINEL;
    top[-2] = (uintptr_t)mc_wrap;
    memset(top - 2 - SAVED_WORDS, 0, SAVED_WORDS * sizeof *top);
    top[-2 - SAVED_WORDS + 2] = (uintptr_t)co;      /* r13 */
    top[-2 - SAVED_WORDS + 3] = (uintptr_t)mc_main; /* r12 */
    co->sp = top - 2 - SAVED_WORDS;
#else
    /* x19..x28, x29, x30 (mc_wrap), d8..d15: mc_wrap calls x20 (mc_main) with x19 and lr = x21. */
    memset(top - 20, 0, 20 * sizeof *top);
    top[-20] = (uintptr_t)co;
    top[-19] = (uintptr_t)mc_main;
    top[-18] = SENTINEL;
    top[-9] = (uintptr_t)mc_wrap;
    co->sp = top - 20;
#endif
    co->state = MC_SUSPENDED;
    return co;
}

/* Runs co until it yields or ends; false once it can no longer run. */
static bool mc_resume(struct mc_coro *co)
{
    if (co->state != MC_SUSPENDED)
        return false;
    if (setjmp(mc_recover)) {
        co->state = MC_OVERFLOWED; /* its frames are abandoned; its record is as it was */
        mc_current = NULL;
        return false;
    }
    co->state = MC_RUNNING;
    mc_current = co;
    mc_switch(&mc_sched_sp, co->sp);
    mc_current = NULL;
    return co->state == MC_SUSPENDED;
}

/* ---- the test's allocators: the runtime's blocks on vmstack ---- */

/* Called after the report, on the alternate signal stack: back to the runtime's resume. */
static void mc_on_overflow(const vms_overflow *ov, void *arg)
{
    (void)ov;
    (void)arg;
    longjmp(mc_recover, 1);
}

/*
 * The same on the coroutine's own stack (handler_on_stack): it ends the
 * coroutine as the runtime's own switch away from it would, for good.
 */
static void mc_end_on_stack(const vms_overflow *ov, void *arg)
{
    struct mc_coro *co = mc_current;
    char here;

    (void)arg;
    fprintf(stderr, "test: the handler runs on %s's own stack: %s\n", ov->name,
            &here >= (char *)ov->stack_lo && &here < (char *)ov->stack_hi ? "yes" : "no");
    co->state = MC_OVERFLOWED;
    mc_switch(&co->sp, mc_sched_sp);
}

static char names[4][16];
static int named;

static void *alloc_with(size_t size, uintptr_t outermost, size_t reserve, bool on_stack)
{
    vms_stack st;
    vms_stack_opts o = {
        .size = size,
        .name = names[named],
        .on_overflow = on_stack ? mc_end_on_stack : mc_on_overflow,
        .outermost_return = outermost,
        .low_reserve = reserve,
        .handler_on_stack = on_stack,
    };

    snprintf(names[named], sizeof names[named], "coro %d", named);
    named++;
    return vms_stack_alloc_opts(&st, &o) ? NULL : st.base;
}

static void *alloc_vmstack(size_t size)
{
    return alloc_with(size, SENTINEL, sizeof(struct mc_coro), false);
}

static void *alloc_on_stack(size_t size)
{
    return alloc_with(size, SENTINEL, sizeof(struct mc_coro), true);
}

static void *alloc_no_outermost(size_t size)
{
    return alloc_with(size, 0, sizeof(struct mc_coro), false);
}

static void *alloc_no_reserve(size_t size)
{
    return alloc_with(size, SENTINEL, 0, false);
}

/* ---- scenarios ---- */

#define STACK_TASK(name) "^vmstack: stack '" name "' on thread '[^']*' \\(tid " DEC "\\)$"
#define FRAME(fn) "^vmstack:  \\[<" HEX ">\\] " fn "\\+" HEX "/" HEX " \\[test_overflow_coro\\]" LINE "$"

/* Four coroutines in turn until all have ended; the third overflows.  Prints what became of each. */
static void run_four(void *alloc)
{
    struct mc_coro *co[4];
    bool more = true;

    for (int i = 0; i < 4; i++)
        co[i] = mc_create((mc_alloc_fn)alloc, i, i == 2 ? 1L << 40 : 50 * (i + 1));
    while (more) {
        more = false;
        for (int i = 0; i < 4; i++)
            more |= mc_resume(co[i]);
    }
    for (int i = 0; i < 4; i++) {
        long want = recurse_expected(10) + recurse_expected(50 * (i + 1)) + recurse_expected(20);
        fprintf(stderr, "test: coro %d %s, record %s\n", i,
                co[i]->state == MC_DEAD && co[i]->result == want ? "finished"
                : co[i]->state == MC_OVERFLOWED                  ? "overflowed"
                                                                 : "went wrong",
                mc_checksum(co[i]) == co[i]->sum && co[i]->fixed.index == i ? "intact" : "damaged");
        CHECK_EQ(vms_stack_free_sp(co[i]), 0);
    }
}

static const char *const killed_coro2 = "^vmstack: killed stack 'coro 2': its overflow handler ends the coroutine$";

/* The report's trace ends at the runtime's entry: mc_main is its last frame. */
static void check_trace_ends_at_entry(const char *text)
{
    const char *last = NULL, *pos = text, *s;
    size_t n, last_n = 0;

    while ((s = next_line(&pos, &n)))
        if (line_matches(s, n, "^vmstack:  \\[<"))
            last = s, last_n = n;
    CHECK_TEXT(last && line_matches(last, last_n, FRAME("mc_main")), text, "the trace ends at mc_main");
}

static void several(void)
{
    struct child c;

    child_run(&c, run_four, (void *)alloc_vmstack);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "clean exit");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 1, c.text, "exactly one report");
    check_report(c.text, 0, STACK_TASK("coro 2"), FRAME("recurse"), killed_coro2);
    check_trace_ends_at_entry(c.text);
    CHECK_TEXT(count_lines(c.text, "^test: coro [013] finished, record intact$") == 3, c.text, "the others finish");
    CHECK_TEXT(count_lines(c.text, "^test: coro 2 overflowed, record intact$") == 1, c.text, "coro 2 ended, intact");
    free(c.text);
}

static void on_stack(void)
{
    struct child c;

    child_run(&c, run_four, (void *)alloc_on_stack);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "clean exit");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG:") == 1, c.text, "exactly one report");
    check_report(c.text, 0, STACK_TASK("coro 2"), FRAME("recurse"), killed_coro2);
    CHECK_TEXT(count_lines(c.text, "^test: the handler runs on coro 2's own stack: yes$") == 1, c.text, "on its stack");
    CHECK_TEXT(count_lines(c.text, "^test: coro [013] finished, record intact$") == 3, c.text, "the others finish");
    CHECK_TEXT(count_lines(c.text, "^test: coro 2 overflowed, record intact$") == 1, c.text, "coro 2 ended, intact");
    free(c.text);
}

static void no_outermost(void)
{
    struct child c;

    child_run(&c, run_four, (void *)alloc_no_outermost);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    check_report(c.text, 0, STACK_TASK("coro 2"), FRAME("recurse"),
                 "^vmstack: the call chain could not be followed to the stack's entry: killing the coroutine could "
                 "leave a lock held; aborting$");
    free(c.text);
}

static void no_reserve(void)
{
    struct child c;

    child_run(&c, run_four, (void *)alloc_no_reserve);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "clean exit");
    check_report(c.text, 0, STACK_TASK("coro 2"), FRAME("recurse"), killed_coro2);
    CHECK_TEXT(count_lines(c.text, "^test: coro [013] finished, record intact$") == 3, c.text, "the others finish");
    CHECK_TEXT(count_lines(c.text, "^test: coro 2 overflowed, record damaged$") == 1, c.text, "coro 2's record run over");
    free(c.text);
}

static void api(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    vms_stack st, again;
    vms_stack_opts o = {.size = 16 << 10, .low_reserve = 12 << 10};

    CHECK_EQ(vms_stack_alloc_opts(&st, NULL), 0);
    CHECK_EQ(st.size, 64 << 10);
    CHECK_EQ(vms_stack_free(&st), 0);
    /* 12 KiB and a page of guard leave nothing of 16 KiB on 4 KiB pages (and less on larger ones). */
    o.low_reserve = (16 << 10) - page;
    CHECK_EQ(vms_stack_alloc_opts(&st, &o), -EINVAL);
    CHECK(strstr(vms_last_error(), "leave no page"));
    o.low_reserve = 1;
    o.low_guard = 16 << 10;
    CHECK_EQ(vms_stack_alloc_opts(&st, &o), -EINVAL);
    /* A reserve of one byte is a page; the guard above it goes with the free. */
    o.low_guard = 0;
    o.size = 64 << 10;
    o.name = "reserved";
    CHECK_EQ(vms_stack_alloc_opts(&st, &o), 0);
    ((volatile char *)st.base)[page - 1] = 1;
    CHECK_EQ(vms_stack_free(&st), 0);
    /* The thread's own cache hands the slot out again at once, whole. */
    CHECK_EQ(vms_stack_alloc(&again, 64 << 10), 0);
    CHECK(again.base == st.base);
    memset(again.base, 0xa5, again.size);
    CHECK_EQ(vms_stack_free(&again), 0);
}

int main(int argc, char **argv)
{
    static const struct scenario list[] = {
        {"several", several}, {"on_stack", on_stack}, {"no_outermost", no_outermost},
        {"no_reserve", no_reserve}, {"api", api},
        {NULL, NULL},
    };

    return run_scenario(argc, argv, list);
}
