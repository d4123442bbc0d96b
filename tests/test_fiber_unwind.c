/* SPDX-License-Identifier: MIT */
/*
 * Unwinders stop cleanly at a fiber's first frame: glibc's backtrace()
 * (the compiler's unwinder, from call-frame information), libunwind's local
 * unwinding, and a walk of the frame-pointer chain all reach the launch
 * stub at the base of the fiber's stack and end there without an error,
 * never reading past the stack's top.  Checked in a fiber started from the
 * thread's own stack, and in one started by a fiber that just ended; and
 * in a thread on a vmstack stack, where glibc's thread start is the
 * outermost frame.
 */
#include "check.h"
#include "task/task.h"

#define UNW_LOCAL_ONLY
#include <execinfo.h>
#include <libunwind.h>
#include <stdint.h>

#define MAX_FRAMES 64

/* The launch stub's code: where the last frame of every fiber must be. */
static int in_launch(uintptr_t ip)
{
    return ip > (uintptr_t)vms__fiber_launch && ip < (uintptr_t)vms__fiber_launch + 256;
}

static __attribute__((noinline)) void check_glibc(int fiber)
{
    void *ips[MAX_FRAMES];
    int n = backtrace(ips, MAX_FRAMES);

    CHECK(n > 2 && n < MAX_FRAMES);
    CHECK(!fiber || in_launch((uintptr_t)ips[n - 1]));
}

static __attribute__((noinline)) void check_libunwind(int fiber)
{
    unw_context_t uc;
    unw_cursor_t c;
    unw_word_t ip = 0;
    int n = 0, rc;

    CHECK_EQ(unw_getcontext(&uc), 0);
    CHECK_EQ(unw_init_local(&c, &uc), 0);
    do {
        CHECK_EQ(unw_get_reg(&c, UNW_REG_IP, &ip), 0);
        n++;
    } while ((rc = unw_step(&c)) > 0 && n < MAX_FRAMES);
    CHECK_EQ(rc, 0); /* the end, not an error */
    CHECK(!fiber || in_launch((uintptr_t)ip));
}

/* Saved frame pointers lead up the fiber's stack to a zero, inside the stack. */
static __attribute__((noinline)) void check_frame_pointers(void)
{
    struct vms_fiber_desc *f = vms__fiber_current();
    uintptr_t *fp = __builtin_frame_address(0);
    int n = 0;

    while (fp && n++ < MAX_FRAMES) {
        CHECK((uintptr_t)fp >= (uintptr_t)f->base && (uintptr_t)fp < (uintptr_t)f->base + f->size);
        fp = (uintptr_t *)fp[0];
    }
    CHECK(fp == NULL);
}

static void *unwind_here(void *arg)
{
    check_glibc(1);
    check_libunwind(1);
    check_frame_pointers();
    return arg;
}

static void *unwind_in_thread(void *arg)
{
    check_glibc(0);
    check_libunwind(0);
    return arg;
}

/* Ends at once, so that the next fiber is launched from this one's end. */
static void *quick(void *arg)
{
    return arg;
}

static void in_thread(void)
{
    pthread_t t;
    void *ret;

    CHECK_EQ(vms_thread_create(&t, NULL, unwind_in_thread, (void *)4, "unwinder"), 0);
    CHECK_EQ(vms_thread_join(t, &ret), 0);
    CHECK_EQ((intptr_t)ret, 4);
}

int main(void)
{
    vms_fiber a, b;
    vms_fiber_status st;

    CHECK_EQ(vms_fiber_spawn(&a, unwind_here, (void *)1, NULL), 0);
    CHECK_EQ(vms_fiber_join(a, &st), 0);
    CHECK_EQ((intptr_t)st.result, 1);
    CHECK_EQ(vms_fiber_spawn(&a, quick, (void *)2, NULL), 0);
    CHECK_EQ(vms_fiber_spawn(&b, unwind_here, (void *)3, NULL), 0);
    CHECK_EQ(vms_run(), 0);
    CHECK_EQ(vms_fiber_join(a, &st), 0);
    CHECK_EQ(vms_fiber_join(b, &st), 0);
    CHECK_EQ((intptr_t)st.result, 3);
    in_thread();
    printf("ok\n");
    return 0;
}
