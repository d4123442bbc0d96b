/* SPDX-License-Identifier: MIT */
/*
 * A thread whose deepest point is shallow: idle -> mid -> work, about
 * 1.8 KB below its start routine, no tripwire crossed.  Its chain comes
 * from the dead stack alone, after glibc's and vmstack's exit code ran
 * right below the start routine's frame: what that code wrote must not
 * reach work's return address.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) static int work(int n)
{
    volatile char b[1500];

    memset((char *)b, n, sizeof b);
    return b[7];
}

__attribute__((noinline)) static int mid(int n)
{
    volatile char b[200];

    b[0] = (char)n;
    return work(n) + b[0];
}

static void *idle(void *arg)
{
    mid(3);
    return arg;
}

int main(void)
{
    pthread_t t;

    if (pthread_create(&t, NULL, idle, NULL) || pthread_join(t, NULL))
        return 1;
    puts("done");
    return 0;
}
