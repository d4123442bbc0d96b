/* The vmstack command's subcommands and their shared conventions. */
#ifndef VMS_CMD_H
#define VMS_CMD_H

#include <stdio.h>

/*
 * Exit codes of every subcommand: 0 success, 1 failure, 2 bad usage.  Bad
 * usage prints one line "vmstack SUB: REASON (see 'vmstack SUB --help')".
 */
enum { CMD_OK = 0, CMD_FAIL = 1, CMD_USAGE = 2 };

struct cmd {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv); /* argv[0] is the subcommand name */
};

int cmd_demo(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_trace(int argc, char **argv); /* tools/trace.c */
int cmd_checkstack(int argc, char **argv);

/* Prints "vmstack SUB: reason (see 'vmstack SUB --help')" and returns CMD_USAGE. */
int cmd_usage_error(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* True if argv holds -h or --help before any "--". */
int cmd_wants_help(int argc, char **argv);

#endif
