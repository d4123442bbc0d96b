/* SPDX-License-Identifier: MIT */
/*
 * More live fibers than the tracer traces at once (4096 here, by
 * VMSTACK_TRACE_MAX_TASKS): the report says how many went untraced and
 * why, and the deepest it names is one it traced.  The last fiber
 * spawned, untraced, goes deepest.
 */
#include "check.h"
#include "tracereport.h"
#include "vmstack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIBERS 4300
#define TRACED 4096

static __attribute__((noinline, noclone)) int down(int n)
{
    volatile unsigned char buf[512];

    buf[0] = (unsigned char)n;
    if (n == 0) {
        vms_yield();
        return buf[0];
    }
    return down(n - 1) + buf[0];
}

static void *fiber(void *arg)
{
    return (void *)(intptr_t)down((int)(intptr_t)arg);
}

int main(void)
{
    static vms_fiber fibers[FIBERS];
    char want[160], *text;

    CHECK_EQ(setenv("VMSTACK_TRACE_MAX_TASKS", "4096", 1), 0);
    CHECK_EQ(vms_trace_enable(0, 0), 0);
    for (int i = 0; i < FIBERS; i++)
        CHECK_EQ(vms_fiber_spawn(&fibers[i], fiber, (void *)(intptr_t)(i == FIBERS - 1 ? 100 : 10),
                                 &(vms_fiber_opts){.name = i == FIBERS - 1 ? "runaway" : "worker"}),
                 0);
    CHECK_EQ(vms_run(), 0);
    text = report();
    snprintf(want, sizeof want, "%d tasks were not traced: %d tasks are traced at once ('vmstack trace --max-tasks N' "
                                "raises the limit); the deepest below is of those traced\n", FIBERS - TRACED, TRACED);
    CHECK(strstr(text, want));
    CHECK(!strstr(text, "fiber 'runaway'"));
    CHECK(strstr(text, "overall deepest: fiber 'worker'"));
    free(text);
    puts("ok");
    return 0;
}
