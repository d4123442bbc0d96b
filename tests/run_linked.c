/* SPDX-License-Identifier: MIT */
/*
 * A program linked with libvmstack.so, for 'vmstack run' (test_run_linked.sh):
 * prints what it sees of its own configuration, where its vms_* calls
 * went, and whether its vmstack and the one that put its threads on
 * vmstack stacks are one instance.
 *   run_linked default   no vms_init: the defaults and the environment
 *   run_linked init      vms_init with settings of its own (128 KiB stacks,
 *                        32 KiB guards), which must succeed and hold
 *   run_linked guard     vms_init with no guards, which the run's guard mode
 *                        refuses: prints its error and exits
 */
#include "vmstack.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static void *on_thread_stack(void *unused)
{
    int local = 0;

    (void)unused;
    return (void *)(long)vms_on_stack(&local, NULL);
}

static void *nothing(void *arg)
{
    return arg;
}

int main(int argc, char **argv)
{
    vms_config cfg;
    vms_fiber f;
    vms_stack st;
    Dl_info where;
    pthread_t t;
    void *seen;
    int rc = 0;

    if (argc > 1 && !strcmp(argv[1], "init")) {
        vms_config_defaults(&cfg);
        cfg.stack_size = (size_t)128 << 10;
        cfg.guard_size = (size_t)32 << 10;
        rc = vms_init(&cfg);
    }
    if (argc > 1 && !strcmp(argv[1], "guard")) {
        vms_config_defaults(&cfg);
        cfg.guard = VMS_GUARD_NONE;
        rc = vms_init(&cfg);
        printf("init %d: %s\n", rc, vms_last_error());
        return 0;
    }
    printf("init %d\n", rc);
    vms_config_get(&cfg);
    printf("config stack %zu guard %zu\n", cfg.stack_size, cfg.guard_size);
    if (vms_fiber_spawn(&f, nothing, NULL, NULL) || vms_fiber_stack(f, &st) || vms_fiber_join(f, NULL))
        return 1;
    /* A fiber's stack is its size class, with room for its colour: at least the configured size. */
    printf("fiber stack at least %zu: %d, guard %zu\n", cfg.stack_size, st.size >= cfg.stack_size, st.guard_size);
    /* A thread made by pthread_create: on a vmstack stack that this program's vmstack knows. */
    if (pthread_create(&t, NULL, on_thread_stack, NULL) || pthread_join(t, &seen))
        return 1;
    printf("thread on a known stack %ld\n", (long)seen);
    if (!dladdr((void *)vms_stack_alloc, &where))
        return 1;
    printf("vms_stack_alloc in %s\n", strrchr(where.dli_fname, '/') ? strrchr(where.dli_fname, '/') + 1
                                                                        : where.dli_fname);
    return 0;
}
