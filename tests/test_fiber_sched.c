/* SPDX-License-Identifier: MIT */
/*
 * The scheduler: fibers yielding in interleaved order run in exactly the
 * expected (FIFO round-robin) sequence; fibers spawning fibers; names, ids
 * and the current fiber; deep recursion within a fiber's stack size, and
 * stack usage measured around the canary; stack colouring: fibers start
 * at different offsets within their top page, yet never with less stack
 * below than was asked; the floating-point control state is per fiber, as
 * the ABI's callee-saved MXCSR and x87 control word demand: a fiber's
 * rounding mode stays its own across switches, and fibers started after
 * it changed (even launched from its context) start with their spawner's.
 */
#include "check.h"
#include "core/internal.h"

#include <fenv.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define NF 200
#define ROUNDS 50

static int log_[NF * ROUNDS + NF];
static int nlog;

/* Fiber i runs i % 7 + 1 rounds, logging itself once per round. */
static void *rounds(void *arg)
{
    int i = (int)(intptr_t)arg;

    for (int r = 0; r < i % 7 + 1; r++) {
        log_[nlog++] = i;
        CHECK_EQ(vms_yield(), 0);
    }
    return (void *)(intptr_t)(i * 10);
}

static void interleaving(void)
{
    vms_fiber f[NF];
    int pos = 0;

    nlog = 0;
    for (int i = 0; i < NF; i++)
        CHECK_EQ(vms_fiber_spawn(&f[i], rounds, (void *)(intptr_t)i, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    /* Round r holds the fibers that still had a round r, in spawn order. */
    for (int r = 0; r < 7; r++)
        for (int i = 0; i < NF; i++)
            if (r < i % 7 + 1)
                CHECK_EQ(log_[pos++], i);
    CHECK_EQ(nlog, pos);
    for (int i = 0; i < NF; i++) {
        vms_fiber_status st;
        CHECK_EQ(vms_fiber_join(f[i], &st), 0);
        CHECK_EQ(st.end, VMS_FIBER_RETURNED);
        CHECK_EQ((intptr_t)st.result, i * 10);
    }
}

/* A tree: each fiber spawns two children down to depth 0 and sums their results. */
static void *tree(void *arg)
{
    int depth = (int)(intptr_t)arg;
    vms_fiber kid[2];
    vms_fiber_status st;
    intptr_t sum = 1;

    if (depth == 0)
        return (void *)sum;
    for (int i = 0; i < 2; i++)
        CHECK_EQ(vms_fiber_spawn(&kid[i], tree, (void *)(intptr_t)(depth - 1), &(vms_fiber_opts){ .name = "kid" }), 0);
    for (int i = 0; i < 2; i++) {
        CHECK_EQ(vms_fiber_join(kid[i], &st), 0);
        sum += (intptr_t)st.result;
    }
    return (void *)sum;
}

static void spawning(void)
{
    vms_fiber root;
    vms_fiber_status st;
    vms_stats before, after;

    vms_stats_get(&before);
    CHECK_EQ(vms_fiber_spawn(&root, tree, (void *)(intptr_t)10, NULL), 0);
    CHECK_EQ(vms_fiber_join(root, &st), 0);
    CHECK_EQ((intptr_t)st.result, (1 << 11) - 1);
    vms_stats_get(&after);
    CHECK_EQ(after.live, before.live);
}

static void *whoami(void *arg)
{
    vms_fiber self = vms_fiber_current();
    vms_fiber *expect = arg;

    CHECK(self.id != 0);
    CHECK_EQ(self.id, expect->id);
    CHECK_EQ(vms_fiber_id(self), expect->id);
    CHECK(strcmp(vms_fiber_name(self), "a-name-longer-than-thirty-one-b") == 0);
    return NULL;
}

/* Where a fiber's first frame lies, below its stack's top, and how much stack is below it. */
struct where {
    uintptr_t page_offset;
    size_t below;
    uint32_t colour;      /* the slot number modulo 32 */
};

static void *where_am_i(void *arg)
{
    struct where *w = arg;
    /* The frame, not a local: a sanitizer may keep locals elsewhere. */
    char *here = __builtin_frame_address(0);
    vms_stack st;

    CHECK_EQ(vms_fiber_stack(vms_fiber_current(), &st), 0);
    w->page_offset = (uintptr_t)here % (uintptr_t)sysconf(_SC_PAGESIZE);
    w->below = (size_t)(here - (char *)st.base);
    w->colour = st.id % 32;
    return NULL;
}

static int distinct_offsets(const struct where *w, int n)
{
    int distinct = 0;

    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= w[j].page_offset == w[i].page_offset;
        distinct += !seen;
    }
    return distinct;
}

static void colouring(void)
{
    enum { N = 32, ASKED = 32 << 10 };
    const vms_fiber_opts o = { .stack_size = ASKED };
    bool coloured = vms__g.mode != VMS_GUARD_MPROTECT;
    struct where w[N];
    vms_fiber f[N];

    for (int i = 0; i < N; i++)
        CHECK_EQ(vms_fiber_spawn(&f[i], where_am_i, &w[i], &o), 0);
    CHECK_EQ(vms_run(), 0);
    for (int i = 0; i < N; i++) {
        CHECK_EQ(vms_fiber_join(f[i], NULL), 0);
        CHECK(w[i].below >= ASKED - 256); /* all that was asked, less the frames that started the fiber */
        /* Same colour, same offset in the page; another colour, another offset. */
        for (int j = 0; j < i && coloured; j++)
            CHECK_EQ(w[j].colour == w[i].colour, w[j].page_offset == w[i].page_offset);
    }
    /* 32 stacks live at once on 32 slots: several colours (none in the mprotect mode). */
    if (coloured)
        CHECK(distinct_offsets(w, N) >= 8);
    else
        CHECK_EQ(distinct_offsets(w, N), 1);
}

static void identity(void)
{
    vms_fiber f, g;
    vms_fiber_opts o = { .name = "a-name-longer-than-thirty-one-bytes" };
    vms_stack st;

    CHECK_EQ(vms_fiber_current().id, 0);
    CHECK_EQ(vms_fiber_spawn(&f, whoami, &f, &o), 0);
    CHECK_EQ(vms_fiber_spawn(&g, whoami, &g, &o), 0);
    CHECK(f.id != g.id);
    CHECK(strcmp(vms_fiber_name(f), "a-name-longer-than-thirty-one-b") == 0);
    CHECK_EQ(vms_run(), 0);
    /* A shallow fiber used little of its stack (its colour, up to 2 KiB, and a few frames): */
    /* a canary at the bottom is not usage. */
    CHECK_EQ(vms_fiber_stack(f, &st), 0);
    CHECK(vms_stack_used(&st) > 0 && vms_stack_used(&st) < 8192);
    CHECK_EQ(vms_fiber_join(f, NULL), 0);
    CHECK_EQ(vms_fiber_join(g, NULL), 0);
    CHECK(vms_fiber_name(f) == NULL);
}

/* Each level holds a 1 KiB frame it really uses. */
static long recurse(int depth)
{
    volatile char buf[1024];

    memset((char *)buf, depth & 0x7f, sizeof buf);
    if (depth == 0)
        return buf[0];
    return buf[depth % sizeof buf] + recurse(depth - 1) + (vms_yield(), 0);
}

static void *deep(void *arg)
{
    return (void *)recurse((int)(intptr_t)arg);
}

static void recursion(void)
{
    const vms_fiber_opts o = { .name = "deep", .stack_size = 512 << 10 };
    vms_fiber f, other;
    vms_fiber_status st;
    vms_stack stk;
    long expect = 0;

    for (int d = 300; d > 0; d--)
        expect += d & 0x7f;
    /* Another fiber interleaves with every level. */
    CHECK_EQ(vms_fiber_spawn(&f, deep, (void *)(intptr_t)300, &o), 0);
    CHECK_EQ(vms_fiber_spawn(&other, deep, (void *)(intptr_t)300, &o), 0);
    CHECK_EQ(vms_fiber_stack(f, &stk), 0);
    /* 2 KiB more for the colour, rounded up to a size class, except in the mprotect mode. */
    CHECK_EQ(stk.size, vms__size_class((512 << 10) + (vms__g.mode == VMS_GUARD_MPROTECT ? 0 : 2048)));
    CHECK_EQ(vms_run(), 0);
    /* About 300 KiB of its 512 KiB were used, and counted. */
    CHECK(vms_stack_used(&stk) > 290 << 10);
    CHECK(vms_stack_used(&stk) < 512 << 10);
    CHECK_EQ(vms_fiber_join(f, &st), 0);
    CHECK_EQ(st.end, VMS_FIBER_RETURNED);
    CHECK_EQ((long)(intptr_t)st.result, expect);
    CHECK_EQ(vms_fiber_join(other, &st), 0);
    CHECK_EQ((long)(intptr_t)st.result, expect);
}

/*
 * The rounding mode in every unit: on x86-64 the x87 control word
 * (fegetround) and MXCSR (SSE); on aarch64 FPCR, which fegetround reads.
 */
static void check_mode(int mode)
{
    CHECK_EQ(fegetround(), mode);
#if defined(__x86_64__)
    uint32_t mxcsr;

    __asm__ volatile("stmxcsr %0" : "=m"(mxcsr));
    CHECK_EQ((mxcsr >> 3) & 0xc00, (uint32_t)mode); /* RC bits 13-14 in fenv's encoding */
#endif
}

/* A fiber sets its own rounding mode; the other contexts keep theirs. */
static void *rounding(void *arg)
{
    int mode = (int)(intptr_t)arg;

    fesetround(mode);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(vms_yield(), 0);
        check_mode(mode);
    }
    return NULL;
}

/* Never changes the mode: sees its spawner's (the main context's) throughout. */
static void *plain_mode(void *arg)
{
    (void)arg;
    for (int i = 0; i < 4; i++) {
        check_mode(FE_TONEAREST);
        CHECK_EQ(vms_yield(), 0);
    }
    return NULL;
}

static void fp_state(void)
{
    vms_fiber a, b, c;

    check_mode(FE_TONEAREST);
    CHECK_EQ(vms_fiber_spawn(&a, rounding, (void *)(intptr_t)FE_DOWNWARD, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&b, rounding, (void *)(intptr_t)FE_UPWARD, NULL), 0);
    /* Started by the first switch from b, whose mode is upward by then. */
    CHECK_EQ(vms_fiber_spawn(&c, plain_mode, NULL, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    check_mode(FE_TONEAREST);
    CHECK_EQ(vms_fiber_join(a, NULL), 0);
    CHECK_EQ(vms_fiber_join(b, NULL), 0);
    CHECK_EQ(vms_fiber_join(c, NULL), 0);
}

int main(void)
{
    vms_sched_stats s;

    interleaving();
    spawning();
    identity();
    colouring();
    recursion();
    fp_state();
    vms_sched_stats_get(&s);
    CHECK_EQ(s.live, 0);
    CHECK_EQ(s.spawned, s.returned);
    CHECK(s.switches > NF * ROUNDS / 10);
    printf("ok: %llu fibers, %llu switches, peak %zu live\n", (unsigned long long)s.spawned,
           (unsigned long long)s.switches, s.peak_live);
    return 0;
}
