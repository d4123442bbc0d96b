/* SPDX-License-Identifier: MIT */
/*
 * Ends in the way argv[1] names, with a thread that ran and one still
 * running, for 'vmstack run': the table must be written (or its absence
 * explained) however a program ends.
 *   exit_group  the raw system call, as the Go runtime exits: status 7
 *   _exit       status 5
 *   abort       death by SIGABRT
 *   sigkill     death by SIGKILL
 *   emfile      RLIMIT_NOFILE 16 (soft and hard), files opened until EMFILE,
 *               then exit(0); the running thread named 'sleepy' by prctl,
 *               which vmstack does not see (only the kernel knows it)
 *   fds         prints the numbers of its open descriptors, one a line
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

static void *finished(void *arg)
{
    return arg;
}

static _Atomic int sleeping;

static void *sleeper(void *name)
{
    if (name)
        prctl(PR_SET_NAME, name);
    sleeping = 1;
    for (;;)
        pause();
    return NULL;
}

static int list_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;

    if (!d)
        return 1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
            printf("%s\n", e->d_name);
    closedir(d);
    return 0;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "";
    struct rlimit rl = {16, 16};
    pthread_t a, b;

    if (pthread_create(&a, NULL, finished, NULL) || pthread_join(a, NULL) ||
        pthread_create(&b, NULL, sleeper, strcmp(how, "emfile") ? NULL : "sleepy"))
        return 1;
    while (!sleeping)
        sched_yield();
    if (!strcmp(how, "exit_group"))
        syscall(SYS_exit_group, 7);
    if (!strcmp(how, "_exit"))
        _exit(5);
    if (!strcmp(how, "abort"))
        abort();
    if (!strcmp(how, "sigkill"))
        raise(SIGKILL);
    if (!strcmp(how, "emfile")) {
        if (setrlimit(RLIMIT_NOFILE, &rl))
            return 1;
        while (open("/dev/null", O_RDONLY) >= 0)
            ;
        return errno == EMFILE ? 0 : 1;
    }
    if (!strcmp(how, "fds"))
        return list_fds();
    return 2;
}
