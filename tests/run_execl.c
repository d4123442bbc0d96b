/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' (test_run_same.sh): a SIG_IGN for SIGSEGV passed on
 * through execl, execlp or execle (argv[1]: l, lp, le), whose argv glibc
 * builds itself, or through system and popen (system, popen), which spawn
 * through glibc's own posix_spawn.  The shell it executes sends itself
 * SIGSEGV and must live to print "alive", with the environment execle
 * gave it.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The shell's output through a pipe, passed on; its status as a shell's. */
static int through_popen(const char *script)
{
    char line[256];
    FILE *f = popen(script, "r");
    int st;

    if (!f)
        return 1;
    while (fgets(line, sizeof line, f))
        fputs(line, stdout);
    st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

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
    else if (strcmp(argv[1], "system") == 0)
        return system(script) ? 1 : 0;
    else if (strcmp(argv[1], "popen") == 0)
        return through_popen(script);
    perror("exec");
    return 1;
}
