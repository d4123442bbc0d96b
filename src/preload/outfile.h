/* SPDX-License-Identifier: MIT */
/*
 * --output FILE, replaced whole and safely (outfile.c): shared by the
 * preload library (tables on --report-signal) and the launcher (the table
 * at exit); path "-" is stdout.  0, or -1 after a message through tell, which names the
 * command sub ("run" or "trace").
 */
#ifndef VMS_OUTFILE_H
#define VMS_OUTFILE_H

#include <stddef.h>

int vms__run_write_output(const char *sub, const char *path, const char *text, size_t len,
                          void (*tell)(const char *fmt, ...) __attribute__((format(printf, 1, 2))));

#endif
