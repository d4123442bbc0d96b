/* SPDX-License-Identifier: MIT */
/*
 * A program that uses vmstack as an installed library would: the public
 * header only, linked with pkg-config or find_package(vmstack).  The
 * packaging and install tests build it every way a user can, then run it:
 * a fiber runs on a guarded stack and sees that stack as its own.
 */
#include <vmstack.h>

#include <stdio.h>

static void *on_own_stack(void *arg)
{
    int local = 0;

    (void)arg;
    return (void *)(long)vms_on_stack(&local, NULL);
}

int main(void)
{
    vms_fiber f;
    vms_fiber_status st;

    if (vms_fiber_spawn(&f, on_own_stack, NULL, &(vms_fiber_opts){.name = "consumer"}) ||
        vms_fiber_join(f, &st)) {
        fprintf(stderr, "consumer: %s\n", vms_last_error());
        return 1;
    }
    if (st.end != VMS_FIBER_RETURNED || st.result != (void *)1L) {
        fprintf(stderr, "consumer: the fiber did not run on a vmstack stack\n");
        return 1;
    }
    printf("consumer: vmstack %s, fiber ran on a guarded stack\n", VMS_VERSION_STRING);
    return 0;
}
