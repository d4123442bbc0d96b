/*
 * For 'vmstack run' (test_run.sh): a thread named "overflower" with start
 * routine overflow_thread recurses without end; or, with argument "main",
 * the main thread does; with "reopen FILE", fd 2 is first reopened as the
 * program's own data file FILE.  Under 'vmstack run' this ends in the
 * overflow report and death by SIGSEGV.
 */
#include <fcntl.h>
#include <pthread.h>
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
    if (pthread_create(&t, NULL, overflow_thread, &one) || pthread_join(t, NULL))
        return 1;
    return 0;
}
