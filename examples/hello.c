/* SPDX-License-Identifier: MIT */
/*
 * The README's first program: two fibers on guarded vmstack stacks.  One
 * recurses without end; its overflow is reported and only it is killed.
 * Build: cc hello.c $(pkg-config --cflags --libs vmstack)
 */
#include <stdio.h>
#include <vmstack.h>

static long sum(long n)  /* a frame of 1 KiB per call: read after the call, so never a loop */
{
    volatile char frame[1000];

    frame[0] = (char)n;
    return n <= 0 ? 0 : sum(n - 1) + frame[0];
}

static void *shallow(void *arg) { (void)arg; return (void *)sum(10); }
static void *runaway(void *arg) { return (void *)sum((long)arg); }

int main(void)
{
    vms_fiber a, b;
    vms_fiber_status sa, sb;

    if (vms_fiber_spawn(&a, shallow, NULL, &(vms_fiber_opts){ .name = "shallow" }) < 0 ||
        vms_fiber_spawn(&b, runaway, (void *)1000000, &(vms_fiber_opts){ .name = "runaway" }) < 0) {
        fprintf(stderr, "%s\n", vms_last_error());
        return 1;
    }
    vms_fiber_join(a, &sa);  /* runs both fibers: the thread's scheduler */
    vms_fiber_join(b, &sb);
    printf("shallow: returned %ld\n", (long)sa.result);
    printf("runaway: %s\n", sb.end == VMS_FIBER_KILLED_OVERFLOW ? "killed by its overflow" : "returned");
    return sb.end == VMS_FIBER_KILLED_OVERFLOW ? 0 : 1;
}
