/* SPDX-License-Identifier: MIT */
/*
 * 10,000 live fibers, the tracer's default: every one is traced, and the
 * one that went deepest (the last spawned, 100 levels down where the
 * others go 10) is the one the report names as the deepest; no line
 * says that tasks went untraced.
 */
#include "tracereport.h"

#include <string.h>

#define FIBERS 10000

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
    char *text;

    unsetenv("VMSTACK_TRACE_MAX_TASKS");
    CHECK_EQ(vms_trace_enable(0, 0), 0);
    for (int i = 0; i < FIBERS; i++)
        CHECK_EQ(vms_fiber_spawn(&fibers[i], fiber, (void *)(intptr_t)(i == FIBERS - 1 ? 100 : 10),
                                 &(vms_fiber_opts){.name = i == FIBERS - 1 ? "runaway" : "worker"}),
                 0);
    CHECK_EQ(vms_run(), 0);
    text = report();
    CHECK(strstr(text, "overall deepest: fiber 'runaway'"));
    CHECK(!strstr(text, "were not traced"));
    free(text);
    puts("ok");
    return 0;
}
