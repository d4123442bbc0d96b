/* SPDX-License-Identifier: MIT */
/*
 * The overflow handler where the audit found it wanting: a kill that would
 * hang the process (overflow inside malloc while another thread allocates),
 * vmstack's own growth path on a fiber in mprotect mode, a thread whose
 * alternate signal stack is the program's own small one, and call-frame
 * information that makes the unwinder read a wild address.
 *   malloc      a fiber overflows inside malloc: abort, said why, no hang
 *   spawn_vmas  a fiber spawns fibers in mprotect mode until the VMA limit:
 *               the limit's error, not an overflow
 *   sigstksz    the thread's alternate stack is a SIGSTKSZ one of its own:
 *               the report, and the fiber killed
 *   bad_cfi     the overflowing function's CFI points the unwinder at an
 *               inaccessible page: the report's first lines, the trace cut
 *               short, and the policy (abort: the chain is unproven)
 *   neighbour   a fiber's one large frame jumps its guard and the next
 *               stack below, into that stack's guard: the runner is
 *               blamed and killed, the neighbour named, marked possibly
 *               corrupted (vms_stack_tainted, its join status) and left
 *               to run
 *   neighbour_thread  the same from a thread into the stack of the thread
 *               below: the runner is blamed, the neighbour named and
 *               marked before the policy is asked (a callback sees it),
 *               and the process aborts, as threads cannot be killed alone
 */
#include "overflow.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define TASK(name, fn) \
    "^vmstack: fiber '" name "' \\(id " DEC "\\) on thread '[^']*' \\(tid " DEC "\\), start routine " fn "\\+0x0/" HEX " \\[test_fault_hard\\]$"
#define HANG_SECONDS 30 /* a child still running then has hung: SIGALRM ends it */

static vms_fiber spawn(void *(*fn)(void *), void *arg, const char *name)
{
    vms_fiber_opts o = {.name = name};
    vms_fiber f;

    CHECK_EQ(vms_fiber_spawn(&f, fn, arg, &o), 0);
    return f;
}

/* ---- malloc ---- */

static _Atomic bool allocating;

/* A small frame, and malloc's deeper one at every level: the guard is hit inside malloc or free. */
NOINLINE long recurse_malloc(long n)
{
    volatile char pad[16];
    char *volatile p = malloc(64 + (size_t)(n & 255));
    long r;

    if (!p)
        return 0;
    pad[n & 15] = (char)n;
    free(p);
    r = recurse_malloc(n + 1); /* the volatile read after the call keeps it a real recursion */
    return r + pad[n & 15];
}

static void *malloc_fiber(void *arg)
{
    return (void *)recurse_malloc((long)arg);
}

static void *allocator(void *unused)
{
    (void)unused;
    atomic_store(&allocating, true);
    for (;;) {
        char *volatile p = malloc(100);
        free(p);
    }
    return NULL;
}

static void malloc_child(void *unused)
{
    pthread_t t;

    (void)unused;
    alarm(HANG_SECONDS);
    CHECK_EQ(pthread_create(&t, NULL, allocator, NULL), 0);
    while (!atomic_load(&allocating))
        ;
    spawn(malloc_fiber, (void *)1, "allocating");
    vms_run();
    /* Were the fiber killed inside malloc, this would hang on the arena's lock. */
    free(malloc(1000));
    fprintf(stderr, "test: went on\n");
}

static void malloc_(void)
{
    struct child c;

    child_run(&c, malloc_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV, not a hang (SIGALRM)");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG: stack guard page was hit at .*") == 1, c.text, "one report");
    CHECK_TEXT(count_lines(c.text, TASK("allocating", "malloc_fiber")) == 1, c.text, "the fiber named");
    /* Under AddressSanitizer or ThreadSanitizer, malloc is the sanitizer's. */
    CHECK_TEXT(count_lines(c.text, "^vmstack: overflow inside [^ ]* \\((libc\\.so\\.6|lib[at]san\\.so[.0-9]*)\\): killing the "
                                   "fiber could leave a lock held; aborting$") == 1,
               c.text, "the reason for not killing");
    free(c.text);
}

/* ---- spawn_vmas ---- */

static void *parked(void *arg)
{
    return arg;
}

static void *spawner(void *result)
{
    vms_fiber f;
    long n = 0;

    while (vms_fiber_spawn(&f, parked, NULL, NULL) == 0)
        if (++n > 100000)
            break;
    snprintf(result, 256, "%ld spawned; %s", n, vms_last_error());
    return NULL;
}

static void spawn_vmas_child(void *unused)
{
    vms_config cfg;
    char result[256] = "";

    (void)unused;
    alarm(HANG_SECONDS);
    vms_config_defaults(&cfg);
    cfg.guard = VMS_GUARD_MPROTECT;
    CHECK_EQ(vms_init(&cfg), 0);
    spawn(spawner, result, "spawner");
    vms_run();
    fprintf(stderr, "test: %s\n", result);
    _exit(0); /* the parked fibers are never run */
}

static void spawn_vmas(void)
{
    struct child c;

#ifdef VMS_TSAN
    /* ThreadSanitizer gives up at 8128 fibers, long before the VMA limit. */
    printf("spawn_vmas: not run under ThreadSanitizer\n");
    return;
#endif

    child_run(&c, spawn_vmas_child, NULL);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "exit 0");
    CHECK_TEXT(!strstr(c.text, "vmstack: BUG"), c.text, "no overflow report");
    CHECK_TEXT(count_lines(c.text, "^test: [0-9]+ spawned; .*(max_map_count|VMA).*$") == 1, c.text,
               "the VMA limit's error");
    free(c.text);
}

/* ---- sigstksz ---- */

static void *deep(void *arg)
{
    volatile long r = recurse((long)arg);

    return (void *)r;
}

static void sigstksz_child(void *unused)
{
    stack_t own = {.ss_size = 8192}; /* the classic SIGSTKSZ */
    vms_fiber_status st;
    vms_fiber f;

    (void)unused;
    alarm(HANG_SECONDS);
    CHECK_EQ(vms_fault_install(), 0);
    CHECK((own.ss_sp = malloc(own.ss_size)));
    CHECK_EQ(sigaltstack(&own, NULL), 0);
    f = spawn(deep, (void *)(1L << 40), "deep");
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(f, &st), 0);
    CHECK_EQ(st.end, VMS_FIBER_KILLED_OVERFLOW);
    fprintf(stderr, "test: went on\n");
}

static void sigstksz(void)
{
    struct child c;

    child_run(&c, sigstksz_child, NULL);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "exit 0");
    CHECK_TEXT(count_lines(c.text, TASK("deep", "deep")) == 1, c.text, "the report");
    CHECK_TEXT(count_lines(c.text, "^vmstack: killed fiber 'deep'$") == 1, c.text, "the kill");
    CHECK_TEXT(strstr(c.text, "test: went on\n"), c.text, "the program went on");
    free(c.text);
}

/* ---- bad_cfi ---- */

/*
 * Pushes pages until the guard stops it.  Its CFI says the canonical frame
 * address is %rdx + 16, and %rdx holds liar_cfa, a PROT_NONE page: the
 * unwinder's first step would read the return address there.
 */
void cfi_liar(void);
char *liar_cfa; /* an inaccessible page: libunwind's own address check (mincore) lets it through */
#if defined(__aarch64__)
__asm__(".text\n"
        ".globl cfi_liar\n"
        ".type cfi_liar, %function\n"
        "cfi_liar:\n"
        ".cfi_startproc\n"
        "    adrp x2, liar_cfa\n"
        "    ldr x2, [x2, :lo12:liar_cfa]\n"
        ".cfi_def_cfa x2, 16\n"
        "1:  sub sp, sp, #4096\n"
        "    str xzr, [sp]\n"
        "    b 1b\n"
        ".cfi_endproc\n"
        ".size cfi_liar, .-cfi_liar\n");
#else
__asm__(".text\n"
        ".globl cfi_liar\n"
        ".type cfi_liar, @function\n"
        "cfi_liar:\n"
        ".cfi_startproc\n"
        "    mov liar_cfa(%rip), %rdx\n"
        ".cfi_def_cfa %rdx, 16\n"
        "1:  sub $4096, %rsp\n"
        "    movq $0, (%rsp)\n"
        "    jmp 1b\n"
        ".cfi_endproc\n"
        ".size cfi_liar, .-cfi_liar\n");
#endif

static void *liar_fiber(void *unused)
{
    (void)unused;
    cfi_liar();
    return NULL;
}

static void bad_cfi_child(void *unused)
{
    (void)unused;
    alarm(HANG_SECONDS);
    liar_cfa = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(liar_cfa != MAP_FAILED);
    spawn(liar_fiber, NULL, "liar");
    vms_run();
}

static void bad_cfi(void)
{
    struct child c;

    child_run(&c, bad_cfi_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG: stack guard page was hit at " HEX " \\(stack is " HEX "\\.\\." HEX
                                   "\\)$") == 1,
               c.text, "the report's first line");
    CHECK_TEXT(count_lines(c.text, TASK("liar", "liar_fiber")) == 1, c.text, "the task line");
    CHECK_TEXT(count_lines(c.text, "^vmstack:  \\[<" HEX ">\\] cfi_liar\\+" HEX "/" HEX " \\[test_fault_hard\\]" LINE "$") == 1,
               c.text, "the faulting frame");
    /* libunwind checks addresses itself (a write() of them to a pipe): the trace ends, no nested fault. */
    CHECK_TEXT(count_lines(c.text, "^vmstack:  \\[<") == 1, c.text, "the trace ends there");
    CHECK_TEXT(count_lines(c.text, "^vmstack: the call chain could not be followed to the fiber's start: killing the "
                                   "fiber could leave a lock held; aborting$") == 1,
               c.text, "the policy went on");
    free(c.text);
}

/* ---- neighbour ---- */

static void *good_fiber(void *unused)
{
    (void)unused;
    vms_yield();
    return (void *)7;
}

/* Jumps its own stack, its guard, and the whole stack below: lands in that stack's guard. */
static void *jumping_fiber(void *arg)
{
    return (void *)(long)big_frame((size_t)arg);
}

static void neighbour_child(void *unused)
{
    vms_stack gs, bs;
    vms_fiber good, bad;
    vms_fiber_status st;
    void *ret;

    (void)unused;
    alarm(HANG_SECONDS);
    good = spawn(good_fiber, NULL, "good");
    CHECK_EQ(vms_fiber_stack(good, &gs), 0);
    /*
     * Fresh slots are handed out upwards with the per-CPU caches off
     * (VMSTACK_CACHE=0, set by the test): the next fiber's stack lies right
     * above good's.
     */
    bad = spawn(jumping_fiber, (void *)(gs.size + gs.guard_size + gs.size + gs.guard_size / 2), "bad");
    CHECK_EQ(vms_fiber_stack(bad, &bs), 0);
    CHECK_TEXT((char *)bs.base == (char *)vms_stack_top(&gs) + bs.guard_size, "", "adjacent stacks");
    CHECK_EQ(vms_stack_tainted(&gs), 0);
    CHECK_EQ(vms_run(), 0);
    /* The neighbour is marked for as long as its stack is allocated; the runner is not. */
    CHECK_EQ(vms_stack_tainted(&gs), 1);
    CHECK_EQ(vms_stack_tainted(&bs), 0);
    CHECK_EQ(vms_fiber_join(bad, &st), 0);
    CHECK_EQ(st.end, VMS_FIBER_KILLED_OVERFLOW);
    CHECK_EQ(st.tainted, 0);
    CHECK_EQ(vms_fiber_join(good, &st), 0);
    CHECK_EQ(st.end, VMS_FIBER_RETURNED);
    CHECK_EQ(st.tainted, 1);
    CHECK_EQ(vms_stack_tainted(&gs), -EINVAL); /* freed: the handle is stale */
    (void)ret;
    fprintf(stderr, "test: good went on, its stack marked\n");
    /* A fiber spawned on the same slot starts unmarked. */
    good = spawn(good_fiber, NULL, "again");
    CHECK_EQ(vms_fiber_stack(good, &gs), 0);
    CHECK_EQ(vms_fiber_join(good, &st), 0);
    CHECK_EQ(st.tainted, 0);
}

static void neighbour(void)
{
    struct child c;

    child_run(&c, neighbour_child, NULL);
    CHECK_TEXT(child_exit(&c) == 0, c.text, "exit 0");
    CHECK_TEXT(count_lines(c.text, TASK("bad", "jumping_fiber")) == 1, c.text, "the runner blamed");
    CHECK_TEXT(count_lines(c.text, "^vmstack: one frame jumped the guard: the access landed in the guard of fiber "
                                   "'good' \\(id " DEC "\\), start routine good_fiber\\+0x0/" HEX
                                   " \\[test_fault_hard\\] \\(stack is " HEX "\\.\\." HEX
                                   "\\), whose stack may be corrupted$") == 1,
               c.text, "the neighbour named");
    CHECK_TEXT(count_lines(c.text, "^vmstack: killed fiber 'bad'$") == 1, c.text, "the runner killed");
    CHECK_TEXT(strstr(c.text, "test: good went on, its stack marked\n"), c.text, "the neighbour went on, marked");
    free(c.text);
}

/* ---- neighbour_thread ---- */

static vms_stack good_stack;
static _Atomic bool good_ready;

/* Keeps its stack live until the process ends. */
static void *good_thread(void *unused)
{
    char here = 0;

    (void)unused;
    CHECK_EQ(vms_on_stack(&here, &good_stack), 1);
    atomic_store(&good_ready, true);
    for (;;)
        pause();
    return NULL;
}

/* From where it stands, through its stack, its guard and good's stack, into the middle of good's guard. */
static void *jumping_thread(void *unused)
{
    vms_stack own;
    char here = 0;

    (void)unused;
    CHECK_EQ(vms_on_stack(&here, &own), 1);
    CHECK_TEXT((char *)own.base == (char *)vms_stack_top(&good_stack) + own.guard_size, "", "adjacent stacks");
    return (void *)(long)big_frame((size_t)(&here - (char *)good_stack.base) + good_stack.guard_size / 2);
}

/* In the signal handler, after the report's body: async-signal-safe. */
static vms_overflow_policy tainted_seen(const vms_overflow *ov, void *unused)
{
    char line[] = "test: the policy callback sees good's stack tainted ?\n";

    (void)ov;
    (void)unused;
    line[sizeof line - 3] = (char)('0' + vms_stack_tainted(&good_stack));
    write(2, line, sizeof line - 1);
    return VMS_OVERFLOW_ABORT;
}

static void neighbour_thread_child(void *unused)
{
    pthread_attr_t a;
    pthread_t good, bad;

    (void)unused;
    alarm(HANG_SECONDS);
    /*
     * Stacks of their own size class, which no alternate signal stack
     * shares (those are of the default size): with the per-CPU caches off
     * (VMSTACK_CACHE=0, set by the test), bad's lies right above good's.
     * ThreadSanitizer wants room for its static TLS at the top.
     */
    pthread_attr_init(&a);
#ifdef VMS_TSAN
    pthread_attr_setstacksize(&a, (size_t)4 << 20);
#else
    pthread_attr_setstacksize(&a, (size_t)128 << 10);
#endif
    vms_set_overflow_callback(tainted_seen, NULL);
    CHECK_EQ(vms_set_overflow_policy(VMS_OVERFLOW_THREAD, VMS_OVERFLOW_CALLBACK), 0);
    CHECK_EQ(vms_thread_create(&good, &a, good_thread, NULL, "good"), 0);
    while (!atomic_load(&good_ready))
        sched_yield();
    CHECK_EQ(vms_stack_tainted(&good_stack), 0);
    CHECK_EQ(vms_thread_create(&bad, &a, jumping_thread, NULL, "bad"), 0);
    vms_thread_join(bad, NULL);
    fprintf(stderr, "test: the process survived\n");
}

static void neighbour_thread(void)
{
    struct child c;

    child_run(&c, neighbour_thread_child, NULL);
    CHECK_TEXT(child_signal(&c) == SIGSEGV, c.text, "death by SIGSEGV");
    CHECK_TEXT(count_lines(c.text, "^vmstack: BUG: stack guard page was hit at .*") == 1, c.text, "one report");
    CHECK_TEXT(count_lines(c.text, "^vmstack: thread 'bad' \\(tid " DEC "\\), start routine jumping_thread\\+0x0/" HEX
                                   " \\[test_fault_hard\\]$") == 1,
               c.text, "the runner blamed");
    CHECK_TEXT(count_lines(c.text, "^vmstack: one frame jumped the guard: the access landed in the guard of thread "
                                   "'good' \\(tid unknown\\), start routine good_thread\\+0x0/" HEX
                                   " \\[test_fault_hard\\] \\(stack is " HEX "\\.\\." HEX
                                   "\\), whose stack may be corrupted$") == 1,
               c.text, "the neighbour named");
    CHECK_TEXT(count_lines(c.text, "^test: the policy callback sees good's stack tainted 1$") == 1, c.text,
               "the neighbour marked before the policy");
    CHECK_TEXT(count_lines(c.text, "^vmstack: aborting: a thread cannot be killed alone without risking the rest of "
                                   "the process; the stack size of its pthread_attr_t \\(else VMSTACK_STACK_SIZE\\) "
                                   "sizes its stack$") == 1, c.text, "abort");
    CHECK_TEXT(!strstr(c.text, "test: the process survived"), c.text, "no survival");
    free(c.text);
}

int main(int argc, char **argv)
{
    static const struct scenario list[] = {
        {"malloc", malloc_}, {"spawn_vmas", spawn_vmas}, {"sigstksz", sigstksz}, {"bad_cfi", bad_cfi},
        {"neighbour", neighbour}, {"neighbour_thread", neighbour_thread}, {NULL, NULL},
    };

    return run_scenario(argc, argv, list);
}
