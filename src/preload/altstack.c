/* SPDX-License-Identifier: MIT */
/*
 * The program's alternate signal stack under 'vmstack run': sigaltstack()
 * is interposed so that the program reads back and replaces its own stack
 * while the kernel keeps vmstack's (vms__altstack_program in the fault
 * layer says why).  A thread without ours gets the kernel's own answer.
 */
#include "fault/fault.h"
#include "preload/preload.h"

#include <signal.h>

VMS_API int sigaltstack(const stack_t *ss, stack_t *old)
{
    int rc;

    if (vms__altstack_program(ss, old, &rc))
        return rc;
    return vms__altstack_kernel(ss, old);
}
