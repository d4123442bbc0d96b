/* SPDX-License-Identifier: MIT */
/*
 * Threads that end while the process exits: each goes a few pages deep
 * (so the tracer holds a chain for it), then all wait on a barrier with
 * the main thread, which calls exit() as soon as it passes.  The report
 * made at exit copies the chains of threads still alive while they end
 * and give their chain's memory back.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 32

static pthread_barrier_t go;

__attribute__((noinline)) static int deep(int n)
{
    volatile char b[512];

    memset((char *)b, n, sizeof b);
    return n ? deep(n - 1) + b[3] : 0;
}

static void *run(void *arg)
{
    (void)arg;
    deep(200);
    pthread_barrier_wait(&go);
    return NULL;
}

int main(void)
{
    pthread_t t;

    pthread_barrier_init(&go, NULL, THREADS + 1);
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&t, NULL, run, NULL)) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
    pthread_barrier_wait(&go);
    exit(0);
}
