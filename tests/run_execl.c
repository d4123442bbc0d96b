/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' (test_run_same.sh): a SIG_IGN for SIGSEGV passed on
 * through execl, execlp or execle (argv[1]: l, lp, le), whose argv glibc
 * builds itself.  The shell it executes sends itself SIGSEGV and must live
 * to print "alive", with the environment execle gave it.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    static const char script[] = "kill -SEGV $$; echo alive ${X:-environ}";
    char *const env[] = { "X=execle", "PATH=/usr/bin:/bin", NULL };

    if (argc != 2 || signal(SIGSEGV, SIG_IGN) == SIG_ERR)
        return 2;
    if (strcmp(argv[1], "l") == 0)
        execl("/bin/sh", "sh", "-c", script, (char *)NULL);
    else if (strcmp(argv[1], "lp") == 0)
        execlp("sh", "sh", "-c", script, (char *)NULL);
    else if (strcmp(argv[1], "le") == 0)
        execle("/bin/sh", "sh", "-c", script, (char *)NULL, env);
    perror("exec");
    return 1;
}
