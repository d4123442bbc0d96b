/* SPDX-License-Identifier: MIT */
/* The vmstack command: dispatches to its subcommands. */
#include "cmd.h"
#include "vmstack.h"

#include <string.h>

static const struct cmd cmds[] = {
    { "demo", "the showcase: guarded cached stacks at work, with figures", cmd_demo },
    { "run", "run an unmodified program: guarded thread stacks, overflow reports, usage table", cmd_run },
    { "trace", "as run, plus the deepest call chain per thread (Depth Size Location)", cmd_trace },
    { "bench", "benchmarks, side by side with their baselines in one run", cmd_bench },
    { "checkstack", "static frame sizes of a binary's functions, largest first", cmd_checkstack },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: vmstack COMMAND [OPTIONS] [ARGS]\n\n"
               "Virtually mapped, guarded, cached stacks for threads, fibers and coroutines.\n\n"
               "Commands:\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-11s %s\n", cmds[i].name, cmds[i].summary);
    fprintf(f, "\n'vmstack help COMMAND' (or 'vmstack COMMAND --help') describes a command; -V prints the\n"
               "version; man vmstack(1) has the details.\n"
               "Exit status: 0 success, 1 failure, 2 bad usage; run and trace: the program's, or 125, 126, 127 as env(1).\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CMD_USAGE;
    }
    /* 'vmstack help COMMAND' is 'vmstack COMMAND --help'. */
    if (!strcmp(argv[1], "help") && argc > 2) {
        char *help_argv[] = { argv[2], "--help", NULL };
        for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
            if (!strcmp(argv[2], cmds[i].name))
                return cmds[i].main(2, help_argv);
        cmd_say("vmstack help: unknown command '%s' (see 'vmstack --help')\n", argv[2]);
        return CMD_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return CMD_OK;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
        printf("vmstack %s\n", VMS_VERSION_STRING);
        return CMD_OK;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name))
            return cmds[i].main(argc - 1, argv + 1);
    cmd_say("vmstack: unknown command '%s' (see 'vmstack --help')\n", argv[1]);
    return CMD_USAGE;
}
