/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' (test_run.sh): 100 threads, every way a thread's stack
 * can end: 50 joined, 25 created detached, 25 detached by pthread_detach.
 * The program waits until all have done their work, then exits.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static atomic_int done;

static void *worker(void *arg)
{
    volatile char frame[2048];

    memset((char *)frame, 1, sizeof frame);
    atomic_fetch_add(&done, 1);
    return arg;
}

int main(void)
{
    pthread_t joined[50], t;
    pthread_attr_t detached;

    pthread_attr_init(&detached);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < 50; i++)
        if (pthread_create(&joined[i], NULL, worker, NULL))
            return 1;
    for (int i = 0; i < 25; i++)
        if (pthread_create(&t, &detached, worker, NULL) || pthread_create(&t, NULL, worker, NULL) ||
            pthread_detach(t))
            return 1;
    for (int i = 0; i < 50; i++)
        if (pthread_join(joined[i], NULL))
            return 1;
    while (atomic_load(&done) < 100)
        usleep(1000);
    usleep(20000); /* let the detached ones finish leaving */
    printf("100 threads\n");
    return 0;
}
