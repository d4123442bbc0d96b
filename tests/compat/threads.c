/* SPDX-License-Identifier: MIT */
/*
 * A clean threaded program for the compatibility suite (valgrind, gdb,
 * strace, AddressSanitizer, ulimit -s): four named threads, joined, each
 * with its own stack size; the results are printed in a fixed order and the
 * program exits 3, so that a changed exit status shows.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4

struct work {
    int id;
    unsigned long result;
    char name[16];
};

static __attribute__((noinline)) unsigned long depth(int n)
{
    volatile char frame[256];

    memset((char *)frame, n, sizeof frame);
    return n ? depth(n - 1) + frame[n % sizeof frame] : 0;
}

static void *worker(void *arg)
{
    struct work *w = arg;
    unsigned long sum = 0;

    snprintf(w->name, sizeof w->name, "worker-%d", w->id);
    pthread_setname_np(pthread_self(), w->name);
    for (unsigned long i = 0; i < 100000; i++)
        sum += i * (unsigned long)(w->id + 1);
    w->result = sum + depth(8 * (w->id + 1));
    return NULL;
}

int main(void)
{
    struct work w[NTHREADS];
    pthread_t t[NTHREADS];

    for (int i = 0; i < NTHREADS; i++) {
        pthread_attr_t a;
        w[i] = (struct work){ .id = i };
        pthread_attr_init(&a);
        if (i % 2)
            pthread_attr_setstacksize(&a, 256 * 1024 * (size_t)i);
        if (pthread_create(&t[i], &a, worker, &w[i])) {
            fprintf(stderr, "pthread_create failed\n");
            return 1;
        }
        pthread_attr_destroy(&a);
    }
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        printf("%s: %lu\n", w[i].name, w[i].result);
    }
    fprintf(stderr, "threads: done\n");
    return 3;
}
