/* SPDX-License-Identifier: MIT */
/*
 * The message behind the last negative errno a vmstack call returned in
 * this thread.  Library code never prints; callers print vms_last_error().
 */
#include "core/internal.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[256];

int vms__fail(int err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return -err;
}

const char *vms_last_error(void)
{
    return last_error;
}
