/*
 * For 'vmstack run' (test_run.sh): a thread named "overflower" with start
 * routine overflow_thread recurses without end; or, with argument "main",
 * the main thread does.  Under 'vmstack run' this ends in the overflow
 * report and death by SIGSEGV.
 */
#include <pthread.h>
#include <string.h>

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
    if (pthread_create(&t, NULL, overflow_thread, &one) || pthread_join(t, NULL))
        return 1;
    return 0;
}
