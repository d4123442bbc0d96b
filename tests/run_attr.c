/* SPDX-License-Identifier: MIT */
/*
 * For 'vmstack run' (test_run_same.sh): what a thread reads back of
 * itself with pthread_getattr_np, and what pthread_join and pthread_detach
 * return for detached and already joined threads, one line each.  Run
 * plain and under 'vmstack run', the lines must be the same but for the
 * guard, which is vmstack's.  Threads are created after every refused call,
 * so that damage to the creation path shows.  "run_attr default-stack":
 * only glibc's default thread stack size, which it derives from
 * RLIMIT_STACK at start-up.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int done;

/* Its attributes, printed by the thread itself; then done is raised. */
static void *show(void *arg)
{
    const char *what = arg;
    pthread_attr_t a;
    void *lo;
    size_t size = 0, guard = 0;
    int detach = -1;
    char *frame = __builtin_frame_address(0);

    if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &size) ||
        pthread_attr_getguardsize(&a, &guard) || pthread_attr_getdetachstate(&a, &detach))
        printf("%s: pthread_getattr_np failed\n", what);
    else
        printf("%s: stack %zu guard %zu %s, frame %s the stack\n", what, size, guard,
               detach == PTHREAD_CREATE_DETACHED ? "detached" : "joinable",
               frame > (char *)lo && frame < (char *)lo + size ? "inside" : "outside");
    pthread_attr_destroy(&a);
    fflush(stdout);
    pthread_mutex_lock(&lock);
    done++;
    pthread_cond_signal(&cond);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void wait_done(int n)
{
    pthread_mutex_lock(&lock);
    while (done < n)
        pthread_cond_wait(&cond, &lock);
    pthread_mutex_unlock(&lock);
}

static pthread_t start(const char *what, size_t size, int detach)
{
    pthread_attr_t a;
    pthread_t t;

    pthread_attr_init(&a);
    if (size)
        pthread_attr_setstacksize(&a, size);
    pthread_attr_setdetachstate(&a, detach);
    if (pthread_create(&t, &a, show, (void *)what))
        printf("%s: pthread_create failed\n", what);
    pthread_attr_destroy(&a);
    return t;
}

static const char *err(int rc)
{
    return rc ? strerrorname_np(rc) : "0";
}

static int default_stack(void)
{
    pthread_attr_t a;
    size_t size = 0, guard = 0;

    if (pthread_getattr_default_np(&a) || pthread_attr_getstacksize(&a, &size) || pthread_attr_getguardsize(&a, &guard))
        return 1;
    printf("default thread stack %zu, guard %zu\n", size, guard);
    return 0;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = { 0, 16384, 16385, 65536, 100000, 1 << 20 };
    static char names[6][32];
    pthread_t t;
    int n = 0;

    if (argc > 1 && !strcmp(argv[1], "default-stack"))
        return default_stack();

    for (int i = 0; i < 6; i++) {
        snprintf(names[i], sizeof names[i], "asked %zu", sizes[i]);
        pthread_join(start(names[i], sizes[i], PTHREAD_CREATE_JOINABLE), NULL);
    }
    n = 6;
    t = start("created detached", 0, PTHREAD_CREATE_DETACHED);
    wait_done(++n);
    printf("join of a detached thread: %s\n", err(pthread_join(t, NULL)));
    printf("detach of a detached thread: %s\n", err(pthread_detach(t)));
    pthread_join(start("after", 0, PTHREAD_CREATE_JOINABLE), NULL);
    wait_done(++n);

    t = start("detached later", 0, PTHREAD_CREATE_JOINABLE);
    wait_done(++n);
    printf("detach: %s\n", err(pthread_detach(t)));
    printf("detach again: %s\n", err(pthread_detach(t)));
    printf("join of it: %s\n", err(pthread_join(t, NULL)));
    pthread_join(start("after", 0, PTHREAD_CREATE_JOINABLE), NULL);
    wait_done(++n);

    t = start("joined", 0, PTHREAD_CREATE_JOINABLE);
    printf("join: %s\n", err(pthread_join(t, NULL)));
    wait_done(++n);
    printf("join again: %s\n", err(pthread_join(t, NULL)));
    printf("detach of it: %s\n", err(pthread_detach(t)));
    for (int i = 0; i < 8; i++)
        pthread_join(start("after", 0, PTHREAD_CREATE_JOINABLE), NULL);
    return 0;
}
