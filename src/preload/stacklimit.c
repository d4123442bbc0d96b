/* SPDX-License-Identifier: MIT */
/*
 * The program's own RLIMIT_STACK, put back.  Preloading a library costs
 * the dynamic loader more stack than a tiny limit leaves once the kernel's
 * random offset of the stack top and the environment are taken: under
 * 'ulimit -s 16', any preloaded library fails now and then, and always
 * with a larger environment.  So 'vmstack run' starts such a program with
 * a larger soft limit and the original in VMSTACK_RUN_STACK_LIMIT; here,
 * before the program runs, the library puts back everything the raise
 * changed that the program could see:
 *   - the soft limit itself (getrlimit, /proc/self/limits, its children);
 *   - glibc's default thread stack size, which glibc derived from the
 *     raised limit at start-up;
 *   - the main stack's mapping, which the kernel pre-extended at exec to
 *     what the raised limit allows, and within which the stack would grow
 *     unchecked: what lies below the original limit is unmapped, so the
 *     main thread overflows where it would have.
 * The variable is removed, so that the program's own children start with
 * the limit it leaves them.  What the program executes (execve and the
 * calls sigchain.c interposes with it) gets the same: a raised limit for
 * the loader, its own in the variable, put back by the library there.
 */
#include "preload/preload.h"
#include "core/internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

static rlim_t restored; /* the limit put back; 0: nothing was raised */

/* What glibc derives from the limit at start-up: the limit, at least PTHREAD_STACK_MIN, page-rounded. */
static void default_thread_stack(rlim_t limit)
{
    size_t size = limit < (rlim_t)PTHREAD_STACK_MIN ? (size_t)PTHREAD_STACK_MIN : (size_t)limit;
    pthread_attr_t a;

    size = (size + vms__g.page - 1) & ~(vms__g.page - 1);
    if (pthread_getattr_default_np(&a))
        return;
    if (pthread_attr_setstacksize(&a, size) == 0)
        pthread_setattr_default_np(&a);
    pthread_attr_destroy(&a);
}

void vms__run_stack_limit_restore(void)
{
    const char *v = secure_getenv("VMSTACK_RUN_STACK_LIMIT");
    unsigned long long orig;
    struct rlimit rl;
    char *end;
    bool ok;

    if (!v)
        return;
    errno = 0;
    orig = strtoull(v, &end, 10);
    ok = *v >= '0' && *v <= '9' && !*end && !errno && orig > 0 && getrlimit(RLIMIT_STACK, &rl) == 0 &&
         orig <= rl.rlim_cur;
    unsetenv("VMSTACK_RUN_STACK_LIMIT");
    if (!ok)
        return;
    rl.rlim_cur = (rlim_t)orig;
    if (setrlimit(RLIMIT_STACK, &rl))
        return;
    vms__g.page = (size_t)sysconf(_SC_PAGESIZE);
    default_thread_stack(rl.rlim_cur);
    restored = rl.rlim_cur;
}

/*
 * Called last in the constructor, so that the library's own start-up ran
 * within the pre-extended mapping: what is unmapped is below the caller's
 * frame, and the program goes on with the room it would have had.
 */
void vms__run_stack_trim(void)
{
    uintptr_t pg = vms__g.page, lo, hi, floor, here = (uintptr_t)__builtin_frame_address(0);
    char *l, *h;

    if (!restored || vms__run_main_stack(&l, &h))
        return;
    lo = (uintptr_t)l;
    hi = (uintptr_t)h;
    floor = hi - (restored & ~(rlim_t)(pg - 1));
    /* Our own calls below this frame (munmap's) need a page. */
    if (floor > (here & ~(pg - 1)) - pg)
        floor = (here & ~(pg - 1)) - pg;
    if (floor > lo && floor < hi)
        munmap((void *)lo, floor - lo);
}

/* As 'vmstack run' (tools/run.c): the room the loader needs to preload us. */
#define LOADER_STACK ((rlim_t)64 << 10)
#define LIMIT_VAR "VMSTACK_RUN_STACK_LIMIT="

/* envp preloads this library: the new image will put the limit back. */
static bool preloads_us(char *const envp[])
{
    for (size_t i = 0; envp[i]; i++)
        if (!strncmp(envp[i], "LD_PRELOAD=", 11))
            return strstr(envp[i], "libvmstack-preload.so") != NULL;
    return false;
}

char *const *vms__run_exec_env(struct vms_exec_env *e, char *const envp[])
{
    struct rlimit rl;
    size_t n = 0;

    e->raised = false;
    if (!envp || getrlimit(RLIMIT_STACK, &e->old) || e->old.rlim_cur >= LOADER_STACK ||
        e->old.rlim_max <= e->old.rlim_cur || !preloads_us(envp))
        return envp;
    for (size_t i = 0; envp[i]; i++) {
        if (!strncmp(envp[i], LIMIT_VAR, sizeof LIMIT_VAR - 1))
            continue;
        if (n == VMS_EXEC_ENV_MAX)
            return envp;
        e->env[n++] = envp[i];
    }
    snprintf(e->limit, sizeof e->limit, LIMIT_VAR "%llu", (unsigned long long)e->old.rlim_cur);
    e->env[n++] = e->limit;
    e->env[n] = NULL;
    rl = e->old;
    rl.rlim_cur = rl.rlim_max < LOADER_STACK ? rl.rlim_max : LOADER_STACK;
    if (setrlimit(RLIMIT_STACK, &rl))
        return envp;
    e->raised = true;
    return e->env;
}

void vms__run_exec_end(struct vms_exec_env *e)
{
    int saved = errno;

    if (e->raised)
        setrlimit(RLIMIT_STACK, &e->old);
    errno = saved;
}
