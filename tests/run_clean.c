/* SPDX-License-Identifier: MIT */
/* Four threads that use some stack and are joined: a program without a memcheck error. */
#include <pthread.h>
#include <stdio.h>

static void *work(void *arg)
{
    volatile char buf[2048];

    for (int i = 0; i < (int)sizeof buf; i++)
        buf[i] = (char)i;
    return arg;
}

int main(void)
{
    pthread_t t[4];

    for (int i = 0; i < 4; i++)
        if (pthread_create(&t[i], NULL, work, NULL))
            return 1;
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    puts("ok");
    return 0;
}
