/* SPDX-License-Identifier: MIT */
/*
 * vms_thread_create / join / detach: the thread runs on a vmstack stack of
 * the asked size with its task record filled (kind, name, start; the tid
 * only once a report needs it) and its alternate signal stack tied to it,
 * its kernel name set; join frees the stack and the alternate stack;
 * detached threads' stacks are freed by later creates once the threads are
 * gone.
 */
#include "check.h"
#include "core/internal.h"

#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

/* ThreadSanitizer keeps ~900 KiB of static TLS at the top of every thread's stack. */
#ifdef VMS_TSAN
#define STACK ((size_t)4 << 20)
#else
#define STACK ((size_t)128 << 10)
#endif

static atomic_int finished;

struct seen {
    int on_stack;
    vms_stack st;
    struct vms_task task;
    char kname[16];
};

static void *inspect(void *arg)
{
    struct seen *s = arg;
    int local = 0;

    s->on_stack = vms_on_stack(&local, &s->st);
    if (s->on_stack)
        s->task = *vms__task_of(&s->st);
    pthread_getname_np(pthread_self(), s->kname, sizeof s->kname);
    return (void *)(intptr_t)gettid();
}

static void *quick(void *arg)
{
    (void)arg;
    atomic_fetch_add(&finished, 1);
    return NULL;
}

static size_t live(void)
{
    vms_stats s;

    vms_stats_get(&s);
    return s.live;
}

/* Creates and joins threads until the stacks of finished detached ones are freed. */
static void reap_until(size_t baseline)
{
    pthread_t t;

    for (int i = 0; i < 1000 && live() > baseline; i++) {
        CHECK_EQ(vms_thread_create(&t, NULL, quick, NULL, NULL), 0);
        CHECK_EQ(vms_thread_join(t, NULL), 0);
        usleep(1000);
    }
    CHECK_EQ(live(), baseline);
}

int main(void)
{
    struct seen s = { 0 };
    pthread_attr_t attr;
    pthread_t t, d[10];
    void *ret, *own;
    size_t baseline;
    vms_config cfg;

    vms_config_defaults(&cfg);
    cfg.stack_size = STACK;
    CHECK_EQ(vms_init(&cfg), 0);
    /* Default size, name, task record; join frees the stack. */
    CHECK_EQ(vms_thread_create(&t, NULL, inspect, &s, "worker"), 0);
    CHECK_EQ(vms_thread_join(t, &ret), 0);
    baseline = live();
    CHECK(s.on_stack);
    CHECK_EQ(vms_config_get(&cfg), 0);
    CHECK_EQ(s.st.size, cfg.stack_size);
    CHECK_EQ(s.task.kind, VMS_TASK_THREAD);
    CHECK(ret != NULL);
    CHECK_EQ(s.task.id, 0); /* looked up by the fault handler, on the thread, only for a report */
#ifndef VMS_ASAN
    /* ASan gives every thread an altstack of its own, which ours replaces until the thread exits. */
    CHECK(s.task.companion != 0);
#endif
    CHECK(!strcmp(s.task.name, "worker"));
    CHECK(s.task.start == (void *)inspect);
    CHECK(!strcmp(s.kname, "worker"));
    CHECK(!vms_on_stack((void *)t, NULL));

    /* The attr's stack size, rounded up to a page; its own stack is refused. */
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 2 * STACK - 100);
    CHECK_EQ(vms_thread_create(&t, &attr, inspect, &s, NULL), 0);
    CHECK_EQ(vms_thread_join(t, NULL), 0);
    CHECK_EQ(s.st.size, 2 * STACK);
    CHECK(!strcmp(s.task.name, ""));
    own = malloc(64 << 10);
    pthread_attr_setstack(&attr, own, 64 << 10);
    CHECK_EQ(vms_thread_create(&t, &attr, inspect, &s, NULL), -EINVAL);
    CHECK(strstr(vms_last_error(), "pthread_attr_setstack"));
    free(own);
    pthread_attr_destroy(&attr);
    CHECK_EQ(live(), baseline);

    /* Detached by attr, and by vms_thread_detach: freed by later creates once finished. */
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < 5; i++)
        CHECK_EQ(vms_thread_create(&d[i], &attr, quick, NULL, NULL), 0);
    pthread_attr_destroy(&attr);
    for (int i = 5; i < 10; i++) {
        CHECK_EQ(vms_thread_create(&d[i], NULL, quick, NULL, NULL), 0);
        CHECK_EQ(vms_thread_detach(d[i]), 0);
    }
    while (atomic_load(&finished) < 10)
        usleep(1000);
    reap_until(baseline);

    /* A thread not made here is detached by pthread_detach. */
    CHECK_EQ(pthread_create(&t, NULL, quick, NULL), 0);
    CHECK_EQ(vms_thread_detach(t), 0);
    return 0;
}
