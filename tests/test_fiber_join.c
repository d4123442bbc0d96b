/* SPDX-License-Identifier: MIT */
/*
 * How fibers end and how they are joined: results; fibers joining fibers;
 * the canary kill with its report and kill hook where no guard is below a
 * stack (run with VMSTACK_GUARD=none), and no canary page touched where a
 * guard is; the fault handler's kill
 * (vms__fiber_kill_current reached by redirecting a signalled context, as
 * the overflow handler does) without leaking stacks; and every misuse
 * giving its error: stale, foreign, detached, self and double joins, yield
 * and hooks outside a fiber, bad spawns, deadlocks.
 */
#include "check.h"
#include "task/task.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static void expect(int rc, int err, const char *msg_part)
{
    if (rc != -err || !strstr(vms_last_error(), msg_part)) {
        fprintf(stderr, "expected -%d with \"%s\", got %d: \"%s\"\n", err, msg_part, rc, vms_last_error());
        exit(1);
    }
}

static void *ret_arg(void *arg)
{
    vms_yield();
    return arg;
}

/* Joins the fiber its argument points to, and returns that one's result + 1. */
static void *joiner(void *arg)
{
    vms_fiber_status st;

    CHECK_EQ(vms_fiber_join(*(vms_fiber *)arg, &st), 0);
    CHECK_EQ(st.end, VMS_FIBER_RETURNED);
    return (char *)st.result + 1;
}

static void joining(void)
{
    vms_fiber a, b, c;
    vms_fiber_status st;

    /* c joins b joins a; main joins c, so the whole chain runs inside this join. */
    CHECK_EQ(vms_fiber_spawn(&c, joiner, &b, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&b, joiner, &a, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&a, ret_arg, (void *)40, NULL), 0);
    CHECK_EQ(vms_fiber_join(c, &st), 0);
    CHECK_EQ(st.end, VMS_FIBER_RETURNED);
    CHECK_EQ((intptr_t)st.result, 42);
    expect(vms_fiber_join(a, &st), EALREADY, "was joined already");
    expect(vms_fiber_join(b, &st), EALREADY, "stale handle");
}

/* ---- canary ---- */

static int hook_runs;
static void hook(void *arg)
{
    CHECK_EQ((intptr_t)arg, 7);
    hook_runs++;
}

static void *smash(void *arg)
{
    vms_stack st;

    CHECK_EQ(vms_fiber_on_kill(hook, (void *)7), 0);
    CHECK_EQ(vms_fiber_stack(vms_fiber_current(), &st), 0);
    *(volatile uint64_t *)st.base = 0; /* the stack end, as an overflow without guard would */
    if (arg)
        vms_yield();                    /* killed here... */
    return (void *)1;                   /* ...or when it ends */
}

static void canary(int at_yield)
{
    FILE *tmp = tmpfile();
    int saved = dup(STDERR_FILENO);
    char out[512] = "";
    char want[128];
    vms_fiber f;
    vms_fiber_status st;
    vms_stats before, after;

    CHECK(tmp && saved >= 0);
    vms_stats_get(&before);
    hook_runs = 0;
    CHECK_EQ(vms_fiber_spawn(&f, smash, (void *)(intptr_t)at_yield, &(vms_fiber_opts){ .name = "smasher" }), 0);
    dup2(fileno(tmp), STDERR_FILENO);
    CHECK_EQ(vms_fiber_join(f, &st), 0);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    CHECK(fread(out, 1, sizeof out - 1, tmp) > 0);
    fclose(tmp);
    fputs(out, stderr);
    snprintf(want, sizeof want,
             "vmstack: BUG: corrupted stack end detected inside scheduler: fiber 'smasher' (id %llu)",
             (unsigned long long)f.id);
    CHECK(strncmp(out, want, strlen(want)) == 0);
    CHECK(strstr(out, "; killed fiber 'smasher'\n"));
    CHECK_EQ(st.end, VMS_FIBER_KILLED_CANARY);
    CHECK(st.result == NULL);
    CHECK_EQ(hook_runs, 1);
    vms_stats_get(&after);
    CHECK_EQ(after.live, before.live);
}

/*
 * A guarded fiber that used little stack has one resident page: no canary
 * at the bottom (unless the bottom page is the top one: 64 KiB pages).
 */
static void *bottom_resident(void *arg)
{
    vms_stack st;
    unsigned char vec;

    (void)arg;
    CHECK_EQ(vms_fiber_stack(vms_fiber_current(), &st), 0);
    vms_yield();
    CHECK_EQ(mincore(st.base, 1, &vec), 0);
    return (void *)(intptr_t)((vec & 1) && st.size > (size_t)sysconf(_SC_PAGESIZE));
}

static void no_canary_page(void)
{
    vms_fiber f;
    vms_fiber_status st;

    CHECK_EQ(vms_fiber_spawn(&f, bottom_resident, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_join(f, &st), 0);
    CHECK_EQ(st.end, VMS_FIBER_RETURNED);
    CHECK_EQ((intptr_t)st.result, 0);
}

/* ---- the fault handler's kill ---- */

/* What the overflow handler does: resume the context at the kill, near its stack's top. */
static void redirect(int sig, siginfo_t *si, void *ctx)
{
    ucontext_t *uc = ctx;
    struct vms_fiber_desc *f = vms__fiber_current();
    uintptr_t top = (uintptr_t)(f->base + f->size);

    (void)sig, (void)si;
    vms__uc_redirect(uc, top - 256, vms__fiber_kill_current, VMS_FIBER_KILLED_OVERFLOW);
}

static long deep_raise(int depth)
{
    volatile char buf[512];

    buf[0] = (char)depth;
    if (depth == 0)
        raise(SIGUSR1);
    else
        deep_raise(depth - 1);
    return buf[0];
}

static void *victim(void *arg)
{
    (void)arg;
    CHECK_EQ(vms_fiber_on_kill(hook, (void *)7), 0);
    vms_yield();
    deep_raise(20);
    CHECK(!"a killed fiber went on");
    return NULL;
}

/* ThreadSanitizer keeps a context per live fiber, at most 8128. */
#if defined(__SANITIZE_THREAD__)
#define KILLS 4000
#else
#define KILLS 10000
#endif

static void killing(void)
{
    enum { N = KILLS };
    struct sigaction sa = { .sa_sigaction = redirect, .sa_flags = SA_SIGINFO };
    static vms_fiber f[N];
    vms_fiber_status st;
    vms_sched_stats s0, s1;
    vms_stats before, after;

    sigaction(SIGUSR1, &sa, NULL);
    vms_sched_stats_get(&s0);
    vms_stats_get(&before);
    hook_runs = 0;
    /* Every other one detached: its stack must come back without a join. */
    for (int i = 0; i < N; i++)
        CHECK_EQ(vms_fiber_spawn(i % 2 ? NULL : &f[i], victim, NULL, &(vms_fiber_opts){ .detached = i % 2 }), 0);
    CHECK_EQ(vms_run(), 0);
    for (int i = 0; i < N; i += 2) {
        CHECK_EQ(vms_fiber_join(f[i], &st), 0);
        CHECK_EQ(st.end, VMS_FIBER_KILLED_OVERFLOW);
        CHECK(st.result == NULL);
    }
    CHECK_EQ(hook_runs, N);
    vms_sched_stats_get(&s1);
    CHECK_EQ(s1.killed - s0.killed, N);
    vms_stats_get(&after);
    CHECK_EQ(after.live, before.live);
    signal(SIGUSR1, SIG_DFL);
}

/* ---- misuse ---- */

static vms_fiber target;

static void *inside(void *arg)
{
    vms_fiber self = vms_fiber_current();

    (void)arg;
    expect(vms_fiber_join(self, NULL), EDEADLK, "tried to join itself");
    expect(vms_run(), EPERM, "vms_run from a fiber");
    expect(vms_fiber_join(target, NULL), EBUSY, "already being joined");
    return NULL;
}

static void *wait_target(void *arg)
{
    (void)arg;
    CHECK_EQ(vms_fiber_join(target, NULL), 0);
    return NULL;
}

static void misuse(void)
{
    vms_fiber f, w, d, stale, bad, many[64];
    bool reused = false;
    cpu_set_t one;

    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    CHECK_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    expect(vms_yield(), EPERM, "vms_yield outside a fiber");
    expect(vms_fiber_on_kill(hook, NULL), EPERM, "outside a fiber");
    expect(vms_fiber_spawn(&f, NULL, NULL, NULL), EINVAL, "no function to run");
    expect(vms_fiber_spawn(NULL, ret_arg, NULL, NULL), EINVAL, "no place for the handle");
    expect(vms_fiber_spawn(&f, ret_arg, NULL, &(vms_fiber_opts){ .stack_size = ((size_t)1 << 30) + 1 }), EINVAL,
           "at most 1 GiB");

    expect(vms_fiber_join((vms_fiber){ 0, 0 }, NULL), EINVAL, "not a fiber handle");
    expect(vms_fiber_join((vms_fiber){ 5, 0xfffffff0u }, NULL), EINVAL, "not a fiber handle");
    CHECK(vms_fiber_name((vms_fiber){ 0, 0 }) == NULL && errno == EINVAL);

    /* Self join, run from a fiber, and a second joiner, from inside. */
    CHECK_EQ(vms_fiber_spawn(&target, ret_arg, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&w, wait_target, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&f, inside, NULL, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(f, NULL), 0);
    CHECK_EQ(vms_fiber_join(w, NULL), 0);
    expect(vms_fiber_join(target, NULL), EALREADY, "joined already");

    /*
     * A stale handle stays stale when its slot and descriptor are reused:
     * pinned to one CPU, 64 spawns drain the caches the slot went to.
     */
    CHECK_EQ(vms_fiber_spawn(&stale, ret_arg, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_join(stale, NULL), 0);
    for (int i = 0; i < 64; i++) {
        CHECK_EQ(vms_fiber_spawn(&many[i], ret_arg, NULL, NULL), 0);
        reused |= many[i].ref == stale.ref;
    }
    CHECK(reused);
    expect(vms_fiber_join(stale, NULL), EALREADY, "stale handle");
    bad = many[0];
    bad.id += 1000000;
    expect(vms_fiber_join(bad, NULL), EALREADY, "stale handle");
    for (int i = 0; i < 64; i++)
        CHECK_EQ(vms_fiber_join(many[i], NULL), 0);

    CHECK_EQ(vms_fiber_spawn(&d, ret_arg, NULL, &(vms_fiber_opts){ .detached = 1 }), 0);
    expect(vms_fiber_join(d, NULL), EINVAL, "is detached");
    CHECK_EQ(vms_run(), 0);
    expect(vms_fiber_join(d, NULL), EALREADY, "detached and has ended");
}

static vms_fiber cyc[2];

static void *join_other(void *arg)
{
    int i = (int)(intptr_t)arg;

    vms_fiber_join(cyc[!i], NULL);
    CHECK(!"a deadlocked fiber went on");
    return NULL;
}

/* Last: leaves two fibers waiting for each other forever. */
static void deadlock(void)
{
    vms_fiber ok;

    for (int i = 0; i < 2; i++)
        CHECK_EQ(vms_fiber_spawn(&cyc[i], join_other, (void *)(intptr_t)i, NULL), 0);
    expect(vms_run(), EDEADLK, "the 2 live fibers of this thread all wait");
    expect(vms_fiber_join(cyc[0], NULL), EBUSY, "already being joined");
    /* The rest of the thread still works. */
    CHECK_EQ(vms_fiber_spawn(&ok, ret_arg, (void *)5, NULL), 0);
    CHECK_EQ(vms_fiber_join(ok, NULL), 0);
}

int main(void)
{
    CHECK_EQ(vms_init(NULL), 0);
    if (vms__g.mode != VMS_GUARD_NONE)
        no_canary_page();
    joining();
    if (vms__g.mode == VMS_GUARD_NONE) {
        canary(1);
        canary(0);
    }
    killing();
    misuse();
    deadlock();
    printf("ok\n");
    return 0;
}
