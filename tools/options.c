/* SPDX-License-Identifier: MIT */
/*
 * The option parser every subcommand shares (see cmd.h): getopt_long, with
 * its errors turned into the one-line usage error and exit status 2.
 */
#include "cmd.h"

#include <stdbool.h>
#include <string.h>

#define MAX_OPTIONS 32

/* The option as the user wrote it, without "=value". */
static void named(char **argv, char *out, size_t n)
{
    const char *a = argv[optind - 1];
    size_t len = strcspn(a, "=");

    if (optopt && a[0] == '-' && a[1] != '-')
        snprintf(out, n, "-%c", optopt);
    else
        snprintf(out, n, "%.*s", (int)len, a);
}

int cmd_options(const struct cmd_parser *p, int argc, char **argv, int *first)
{
    const struct option *longopts = p->longopts;
    struct option all[MAX_OPTIONS + 1];
    char shortopts[2 * MAX_OPTIONS + 4], name[64];
    size_t n = 0, k = 0;
    int c, rc;

    /* '+': PROG's own options after PROG are PROG's.  ':': a missing value is told apart. */
    if (p->program)
        shortopts[n++] = '+';
    shortopts[n++] = ':';
    shortopts[n++] = 'h';
    for (; longopts && longopts[k].name && k < MAX_OPTIONS - 1; k++) {
        all[k] = longopts[k];
        if (longopts[k].val > ' ' && longopts[k].val < 127 && !longopts[k].flag) {
            shortopts[n++] = (char)longopts[k].val;
            if (longopts[k].has_arg == required_argument)
                shortopts[n++] = ':';
        }
    }
    shortopts[n] = '\0';
    all[k++] = (struct option){"help", no_argument, NULL, 'h'};
    all[k] = (struct option){0};

    optind = 0; /* a fresh scan: 'trace' parses, then hands over to 'run' */
    opterr = 0;
    while ((c = getopt_long(argc, argv, shortopts, all, NULL)) != -1) {
        if (c == 'h')
            return CMD_HELP;
        if (c == ':' || c == '?') {
            named(argv, name, sizeof name);
            return cmd_usage_error(p->sub, c == ':' ? "%s needs a value" : "unknown option '%s'", name);
        }
        if ((rc = p->on(p->ctx, c, optarg)))
            return rc;
    }
    *first = optind;
    return 0;
}
