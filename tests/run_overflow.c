/*
 * For 'vmstack run' (test_run.sh): a thread named "overflower" with start
 * routine overflow_thread recurses without end; or, with argument "main",
 * the main thread does; with "reopen FILE", fd 2 is first reopened as the
 * program's own data file FILE; with "low FILE", the program execs itself
 * with only fds 0 to 2 open, opens FILE, which must get fd 3 as it does
 * without vmstack, and copies it onto 4 and 5.  Under 'vmstack run' this ends in the
 * overflow report and death by SIGSEGV.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static __attribute__((noinline)) int bottomless(int n)
{
    volatile char frame[1024];

    memset((char *)frame, n, sizeof frame);
    if (n == 0) /* never: n counts up from 1; keeps the compiler from calling this infinite */
        return 0;
    return bottomless(n + 1) + frame[3];
}

static void *overflow_thread(void *arg)
{
    pthread_setname_np(pthread_self(), "overflower");
    return (void *)(long)bottomless(*(int *)arg);
}

int main(int argc, char **argv)
{
    int one = 1;
    pthread_t t;

    if (argc > 1 && !strcmp(argv[1], "main"))
        return bottomless(one);
    if (argc > 2 && !strcmp(argv[1], "reopen")) {
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 2) != 2 || write(2, "the program's own\n", 18) != 18)
            return 1;
        close(fd);
    }
    if (argc > 2 && !strcmp(argv[1], "low") && !getenv("RUN_OVERFLOW_LOW")) {
        /* Whatever the test harness left open goes; the new image starts with 0, 1 and 2. */
        setenv("RUN_OVERFLOW_LOW", "1", 1);
        close_range(3, ~0u, 0);
        execv("/proc/self/exe", argv);
        return 1;
    }
    if (argc > 2 && !strcmp(argv[1], "low")) {
        int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd != 3 || dup2(fd, 4) != 4 || dup2(fd, 5) != 5 || write(fd, "the program's own\n", 18) != 18)
            return 1;
    }
    if (pthread_create(&t, NULL, overflow_thread, &one) || pthread_join(t, NULL))
        return 1;
    return 0;
}
