/* SPDX-License-Identifier: MIT */
/*
 * The program's own SIGSEGV and SIGBUS handlers under 'vmstack run'.
 *
 * The overflow handler must stay installed for the whole run, yet a
 * program that installs its own handler (to catch its own faults, e.g.
 * with sigsetjmp) must keep it.  So sigaction() and signal() are
 * interposed for these two signals: the program's handler is recorded here
 * and what the program reads back is its own, while the kernel keeps ours.
 * The overflow handler passes faults on to the handler that was installed
 * before it, which is dispatch() below; dispatch() calls the program's
 * handler as the kernel would have.  That includes overflows, after our
 * report: a program that catches its own stack overflow (GNU m4 through
 * libsigsegv, Python's faulthandler) must go on doing so, and one that
 * returns from its handler retries the fault as it would without vmstack.
 * Without a handler of the program's, the process dies by the signal.
 *
 * What the program reads back is exactly what glibc would have given it:
 * its handler, flags and mask as the kernel keeps them (SA_RESTORER and
 * glibc's restorer included, SIGKILL and SIGSTOP out of the mask), and,
 * for other signals, the program's handler where the trampoline stands in
 * for it (sigtramp.c).  A SIG_IGN of the program's, set or inherited across exec,
 * is honoured: a sent SIGSEGV or SIGBUS is dropped, and the programs it
 * executes inherit the SIG_IGN, as the kernel would have kept it (a fault
 * while ignored kills, as the kernel does).
 *
 * vmstack's own calls to sigaction (the guard probe, the install) come
 * before chaining is switched on and go straight to libc.
 */
#include "fault/fault.h"
#include "preload/preload.h"
#include "trace/trace.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000 /* the kernel's; glibc sets it in every sigaction but does not export it */
#endif

static int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
static struct sigaction prog[2]; /* the program's SIGSEGV, SIGBUS, as the kernel would keep them */
static struct sigaction ours[2];  /* the overflow handler's, as installed */
static _Atomic bool chained;

static bool chained_signal(int sig)
{
    return (sig == SIGSEGV || sig == SIGBUS) && atomic_load_explicit(&chained, memory_order_acquire);
}

static void resolve(void)
{
    if (!real_sigaction) {
        real_sigaction = dlsym(RTLD_NEXT, "sigaction");
    }
}

/* The default action: a fault repeats on return and kills; a sent signal is sent again. */
static void die_by(int sig, const siginfo_t *si)
{
    struct sigaction dfl = { .sa_handler = SIG_DFL };

    sigemptyset(&dfl.sa_mask);
    real_sigaction(sig, &dfl, NULL);
    if (si->si_code <= 0)
        syscall(SYS_tgkill, getpid(), gettid(), sig);
}

static void dispatch(int sig, siginfo_t *si, void *uc)
{
    struct sigaction *p = &prog[sig == SIGBUS];
    bool info = p->sa_flags & SA_SIGINFO;
    void (*fn)(int, siginfo_t *, void *) = p->sa_sigaction;
    void (*plain)(int) = p->sa_handler;
    sigset_t mask, old;

    if (!info && plain == SIG_IGN && si->si_code <= 0)
        return; /* sent, and ignored: as the kernel would */
    if (!info && (plain == SIG_DFL || plain == SIG_IGN)) {
        die_by(sig, si);
        return;
    }
    /* As the kernel would have called it: its mask added, the signal blocked unless SA_NODEFER. */
    pthread_sigmask(SIG_BLOCK, &p->sa_mask, &old);
    sigemptyset(&mask);
    if (!(p->sa_flags & SA_NODEFER))
        sigaddset(&mask, sig);
    pthread_sigmask(SIG_BLOCK, &mask, NULL);
    if (p->sa_flags & SA_RESETHAND) {
        p->sa_flags &= ~SA_SIGINFO;
        p->sa_handler = SIG_DFL;
    }
    if (info)
        fn(sig, si, uc);
    else
        plain(sig);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/*
 * Before the overflow handler is installed: makes dispatch() the handler it
 * will chain to, with the program's disposition so far as its target.
 */
void vms__sigchain_init(void)
{
    struct sigaction sa = { .sa_sigaction = dispatch, .sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER };

    resolve();
    sigemptyset(&sa.sa_mask);
    real_sigaction(SIGSEGV, &sa, &prog[0]);
    real_sigaction(SIGBUS, &sa, &prog[1]);
}

void vms__sigchain_undo(void)
{
    real_sigaction(SIGSEGV, &prog[0], NULL);
    real_sigaction(SIGBUS, &prog[1], NULL);
}

/* For the report's last line: does a fault passed on reach a handler of the program's? */
static bool program_handles(int sig)
{
    const struct sigaction *p = &prog[sig == SIGBUS];

    return (p->sa_flags & SA_SIGINFO) || (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN);
}

void vms__sigchain_start(void)
{
    real_sigaction(SIGSEGV, NULL, &ours[0]);
    real_sigaction(SIGBUS, NULL, &ours[1]);
    atomic_store_explicit(&vms__fault_chain_hook, program_handles, memory_order_release);
    atomic_store_explicit(&chained, true, memory_order_release);
    vms__tramp_start(real_sigaction); /* handlers other libraries' constructors installed */
}

/* act as glibc hands it to the kernel and the kernel keeps it: what a read-back returns. */
static void as_kept(struct sigaction *kept, const struct sigaction *act)
{
    *kept = *act;
    kept->sa_flags |= ours[0].sa_flags & SA_RESTORER;
    kept->sa_restorer = ours[0].sa_restorer;
    sigemptyset(&kept->sa_mask);
    for (int s = 1; s <= 64; s++)
        if (s != SIGKILL && s != SIGSTOP && sigismember(&act->sa_mask, s) == 1)
            sigaddset(&kept->sa_mask, s);
}

/* Any other signal: through the trampoline, read back as the program's handler (sigtramp.c). */
static int other_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    return vms__tramp_sigaction(sig, act, old, real_sigaction);
}

VMS_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    struct sigaction *p = &prog[sig == SIGBUS];

    resolve();
    if (!chained_signal(sig))
        return other_sigaction(sig, act, old);
    if (old)
        *old = *p;
    if (act)
        as_kept(p, act);
    return 0;
}

/* ---- exec: a SIG_IGN of the program's is inherited ---- */

static bool ignored(const struct sigaction *sa)
{
    return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_IGN;
}

/*
 * The kernel keeps SIG_IGN across exec, and resets handlers: for the
 * program's SIG_IGN to reach what it executes, the kernel must hold it at
 * the exec.  Undone when the exec fails, or for a spawn, once the child is
 * started.  Meanwhile a tripwire fault of the tracer would kill: the call
 * must find its pages touched already.
 */
static void exec_prepare(void)
{
    resolve();
    if (!atomic_load_explicit(&chained, memory_order_acquire) || !(ignored(&prog[0]) || ignored(&prog[1])))
        return;
    if (atomic_load_explicit(&vms__trace_armed, memory_order_acquire))
        vms__trace_prefault(VMS_PREFAULT_SPAWN);
    for (int i = 0; i < 2; i++)
        if (ignored(&prog[i]))
            real_sigaction(i ? SIGBUS : SIGSEGV, &prog[i], NULL);
}

static void exec_done(void)
{
    int saved = errno;

    if (atomic_load_explicit(&chained, memory_order_acquire))
        for (int i = 0; i < 2; i++)
            if (ignored(&prog[i]))
                real_sigaction(i ? SIGBUS : SIGSEGV, &ours[i], NULL);
    errno = saved;
}

/*
 * fn's arguments may use e, the environment under a small stack limit
 * (stacklimit.c).  execs (replacing, true) tell the keeper that the
 * program's main thread may end for an exec, not for good (keeper.c).
 */
#define EXEC_WRAP(replacing, fn, ...)                                                                             \
    do {                                                                                                          \
        static __typeof__(fn) *real;                                                                              \
        struct vms_exec_env e;                                                                                    \
        int rc;                                                                                                   \
        if (!real)                                                                                                \
            real = (__typeof__(fn) *)dlsym(RTLD_NEXT, #fn);                                                       \
        exec_prepare();                                                                                           \
        vms__out_exec(replacing);                                                                                 \
        rc = real(__VA_ARGS__);                                                                                   \
        vms__out_exec(false);                                                                                     \
        vms__run_exec_end(&e);                                                                                    \
        exec_done();                                                                                              \
        return rc;                                                                                                \
    } while (0)

VMS_API int execve(const char *path, char *const argv[], char *const envp[])
{
    EXEC_WRAP(true, execve, path, argv, vms__run_exec_env(&e, envp));
}

/* execv and execvp are execve and execvpe with environ, whose copy may need a variable more. */
VMS_API int execv(const char *path, char *const argv[])
{
    EXEC_WRAP(true, execve, path, argv, vms__run_exec_env(&e, environ));
}

VMS_API int execvp(const char *file, char *const argv[])
{
    EXEC_WRAP(true, execvpe, file, argv, vms__run_exec_env(&e, environ));
}

VMS_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
    EXEC_WRAP(true, execvpe, file, argv, vms__run_exec_env(&e, envp));
}

VMS_API int fexecve(int fd, char *const argv[], char *const envp[])
{
    EXEC_WRAP(true, fexecve, fd, argv, vms__run_exec_env(&e, envp));
}

VMS_API int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
                        const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    EXEC_WRAP(false, posix_spawn, pid, path, fa, attr, argv, vms__run_exec_env(&e, envp));
}

VMS_API int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
                         const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    EXEC_WRAP(false, posix_spawnp, pid, file, fa, attr, argv, vms__run_exec_env(&e, envp));
}

/*
 * system and popen spawn through glibc's internal posix_spawn, past the
 * wrapper above.  system's SIG_IGN is held until its command ends: an
 * overflow in another thread meanwhile ends the process as plain (the
 * kernel kills a thread whose fault is ignored), without the report.
 */
VMS_API int system(const char *command)
{
    static __typeof__(system) *real;
    int rc;

    if (!real)
        real = (__typeof__(system) *)dlsym(RTLD_NEXT, "system");
    exec_prepare();
    rc = real(command);
    exec_done();
    return rc;
}

VMS_API FILE *popen(const char *command, const char *type)
{
    static __typeof__(popen) *real;
    FILE *f;

    if (!real)
        real = (__typeof__(popen) *)dlsym(RTLD_NEXT, "popen");
    exec_prepare();
    f = real(command, type);
    exec_done();
    return f;
}

/*
 * execl, execle and execlp build their argv and call glibc's internal
 * execve, past the wrappers above: they are built here the same way, on
 * the caller's stack, and go through them.
 */
/* By pointer: a va_list passed by value is left indeterminate in the caller (a struct on aarch64). */
static size_t va_argc(va_list *ap)
{
    size_t n = 1;

    while (va_arg(*ap, char *))
        n++;
    return n;
}

static void va_argv(char **argv, const char *arg, size_t n, va_list *ap)
{
    argv[0] = (char *)arg;
    for (size_t i = 1; i <= n; i++)
        argv[i] = va_arg(*ap, char *); /* argv[n]: the terminating null */
}

/* Declares argv, arg and the variable arguments up to their null, and leaves ap open after that null. */
#define VA_ARGV(argv, arg)                                                                                        \
    va_list ap;                                                                                                   \
    va_start(ap, arg);                                                                                            \
    size_t argc_ = va_argc(&ap);                                                                                  \
    va_end(ap);                                                                                                   \
    char *argv[argc_ + 1];                                                                                        \
    va_start(ap, arg);                                                                                            \
    va_argv(argv, arg, argc_, &ap)

VMS_API int execl(const char *path, const char *arg, ...)
{
    VA_ARGV(argv, arg);
    va_end(ap);
    return execv(path, argv);
}

VMS_API int execlp(const char *file, const char *arg, ...)
{
    VA_ARGV(argv, arg);
    va_end(ap);
    return execvp(file, argv);
}

VMS_API int execle(const char *path, const char *arg, ...)
{
    VA_ARGV(argv, arg);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}

VMS_API __sighandler_t signal(int sig, __sighandler_t handler)
{
    struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESTART }, old;

    /* As glibc's signal(), through the interposed sigaction: the signal itself in the mask. */
    sigemptyset(&sa.sa_mask);
    if (sigaddset(&sa.sa_mask, sig) || sigaction(sig, &sa, &old))
        return SIG_ERR;
    return old.sa_handler;
}

/*
 * The other ways to set a disposition call glibc's internal sigaction,
 * past the one above: they would replace vmstack's handler unseen (the
 * program's read back as it was, its overflows unreported).  Each is
 * glibc's, through the interposed sigaction.
 */
VMS_API __sighandler_t bsd_signal(int sig, __sighandler_t handler)
{
    return signal(sig, handler);
}

VMS_API __sighandler_t ssignal(int sig, __sighandler_t handler)
{
    return signal(sig, handler);
}

/* One-shot, not blocked while it runs: System V's semantics. */
VMS_API __sighandler_t sysv_signal(int sig, __sighandler_t handler)
{
    struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_RESETHAND | SA_NODEFER }, old;

    if (handler == SIG_ERR || sig < 1 || sig >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, &old) ? SIG_ERR : old.sa_handler;
}

VMS_API __sighandler_t __sysv_signal(int sig, __sighandler_t handler)
{
    return sysv_signal(sig, handler);
}

/* SIG_HOLD blocks the signal; any other disposition is set, and unblocks it.  The old one, SIG_HOLD if blocked. */
VMS_API __sighandler_t sigset(int sig, __sighandler_t disp)
{
    struct sigaction sa = { .sa_handler = disp }, old;
    sigset_t set, was;

    sigemptyset(&set);
    if (sigaddset(&set, sig))
        return SIG_ERR;
    if (disp == SIG_HOLD) {
        if (sigprocmask(SIG_BLOCK, &set, &was))
            return SIG_ERR;
        if (sigismember(&was, sig))
            return SIG_HOLD;
        return sigaction(sig, NULL, &old) ? SIG_ERR : old.sa_handler;
    }
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, &old) || sigprocmask(SIG_UNBLOCK, &set, &was))
        return SIG_ERR;
    return sigismember(&was, sig) ? SIG_HOLD : old.sa_handler;
}

VMS_API int sigignore(int sig)
{
    struct sigaction sa = { .sa_handler = SIG_IGN };

    sigemptyset(&sa.sa_mask);
    return sigaction(sig, &sa, NULL);
}

/* glibc also keeps a set of such signals for sigvec, which no program linked today can call. */
VMS_API int siginterrupt(int sig, int interrupt)
{
    struct sigaction sa;

    if (sigaction(sig, NULL, &sa))
        return -1;
    if (interrupt)
        sa.sa_flags &= ~SA_RESTART;
    else
        sa.sa_flags |= SA_RESTART;
    return sigaction(sig, &sa, NULL);
}
