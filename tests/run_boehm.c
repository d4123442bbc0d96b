/* SPDX-License-Identifier: MIT */
/*
 * A conservative collector (Boehm's libgc) under 'vmstack run' and 'trace'
 * (test_run.sh, case boehm): 4 threads each keep a list that only their
 * stack refers to, while all of them allocate and collect.  The collector
 * stops each thread with a signal whose handler records the thread's
 * stack pointer, then scans every stack from there up: the handler must
 * run on the interrupted stack, as plain.  A list node freed by mistake is
 * handed out again, cleared, and the check below sees it.
 */
#define GC_THREADS
#include <gc.h>
#include <pthread.h>
#include <stdio.h>

#define THREADS 4
#define NODES 2000
#define ROUNDS 15

struct node {
    struct node *next;
    long v;
    char pad[48];
};

static long bad;
static pthread_mutex_t bad_lock = PTHREAD_MUTEX_INITIALIZER;

/* Sums the list: every node's value must still be the one it was given. */
static long check(const struct node *head, long id)
{
    long wrong = 0, i = NODES;

    for (const struct node *n = head; n; n = n->next)
        wrong += n->v != id * 1000000 + --i;
    return wrong + (i != 0);
}

static void *work(void *arg)
{
    long id = (long)arg, wrong = 0;

    for (int round = 0; round < ROUNDS; round++) {
        struct node *head = NULL;
        for (long i = 0; i < NODES; i++) {
            struct node *n = GC_MALLOC(sizeof *n);
            n->next = head;
            n->v = id * 1000000 + i;
            head = n;
        }
        GC_gcollect();
        for (int i = 0; i < NODES; i++)
            (void)GC_MALLOC(sizeof(struct node)); /* reuses whatever was freed */
        wrong += check(head, id);
    }
    pthread_mutex_lock(&bad_lock);
    bad += wrong;
    pthread_mutex_unlock(&bad_lock);
    return NULL;
}

int main(void)
{
    pthread_t t[THREADS];

    GC_INIT();
    for (long i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, work, (void *)(i + 1)))
            return 1;
    work((void *)0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    printf("%d threads, %ld nodes lost\n", THREADS + 1, bad);
    return bad != 0;
}
