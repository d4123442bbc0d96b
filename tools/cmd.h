/* SPDX-License-Identifier: MIT */
/* The vmstack command's subcommands and their shared conventions. */
#ifndef VMS_CMD_H
#define VMS_CMD_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

/*
 * Exit codes of every subcommand: 0 success, 1 failure, 2 bad usage; run
 * and trace, wrappers, end with their program's status and fail as env
 * does (run.c).  Bad usage prints one line "vmstack SUB: REASON (see
 * 'vmstack SUB --help')".
 */
enum { CMD_OK = 0, CMD_FAIL = 1, CMD_USAGE = 2 };

struct cmd {
    const char *name;
    const char *summary;
    int (*main)(int argc, char **argv); /* argv[0] is the subcommand name */
};

int cmd_demo(int argc, char **argv);
int cmd_bench(int argc, char **argv);
/*
 * run and trace return only when the program could not be run: 125, 126
 * or 127 as env(1).  Both are run_main (run.h).
 */
int cmd_run(int argc, char **argv);
int cmd_trace(int argc, char **argv); /* tools/trace.c */
int cmd_checkstack(int argc, char **argv);

/*
 * A companion file of the tool (libdir.c): next to the binary, else in its
 * install directory (VMS_PRELOAD_REL from the binary).  The path in out.
 */
bool cmd_find_lib(const char *name, char *out, size_t n);
/* Whether an executable prog is in a directory of PATH. */
bool cmd_on_path(const char *prog);

/*
 * The command's messages to stderr (say.c), safe on a small stack: the
 * wrapper may have 16 KiB in all and no way to raise it.  cmd_say writes
 * fmt's text (a line, its newline included) with one write(2).
 */
void cmd_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "vmstack SUB: reason (see 'vmstack SUB --help')" and returns CMD_USAGE. */
int cmd_usage_error(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * The option parser of every subcommand (options.c): getopt_long, so
 * "--opt=value" and "--opt value" are the same and "--" ends the options;
 * -h/--help is every command's.  longopts ends with a zero entry; an
 * option whose val is a printable character also has that short form.
 * With program set, options end at the first operand (what follows PROG is
 * PROG's); otherwise options and operands may be mixed.  Calls on(ctx, val,
 * value) for each option in order; a non-zero return stops and is returned.
 * cmd_options returns 0 with *first the index of the first operand,
 * CMD_HELP for -h/--help, or CMD_USAGE after the one-line usage error for
 * an unknown option or a missing value.
 */
#define CMD_HELP (-1)
struct cmd_parser {
    const char *sub; /* the command its messages name */
    const struct option *longopts;
    bool program;
    int (*on)(void *ctx, int opt, const char *arg);
    void *ctx;
};
int cmd_options(const struct cmd_parser *p, int argc, char **argv, int *first);

#endif
