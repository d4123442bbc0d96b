/* SPDX-License-Identifier: MIT */
/*
 * 'vmstack trace' in libvmstack-preload.so: the options from the
 * environment, and the tracer's start for the main thread and for each
 * thread the program makes (preload.c calls in here when tracing is on).
 *
 *   VMSTACK_RUN_TRACE=1           trace (set by 'vmstack trace')
 *   VMSTACK_TRACE_WARN_FRAME=N    report frames above N bytes
 *   VMSTACK_TRACE_WARN_DEPTH=P    warn when a thread passes P% of its stack
 *   VMSTACK_TRACE_MAX_TASKS=N     tasks traced at once (0: the tracer's default)
 *
 * The report goes where the usage table goes (runtable.c), after it.
 *
 * SIGSEGV is never blocked in a traced process: a tripwire fault while it
 * is blocked would kill the process (the kernel does not queue faults).
 * Libraries that block all signals around pthread_create (liblzma does)
 * have SIGSEGV left out of the set, here in pthread_sigmask and
 * sigprocmask.  A program's own kill(SIGSEGV) thus arrives where it
 * would have waited; nothing else changes.
 *
 * The program's signal handlers are entered through a trampoline on the
 * alternate signal stack, which calls them on the interrupted stack
 * (sigtramp.c): the kernel cannot write a signal frame next to a
 * tripwire, the trampoline can.
 */
#include "preload/preload.h"
#include "trace/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#define MAIN_STACK_UNLIMITED ((size_t)8 << 20) /* the depth traced when RLIMIT_STACK is unlimited */

/* The main thread's stack: from its top down to where RLIMIT_STACK lets it grow. */
static void trace_main_thread(void)
{
    struct vms_task who = {.kind = VMS_TASK_THREAD, .id = (uint64_t)getpid()};
    struct rlimit rl;
    size_t size = MAIN_STACK_UNLIMITED;
    char *lo, *hi;

    if (vms__run_main_stack(&lo, &hi))
        return;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
        size = rl.rlim_cur & ~(vms__g.page - 1);
    if (size > (size_t)(hi - (char *)0))
        return;
    prctl(PR_GET_NAME, who.name);
    vms__trace_begin(hi - size, hi, true, MAIN_GUARD_PAGES * vms__g.page, &who);
}

static void resolve_sigmask(void);

void vms__trace_preload_init(void)
{
    struct vms_trace_opts o = {0};
    const char *v;

    if (strcmp(vms__run_command(), "trace"))
        return;
    resolve_sigmask();
    if ((v = secure_getenv("VMSTACK_TRACE_WARN_FRAME")))
        o.warn_frame = strtoul(v, NULL, 10);
    if ((v = secure_getenv("VMSTACK_TRACE_WARN_DEPTH")))
        o.warn_depth = (unsigned)strtoul(v, NULL, 10);
    if ((v = secure_getenv("VMSTACK_TRACE_MAX_TASKS")))
        o.max_tasks = (unsigned)strtoul(v, NULL, 10);
    if (vms__trace_configure(&o)) {
        vms__out_printf("vmstack trace: not tracing: %s\n", vms_last_error());
        return;
    }
    trace_main_thread();
}

/* The set without SIGSEGV when tracing and the call would block it; else set itself. */
static const sigset_t *without_segv(int how, const sigset_t *set, sigset_t *copy)
{
    if (!set || how == SIG_UNBLOCK || !atomic_load_explicit(&vms__trace_armed, memory_order_relaxed) ||
        sigismember(set, SIGSEGV) != 1)
        return set;
    *copy = *set;
    sigdelset(copy, SIGSEGV);
    return copy;
}

/*
 * The real calls, found at start-up: a dlsym on the program's first call
 * would run the dynamic linker's lookup on the program's stack, deeper
 * than the program itself may ever go, and show in its chain.
 */
static int (*real_pthread_sigmask)(int, const sigset_t *, sigset_t *);
static int (*real_sigprocmask)(int, const sigset_t *, sigset_t *);

static void resolve_sigmask(void)
{
    if (!real_pthread_sigmask)
        real_pthread_sigmask = (int (*)(int, const sigset_t *, sigset_t *))dlsym(RTLD_NEXT, "pthread_sigmask");
    if (!real_sigprocmask)
        real_sigprocmask = (int (*)(int, const sigset_t *, sigset_t *))dlsym(RTLD_NEXT, "sigprocmask");
}

VMS_API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
    sigset_t copy;

    resolve_sigmask();
    if (!real_pthread_sigmask)
        return EINVAL;
    return real_pthread_sigmask(how, without_segv(how, set, &copy), old);
}

VMS_API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
    sigset_t copy;

    if (vms__trace_unwinding()) {
        /* libunwind, in the tripwire handler: all is blocked, and stays so until its sigreturn. */
        if (old)
            sigfillset(old);
        return 0;
    }
    resolve_sigmask();
    if (!real_sigprocmask) {
        errno = EINVAL;
        return -1;
    }
    return real_sigprocmask(how, without_segv(how, set, &copy), old);
}

/* A thread of the program, on its own stack; a stack it brought itself is left alone. */
void vms__trace_run_thread(const struct run_thread *t)
{
    struct vms_task who = {.kind = VMS_TASK_THREAD, .id = (uint64_t)t->tid, .start = (void *)t->fn};

    if (t->user_stack || !t->lo)
        return;
    memcpy(who.name, t->name, sizeof t->name);
    vms__trace_begin(t->lo, t->hi, false, t->guard, &who);
}
