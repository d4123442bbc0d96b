/* SPDX-License-Identifier: MIT */
/* A clean threaded program: four threads that each use 8 KiB of stack, joined. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void *work(void *arg)
{
    volatile char b[8192];

    memset((char *)b, 1, sizeof b);
    return (void *)(long)b[(long)arg];
}

int main(void)
{
    pthread_t t[4];

    for (long i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, work, (void *)i))
            return 1;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    puts("clean");
    return 0;
}
