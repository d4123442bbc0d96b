/* SPDX-License-Identifier: MIT */
/* For the tests of the stack tracer through the API. */
#ifndef VMS_TEST_TRACEREPORT_H
#define VMS_TEST_TRACEREPORT_H

#include "check.h"
#include "vmstack.h"

#include <stdio.h>
#include <stdlib.h>

/* vms_trace_report's text, read back from a file; the caller frees it. */
static inline char *report(void)
{
    FILE *f = tmpfile();
    char *text;
    long len;

    CHECK(f);
    CHECK_EQ(vms_trace_report(fileno(f)), 0);
    len = ftell(f);
    CHECK(len > 0);
    CHECK((text = calloc(1, (size_t)len + 1)));
    rewind(f);
    CHECK(fread(text, 1, (size_t)len, f) == (size_t)len);
    fclose(f);
    return text;
}

#endif
