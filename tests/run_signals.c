/* SPDX-License-Identifier: MIT */
/*
 * What a program under 'vmstack run' sees of the signals sent to it, and
 * of its place in the process tree (test_run.sh, case exec):
 *   run_signals queue            prints "ready", waits for SIGUSR1, prints
 *                                its code, value and sender
 *   run_signals send PID VALUE   sigqueue(PID, SIGUSR1, VALUE)
 *   run_signals terms            prints "ready", counts SIGTERMs for 0.5 s
 *                                after the first, prints the count
 *   run_signals subreaper CMD... a child subreaper that runs CMD and
 *                                prints every child it reaps: pid and status
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int queue(void)
{
    sigset_t set;
    siginfo_t si;

    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    if (sigwaitinfo(&set, &si) != SIGUSR1)
        return 1;
    printf("code %s value %d sender %d\n", si.si_code == SI_QUEUE ? "SI_QUEUE" : "other", si.si_value.sival_int,
           (int)si.si_pid);
    return 0;
}

static volatile sig_atomic_t terms;

static void on_term(int sig)
{
    (void)sig;
    terms++;
}

static int count_terms(void)
{
    struct timespec half = {0, 500 * 1000 * 1000};

    signal(SIGTERM, on_term);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    while (!terms)
        pause();
    while (nanosleep(&half, &half) && errno == EINTR)
        ;
    printf("terms %d\n", (int)terms);
    return 0;
}

static int subreaper(char **cmd)
{
    int status;
    pid_t child, got;

    prctl(PR_SET_CHILD_SUBREAPER, 1);
    if ((child = fork()) == 0) {
        execvp(cmd[0], cmd);
        _exit(127);
    }
    printf("child %d\n", (int)child);
    /* Everything it is given to reap, for a while after its own child. */
    while ((got = waitpid(-1, &status, 0)) > 0)
        printf("reaped %s status %d\n", got == child ? "child" : "other", status);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "queue"))
        return queue();
    if (argc == 4 && !strcmp(argv[1], "send"))
        return sigqueue((pid_t)atoi(argv[2]), SIGUSR1, (union sigval){.sival_int = atoi(argv[3])}) != 0;
    if (argc == 2 && !strcmp(argv[1], "terms"))
        return count_terms();
    if (argc > 2 && !strcmp(argv[1], "subreaper"))
        return subreaper(argv + 2);
    fprintf(stderr, "usage: run_signals queue | send PID VALUE | terms | subreaper CMD...\n");
    return 2;
}
