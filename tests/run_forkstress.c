/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' and 'vmstack trace' (test_harden.sh): fork from a
 * process whose threads are busy creating, joining and detaching threads.
 * Three churning threads; the main thread forks CHILDREN children, each of
 * which makes two threads, joins them and exits 0.  A child that has not
 * exited within 10 s hangs (on a lock some parent thread held at fork): it
 * is killed and counted.  Prints "hung N" and exits 0 when N is 0.
 * With "deep" (for 'vmstack trace'): every thread writes a frame of 20 KB,
 * so that each thread's end goes through the tracer's dead-stack scan and
 * its results, and their locks, at any moment of a fork.
 * With "usr1": a forked child is sent SIGUSR1 and must die by it, the
 * default action ('vmstack run --report-signal USR1' is the parent's only).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CHILDREN 300
#define CHURNERS 3

static atomic_bool stop;
static bool deep;

static void *noop(void *arg)
{
    volatile char frame[20000];

    for (size_t i = 0; deep && i < sizeof frame; i += 256)
        frame[i] = 1;
    return arg;
}

static void *churn(void *arg)
{
    pthread_attr_t detached;

    pthread_attr_init(&detached);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    while (!atomic_load(&stop)) {
        pthread_t t;
        if (pthread_create(&t, NULL, noop, NULL) == 0)
            pthread_join(t, NULL);
        if (pthread_create(&t, NULL, noop, NULL) == 0)
            pthread_detach(t);
        if (pthread_create(&t, &detached, noop, NULL) == 0)
            continue;
    }
    return arg;
}

static int child(void)
{
    pthread_t t[2];

    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, noop, NULL))
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    return 0;
}

/* The child's exit status, or -1 if it did not exit within 10 s (it is killed then). */
static int wait_bounded(pid_t pid)
{
    struct timespec nap = {0, 1000000};
    int status;

    for (int ms = 0; ms < 10000; ms++) {
        pid_t got = waitpid(pid, &status, WNOHANG);
        if (got == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        nanosleep(&nap, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static int usr1_child(void)
{
    pid_t pid = fork();
    int status;

    if (pid == 0) {
        pause();
        _exit(0);
    }
    usleep(100000);
    kill(pid, SIGUSR1);
    waitpid(pid, &status, 0);
    printf("child: %s\n", WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited");
    return !(WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR1);
}

int main(int argc, char **argv)
{
    pthread_t c[CHURNERS];
    int hung = 0, failed = 0;

    if (argc > 1 && !strcmp(argv[1], "usr1"))
        return usr1_child();
    deep = argc > 1 && !strcmp(argv[1], "deep");
    for (int i = 0; i < CHURNERS; i++)
        pthread_create(&c[i], NULL, churn, NULL);
    for (int i = 0; i < CHILDREN; i++) {
        pid_t pid = fork();
        int rc;
        if (pid == 0)
            _exit(child());
        if (pid < 0) {
            perror("fork");
            return 1;
        }
        rc = wait_bounded(pid);
        hung += rc == -1;
        failed += rc > 0;
    }
    atomic_store(&stop, true);
    for (int i = 0; i < CHURNERS; i++)
        pthread_join(c[i], NULL);
    printf("hung %d failed %d\n", hung, failed);
    return hung || failed;
}
