/* SPDX-License-Identifier: MIT */
/*
 * Descriptors as a program sees them, for the compatibility suite.
 *   closefrom     lists its descriptors, opens five, closefrom(3), lists again, runs a thread
 *   close_range   the same with close_range(3, ~0U, 0), then CLOSE_RANGE_CLOEXEC and an exec
 *                 of itself ("list") that lists what survived the exec
 *   overflow      close_range(3, ~0U, 0), then a thread "deep" recurses without end
 *   nofile        RLIMIT_NOFILE 16, opens /dev/null until EMFILE, runs two threads, exits 0
 * What it prints must not change under vmstack: no descriptor is ours.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void list(const char *when)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int seen[64], n = 0;

    if (!d) {
        printf("%s: opendir: %s\n", when, strerror(errno));
        return;
    }
    while ((e = readdir(d)) && n < 64) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd != dirfd(d))
            seen[n++] = fd;
    }
    closedir(d);
    /* readdir's order is the kernel's; sort for a stable line. */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && seen[j - 1] > seen[j]; j--) {
            int x = seen[j];
            seen[j] = seen[j - 1];
            seen[j - 1] = x;
        }
    printf("%s:", when);
    for (int i = 0; i < n; i++)
        printf(" %d", seen[i]);
    printf("\n");
    fflush(stdout);
}

static void *talker(void *arg)
{
    printf("thread %s writes to stdout\n", (const char *)arg);
    return NULL;
}

static void run_thread(const char *name)
{
    pthread_t t;

    if (pthread_create(&t, NULL, talker, (void *)name) || pthread_join(t, NULL)) {
        printf("pthread_create failed\n");
        exit(1);
    }
}

static __attribute__((noinline)) int bottomless(int n)
{
    volatile char frame[1024];

    memset((char *)frame, n, sizeof frame);
    if (n == 0) /* never: n counts up from 1 */
        return 0;
    return bottomless(n + 1) + frame[3];
}

static void *deep(void *arg)
{
    pthread_setname_np(pthread_self(), "deep");
    return (void *)(long)bottomless(*(int *)arg);
}

static void open_five(void)
{
    for (int i = 0; i < 5; i++)
        if (open("/dev/null", O_RDONLY) < 0)
            printf("open: %s\n", strerror(errno));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";

    if (!strcmp(mode, "list")) {
        list("after exec");
        return 0;
    }
    if (!strcmp(mode, "closefrom")) {
        list("at start");
        open_five();
        list("opened five");
        closefrom(3);
        list("after closefrom(3)");
        run_thread("after closefrom");
        return 0;
    }
    if (!strcmp(mode, "close_range")) {
        list("at start");
        open_five();
        if (close_range(3, ~0U, 0))
            printf("close_range: %s\n", strerror(errno));
        list("after close_range(3, ~0U, 0)");
        run_thread("after close_range");
        open_five();
        if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC))
            printf("close_range CLOEXEC: %s\n", strerror(errno));
        fflush(stdout);
        execl("/proc/self/exe", argv[0], "list", (char *)NULL);
        printf("exec: %s\n", strerror(errno));
        return 1;
    }
    if (!strcmp(mode, "overflow")) {
        pthread_t t;
        int one = 1;
        if (close_range(3, ~0U, 0))
            printf("close_range: %s\n", strerror(errno));
        list("after close_range(3, ~0U, 0)");
        pthread_create(&t, NULL, deep, &one);
        pthread_join(t, NULL);
        return 0;
    }
    if (!strcmp(mode, "nofile")) {
        struct rlimit rl = { 16, 16 };
        int n = 0;
        if (setrlimit(RLIMIT_NOFILE, &rl))
            printf("setrlimit: %s\n", strerror(errno));
        while (open("/dev/null", O_RDONLY) >= 0)
            n++;
        printf("opened %d more descriptors, then: %s\n", n, strerror(errno));
        run_thread("one");
        run_thread("two");
        return 0;
    }
    fprintf(stderr, "usage: fds closefrom|close_range|overflow|nofile\n");
    return 2;
}
