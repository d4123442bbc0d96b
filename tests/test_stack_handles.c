/* SPDX-License-Identifier: MIT */
/*
 * Handles are checked against the table, cheaply and on every call: a
 * fiber's stack is not freed under it (-EBUSY, by handle and by address,
 * from outside and from the fiber itself); a handle with a forged size,
 * base or id is refused (-EINVAL), where vms_stack_used once scanned the
 * region beyond the stack.  A stack's record that someone wrote (a name, a
 * runtime's settings) is clear when the stack is handed out again, though
 * the free of a bare stack clears nothing; a thread that gave up its
 * alternate signal stack gets one again at its next allocation.
 */
#include "check.h"
#include "vmstack.h"
#include "core/internal.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

static int fiber_ran;

static void *self_free(void *arg)
{
    vms_stack me;
    int here = 0;

    (void)arg;
    CHECK_EQ(vms_on_stack(&here, &me), 1);
    CHECK_EQ(vms_stack_free(&me), -EBUSY);
    CHECK_EQ(vms_stack_free_sp(&here), -EBUSY);
    CHECK_EQ(vms_yield(), 0);
    fiber_ran = 1;
    return NULL;
}

/* A live fiber's stack is not given back under it, whoever asks. */
static void busy(void)
{
    vms_stack st, other;
    vms_fiber f;
    vms_stats before, after;

    CHECK_EQ(vms_fiber_spawn(&f, self_free, NULL, NULL), 0);
    CHECK_EQ(vms_fiber_stack(f, &st), 0);
    vms_stats_get(&before);
    CHECK_EQ(vms_stack_free(&st), -EBUSY);
    CHECK(strstr(vms_last_error(), "belongs to fiber") != NULL);
    CHECK_EQ(vms_stack_free_sp(vms_stack_top(&st)), -EBUSY);
    vms_stats_get(&after);
    CHECK_EQ(after.live, before.live);
    /* Not handed out again while the fiber runs on it. */
    CHECK_EQ(vms_stack_alloc(&other, st.size), 0);
    CHECK(other.base != st.base);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(fiber_ran, 1);
    CHECK_EQ(vms_fiber_join(f, NULL), 0);
    CHECK_EQ(vms_stack_free(&other), 0);
}

/* Forged sizes, bases and ids: -EINVAL from every handle call, and nothing changed. */
static void forged(void)
{
    vms_stack st, bad;

    CHECK_EQ(vms_stack_alloc(&st, 64 << 10), 0);
    memset((char *)vms_stack_top(&st) - 128, 1, 128);
    CHECK_EQ(vms_stack_used(&st), 128);

    bad = st;
    bad.size = (size_t)64 << 30;
    errno = 0;
    CHECK_EQ(vms_stack_used(&bad), 0);
    CHECK_EQ(errno, EINVAL);
    CHECK_EQ(vms_stack_tainted(&bad), -EINVAL);
    CHECK_EQ(vms_stack_free(&bad), -EINVAL);

    bad = st;
    bad.base = (char *)st.base + 4096;
    CHECK_EQ(vms_stack_used(&bad), 0);
    CHECK_EQ(vms_stack_free(&bad), -EINVAL);
    CHECK_EQ(vms_stack_set_name(&bad, "forged"), -EINVAL);

    bad = st;
    bad.id = UINT32_MAX;
    CHECK_EQ(vms_stack_used(&bad), 0);
    CHECK_EQ(vms_stack_tainted(&bad), -EINVAL);
    CHECK_EQ(vms_stack_free(&bad), -EINVAL);
    memset(&bad, 0, sizeof bad);
    CHECK_EQ(vms_stack_free(&bad), -EINVAL);
    CHECK_EQ(vms_stack_free(NULL), -EINVAL);

    /* The true handle still works, once. */
    CHECK_EQ(vms_stack_used(&st), 128);
    CHECK_EQ(vms_stack_tainted(&st), 0);
    CHECK_EQ(vms_stack_free(&st), 0);
    CHECK_EQ(vms_stack_free(&st), -EALREADY);
    CHECK_EQ(vms_stack_used(&st), 0);
    CHECK_EQ(vms_stack_free_sp(vms_stack_top(&st)), -EINVAL);
}

static const struct vms_task *record(const vms_stack *st)
{
    return &vms__slot_of_id(st->id)->task;
}

/* A record someone wrote is clear for the next owner of its stack; a bare one was never written. */
static void records(void)
{
    const vms_stack_opts opts = { .size = 64 << 10, .outermost_return = 0x1234, .abort_reason = "why" };
    vms_stack st, again;

    CHECK_EQ(vms_stack_alloc(&st, 64 << 10), 0);
    CHECK_EQ(vms_stack_set_name(&st, "named"), 0);
    CHECK_EQ(record(&st)->kind, VMS_TASK_STACK);
    CHECK_EQ(vms_stack_free(&st), 0);
    CHECK_EQ(vms_stack_alloc(&again, 64 << 10), 0);
    CHECK(again.base == st.base); /* the thread's LIFO: the same slot */
    CHECK_EQ(record(&again)->kind, VMS_TASK_NONE);
    CHECK_EQ(record(&again)->name[0], 0);
    CHECK_EQ(vms_stack_free_sp(vms_stack_top(&again)), 0);

    /* Settings without a name or handler leave the kind NONE, and are cleared all the same. */
    CHECK_EQ(vms_stack_alloc_opts(&st, &opts), 0);
    CHECK_EQ(record(&st)->outermost, 0x1234);
    CHECK_EQ(vms_stack_free(&st), 0);
    CHECK_EQ(vms_stack_alloc(&again, 64 << 10), 0);
    CHECK(again.base == st.base);
    CHECK_EQ(record(&again)->outermost, 0);
    CHECK(record(&again)->abort_reason == NULL);
    CHECK_EQ(vms_stack_free(&again), 0);
}

/* A thread that gave up its alternate signal stack is made report-ready again by its next allocation. */
static void *reattach(void *arg)
{
    vms_stack st;
    vms_stats s;
    size_t base = *(size_t *)arg;

    CHECK_EQ(vms_stack_alloc(&st, 0), 0);
    CHECK_EQ(vms_stack_free(&st), 0);
    vms_stats_get(&s);
    CHECK_EQ(s.altstacks, base + 1);
    CHECK_EQ(vms_thread_unattach(), 0);
    vms_stats_get(&s);
    CHECK_EQ(s.altstacks, base);
    CHECK_EQ(vms_stack_alloc(&st, 0), 0);
    vms_stats_get(&s);
    CHECK_EQ(s.altstacks, base + 1);
    CHECK_EQ(vms_stack_free(&st), 0);
    return NULL;
}

int main(void)
{
    vms_stats s;
    size_t base;
    pthread_t t;

    CHECK_EQ(vms_init(NULL), 0);
    busy();
    forged();
    records();
    vms_stats_get(&s);
    base = s.altstacks;
    CHECK_EQ(pthread_create(&t, NULL, reattach, &base), 0);
    CHECK_EQ(pthread_join(t, NULL), 0);
    printf("fiber stacks busy, forged handles refused, records clear, altstack again after unattach\n");
    return 0;
}
