/* SPDX-License-Identifier: MIT */
/*
 * For test_thp.sh: N threads on 8 MiB stacks, each touching 16 KiB of it,
 * and what they cost in resident memory, measured while all of them
 * still run, after one that came and went.  Linked with libvmstack.so
 * for vms_thread_create.
 *   run_thp pthread N   pthread_create (vmstack stacks under 'vmstack run')
 *   run_thp vms N       vms_thread_create
 * Prints "N kB per thread", and "stack nh" or "stack without nh" for the
 * mapping that holds the first thread's stack (MADV_NOHUGEPAGE).
 */
#include "vmstack.h"
#include "nohuge.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 1000
#define TOUCHED (16 << 10)

static pthread_barrier_t all_touched, done;
static bool first_nh;

/* Resident kB of the whole process. */
static long rss_kb(void)
{
    char line[256];
    long kb = -1;
    FILE *f = fopen("/proc/self/smaps_rollup", "r");

    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Rss:", 4))
            kb = atol(line + 4);
    if (f)
        fclose(f);
    return kb;
}

static void *worker(void *first)
{
    volatile char frame[TOUCHED];

    for (size_t i = 0; i < sizeof frame; i += 512)
        frame[i] = 1;
    if (first)
        first_nh = no_huge_pages((const char *)frame);
    pthread_barrier_wait(&all_touched);
    pthread_barrier_wait(&done);
    return NULL;
}

static void *warm(void *arg)
{
    return arg;
}

int main(int argc, char **argv)
{
    static pthread_t t[MAX_THREADS];
    int n = argc == 3 ? atoi(argv[2]) : 0;
    bool vms = argc == 3 && !strcmp(argv[1], "vms");
    pthread_attr_t attr;
    long before, after;

    if (n < 1 || n > MAX_THREADS || (!vms && strcmp(argv[1], "pthread"))) {
        fprintf(stderr, "usage: run_thp pthread|vms N (N <= %d)\n", MAX_THREADS);
        return 2;
    }
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 8 << 20);
    pthread_barrier_init(&all_touched, NULL, (unsigned)n + 1);
    pthread_barrier_init(&done, NULL, (unsigned)n + 1);
    /* One thread made and joined first: what the first one costs once (the library's tables, its code) is no thread's. */
    if (vms ? vms_thread_create(&t[0], &attr, warm, NULL, "warm") || vms_thread_join(t[0], NULL)
            : pthread_create(&t[0], &attr, warm, NULL) || pthread_join(t[0], NULL)) {
        fprintf(stderr, "the first thread failed\n");
        return 1;
    }
    before = rss_kb();
    for (int i = 0; i < n; i++) {
        void *first = i == 0 ? &t[0] : NULL;
        int rc = vms ? -vms_thread_create(&t[i], &attr, worker, first, "worker")
                     : pthread_create(&t[i], &attr, worker, first);
        if (rc) {
            fprintf(stderr, "thread %d: %s\n", i, strerror(rc));
            return 1;
        }
    }
    pthread_barrier_wait(&all_touched);
    after = rss_kb();
    printf("%ld kB per thread\nstack %s\n", (after - before) / n, first_nh ? "nh" : "without nh");
    pthread_barrier_wait(&done);
    for (int i = 0; i < n; i++)
        vms ? vms_thread_join(t[i], NULL) : pthread_join(t[i], NULL);
    return 0;
}
