/* SPDX-License-Identifier: MIT */
/*
 * Call-frame information that points the overflow handler's unwinding at
 * a word it cannot read: the report keeps the frames it had found, the
 * trace ends there, and the policy goes on.
 *
 * vmstack's unwinding checks every page of every word it reads (both
 * pages of a word that straddles two; see src/fault/unwind.c), where
 * libunwind's own check looks at the first page only.  So the test's
 * frame liar_call says, in its call-frame information, that its return
 * address is the eight bytes at the end of a readable page that run four
 * bytes into an inaccessible one (a guard made the way the stacks' guards
 * are: MADV_GUARD_INSTALL, or PROT_NONE in the mprotect mode).  The word
 * is refused, no fault is taken, and liar_call is the trace's last frame.
 *
 * The stack is a fiber's in the fiber case and a coroutine's own (with an
 * overflow handler) in the stack case.  In both the kill is refused: the
 * kill check faults the same way, so the chain cannot be followed to the
 * task's entry, and a chain not followed proves no lock free.
 *   fiber  "... to the fiber's start: killing the fiber ...", death by SIGSEGV
 *   stack  "... to the stack's entry: killing the coroutine ...", death by
 *          SIGSEGV, the stack's handler not called
 */
#include "overflow.h"

#include <setjmp.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

#define HANG_SECONDS 30 /* a child still running then has hung: SIGALRM ends it */
#define FRAME(fn) "^vmstack:  \\[<" HEX ">\\] " fn "\\+" HEX "/" HEX " \\[test_unwind_broken\\]" LINE "$"

/*
 * liar_call(fn, arg, page) calls fn(arg) with %rbx = page.  Its CFI says
 * the canonical frame address is %rbx + 4 during the call, so the unwinder
 * looks for the return address (8 bytes below that) at page - 4.  %rbx is callee-saved: the
 * callee's own CFI gives it back to the unwinder unchanged.
 */
long liar_call(long (*fn)(long), long arg, char *page);
#if defined(__aarch64__)
/* The same on aarch64: x19 = page, CFA = x19 + 4, x30 saved at CFA - 8. */
__asm__(".text\n"
        ".globl liar_call\n"
        ".type liar_call, %function\n"
        "liar_call:\n"
        ".cfi_startproc\n"
        "    stp x19, x30, [sp, #-16]!\n"
        ".cfi_def_cfa_offset 16\n"
        ".cfi_offset x19, -16\n"
        ".cfi_offset x30, -8\n"
        "    mov x19, x2\n"
        ".cfi_def_cfa x19, 4\n"
        "    mov x3, x0\n"
        "    mov x0, x1\n"
        "    blr x3\n"
        ".cfi_def_cfa sp, 16\n"
        "    ldp x19, x30, [sp], #16\n"
        ".cfi_def_cfa_offset 0\n"
        ".cfi_restore x19\n"
        ".cfi_restore x30\n"
        "    ret\n"
        ".cfi_endproc\n"
        ".size liar_call, .-liar_call\n");
#else
__asm__(".text\n"
        ".globl liar_call\n"
        ".type liar_call, @function\n"
        "liar_call:\n"
        ".cfi_startproc\n"
        "    push %rbx\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    mov %rdx, %rbx\n"
        ".cfi_def_cfa %rbx, 4\n"
        "    mov %rdi, %rax\n"
        "    mov %rsi, %rdi\n"
        "    call *%rax\n"
        ".cfi_def_cfa %rsp, 16\n"
        "    pop %rbx\n"
        ".cfi_def_cfa_offset 8\n"
        "    ret\n"
        ".cfi_endproc\n"
        ".size liar_call, .-liar_call\n");
#endif

/*
 * A readable page, then one made inaccessible as the stacks' guards are:
 * returns the second one's start, whose 4 bytes below and 4 above make the
 * straddling word that liar_call's CFI names as its return address.
 */
static char *straddle(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    char *p = mmap(NULL, 2 * (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    CHECK(p != MAP_FAILED);
    memset(p, 0x5a, (size_t)pg); /* resident, so that mincore has something to say */
    if (vms_guard_mode_active() == VMS_GUARD_MADVISE)
        CHECK(madvise(p + pg, (size_t)pg, MADV_GUARD_INSTALL) == 0);
    else
        CHECK(mprotect(p + pg, (size_t)pg, PROT_NONE) == 0);
    return p + pg;
}

static char *liar_page;

/*
 * Checks the report line by line: everything exact but numbers and the
 * thread's name; the overflowing recursion, then liar_call, then the break.
 */
static void check_broken_report(const char *text, const char *task_re, const char *outcome_re)
{
    static const char *const lines[] = {
        "^vmstack: BUG: stack guard page was hit at " HEX " \\(stack is " HEX "\\.\\." HEX "\\)$",
        NULL, /* the task */
        "^vmstack: stack " DEC " KiB, guard " DEC " KiB at " HEX "\\.\\." HEX "; sp is " DEC " bytes below the top$",
        "^vmstack: ip " HEX " sp " HEX " bp " HEX "$",
        "^vmstack: Call Trace:$",
        FRAME("recurse"),
        FRAME("recurse"),
        "^vmstack:  \\.\\.\\. " DEC " more frames? of recurse\\+" HEX "/" HEX " \\[test_unwind_broken\\]$",
        FRAME("liar_call"),
        NULL, /* the outcome */
    };
    const char *pos = text, *s;
    size_t n;

    while ((s = next_line(&pos, &n)) && !line_matches(s, n, lines[0]))
        ;
    CHECK_TEXT(s, text, "the report's first line");
    for (size_t i = 1; i < sizeof lines / sizeof *lines; i++) {
        const char *re = lines[i] ? lines[i] : i == 1 ? task_re : outcome_re;
        s = next_line(&pos, &n);
        if (!s || !line_matches(s, n, re)) {
            fprintf(stderr, "expected a line matching %s\n", re);
            CHECK_TEXT(0, text, "the report's lines in order");
        }
    }
    CHECK_TEXT(count_lines(text, "^vmstack: BUG:") == 1, text, "one report");
}

/* ---- fiber ---- */

static void *liar_fiber(void *unused)
{
    (void)unused;
    return (void *)liar_call(recurse, 1L << 40, liar_page);
}

static void fiber_child(void *unused)
{
    vms_fiber_opts o = {.name = "liar"};
    vms_fiber f;

    (void)unused;
    alarm(HANG_SECONDS);
    liar_page = straddle();
    CHECK_EQ(vms_fiber_spawn(&f, liar_fiber, NULL, &o), 0);
    vms_run();
    fprintf(stderr, "test: went on\n");
}

static void fiber(void)
{
    struct child c;

    child_run(&c, fiber_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV (not SIGALRM, not a nested fault's)");
    check_broken_report(c.text,
                        "^vmstack: fiber 'liar' \\(id " DEC "\\) on thread '[^']*' \\(tid " DEC
                        "\\), start routine liar_fiber\\+0x0/" HEX " \\[test_unwind_broken\\]$",
                        "^vmstack: the call chain could not be followed to the fiber's start: killing the fiber "
                        "could leave a lock held; aborting$");
    CHECK_TEXT(!strstr(c.text, "test: went on"), c.text, "the program did not go on");
    free(c.text);
}

/* ---- stack ---- */

static ucontext_t coro_ctx, back_ctx;
static jmp_buf recover;

static void coro_body(void)
{
    liar_call(recurse, 1L << 40, liar_page);
}

static void on_overflow(const vms_overflow *ov, void *arg)
{
    (void)ov;
    (void)arg;
    longjmp(recover, 1);
}

static void stack_child(void *unused)
{
    vms_stack st;

    (void)unused;
    alarm(HANG_SECONDS);
    liar_page = straddle();
    CHECK_EQ(vms_stack_alloc(&st, 0), 0);
    CHECK_EQ(vms_stack_set_name(&st, "liar"), 0);
    CHECK_EQ(vms_stack_on_overflow(&st, on_overflow, NULL), 0);
    CHECK(getcontext(&coro_ctx) == 0);
    coro_ctx.uc_stack.ss_sp = st.base;
    coro_ctx.uc_stack.ss_size = st.size;
    coro_ctx.uc_link = &back_ctx;
    makecontext(&coro_ctx, coro_body, 0);
    if (setjmp(recover) == 0) {
        swapcontext(&back_ctx, &coro_ctx);
        CHECK_TEXT(0, "", "the coroutine returned");
    }
    CHECK_EQ(vms_stack_free_sp(vms_stack_top(&st)), 0);
    fprintf(stderr, "test: went on\n");
}

static void stack(void)
{
    struct child c;

    child_run(&c, stack_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV (not SIGALRM, not a nested fault's)");
    check_broken_report(c.text, "^vmstack: stack 'liar' on thread '[^']*' \\(tid " DEC "\\)$",
                        "^vmstack: the call chain could not be followed to the stack's entry: killing the "
                        "coroutine could leave a lock held; aborting$");
    CHECK_TEXT(!strstr(c.text, "test: went on"), c.text, "the program did not go on");
    free(c.text);
}

int main(int argc, char **argv)
{
    static const struct scenario list[] = {{"fiber", fiber}, {"stack", stack}, {NULL, NULL}};

    return run_scenario(argc, argv, list);
}
