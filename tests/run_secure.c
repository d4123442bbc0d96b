/* SPDX-License-Identifier: MIT */
/*
 * A program linked with libvmstack.so (or the preload library), for
 * test_harden.sh's setuid_env:
 * prints what its vmstack made of the environment, whose VMSTACK_* a
 * set-user-ID copy of it must not read.
 */
#include "vmstack.h"

#include <stdio.h>
#include <sys/auxv.h>

int main(void)
{
    vms_stack st;
    vms_config cfg;
    int rc = vms_stack_alloc(&st, 0);

    vms_config_get(&cfg);
    printf("secure %lu\nalloc %d\nguard %s\nconfig stack %zu guard %zu\n", getauxval(AT_SECURE), rc,
           vms_guard_mode_name(vms_guard_mode_active()), cfg.stack_size, cfg.guard_size);
    return 0;
}
