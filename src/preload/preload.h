/* SPDX-License-Identifier: MIT */
/*
 * The preload layer: what libvmstack-preload.so adds to the library for
 * 'vmstack run' and 'vmstack trace'.  preload.c (the interposed pthread
 * calls, the threads' lives, the options), runtable.c (the usage table),
 * sigchain.c (the program's own SIGSEGV handlers) and tracepreload.c (the
 * tracer's front end, on the same options and thread records).  The top
 * layer: may call every layer below.
 */
#ifndef VMS_PRELOAD_H
#define VMS_PRELOAD_H

#include "trace/trace.h"

#include <stdbool.h>
#include <sys/resource.h>
#include <sys/types.h>

#define MAIN_GUARD_PAGES 256 /* the main thread's guard: the kernel's default stack_guard_gap */

/*
 * The options, from the environment that 'vmstack run' sets:
 *   VMSTACK_RUN_STACK_SIZE     stack size of threads that ask for no size
 *   VMSTACK_RUN_GUARD_SIZE     guard below each thread stack
 *   VMSTACK_RUN_JSON=1         the table as JSON
 *   VMSTACK_RUN_QUIET=1        no table at exit on stderr unless an overflow was reported
 *   VMSTACK_RUN_OUTPUT=FILE    the table replaces FILE (else: stderr)
 *   VMSTACK_RUN_REPORT_SIGNAL  signal number that prints the table
 *   VMSTACK_RUN_PLOT=FILE      also a PNG of the table (runpost.c)
 *   VMSTACK_RUN_FOLDED=FILE    also the chains as folded stacks (trace); "-": stdout
 *   VMSTACK_RUN_FLAMEGRAPH=FILE  also the chains as an SVG flame graph (trace); "-": stdout
 *   VMSTACK_RUN_PID            the process that prints the table (the one
 *                              'vmstack run' became; its children don't)
 *   VMSTACK_RUN_STACK_LIMIT    the program's own soft RLIMIT_STACK, when
 *                              'vmstack run' raised it for the loader (stacklimit.c)
 * and VMSTACK_GUARD, VMSTACK_GUARD_SIZE etc. for the library itself, as
 * the program sees them too.
 */
struct run_opts {
    size_t stack_size;  /* 0: glibc's default */
    size_t guard_size;  /* 0: the library's configured guard */
    bool json, quiet;
    const char *output, *plot, *folded, *flamegraph; /* absolute paths ("-" for stdout), or NULL */
    int report_signal;  /* 0: none */
    pid_t pid;          /* 0: any */
};
extern struct run_opts vms__run_opts;
/*
 * The command that started the program, which the preload's messages
 * name: "trace" under VMSTACK_RUN_TRACE=1 (set by 'vmstack trace'), else
 * "run".  Read from the environment once, in the constructor at the
 * latest: the program may change its environment.
 */
const char *vms__run_command(void);

/*
 * One thread created by the program: its record while it runs, then its
 * row of the table.  All fields are written by the thread itself (or its
 * creator before it starts) and read by the table under the rows' lock.
 */
struct run_thread {
    struct run_thread *next, *prev;   /* live list */
    void *(*fn)(void *);
    void *arg;
    struct vms_task *task;            /* its slot's task record (vmstack stack) */
    vms_stack st;                     /* st.base NULL: not a vmstack stack */
    char *lo, *hi;                    /* usable bytes of the stack: hi is where the program's part ends */
    size_t room;                      /* bytes above hi glibc uses for our static TLS (vmstack stacks) */
    size_t guard;                     /* vmstack's, or glibc's for its own stacks */
    size_t guard_asked;               /* guard size pthread_getattr_np reports: the one asked, in pages */
    size_t top;                       /* bytes above the start routine's frame */
    size_t peak;                      /* deepest use, from hi; 0 = not measured */
    unsigned long count;              /* threads this row stands for (folded rows) */
    pthread_t self;
    pid_t tid;
    int reg;                          /* fault registry handle, or -1 */
    bool user_stack;                  /* pthread_attr_setstack */
    bool measurable;                  /* stack was zero below the start frame */
    _Atomic bool ended;               /* its start routine returned; stack not yet freed */
    bool listed;                      /* in the live list (it reached its start routine) */
    char name[16];
};

struct vms_run_shm; /* runshm.h */

/*
 * outfd.c: where the overflow reports, the preload's notices and the table
 * go: the program's fd 2 while it is the stderr of the start, else the
 * memory shared with the keeper, which writes them to that stderr when
 * asked, while the program waits.  vms__out_write, vms__out_report and vms__out_table
 * are async-signal-safe; the overflow report's lines go through
 * vms__out_report, which also records that a report says why the program
 * died.
 */
void vms__out_init(void);
void vms__out_attach(void); /* the memory shared with the keeper, by the program 'vmstack run' started */
/* vmstack does not run in this image of the program, and said why: no table from it. */
void vms__out_detach(void);
int vms__out_write(const char *p, size_t len); /* 0, or -errno when nothing could be written */
int vms__out_report(const char *p, size_t len);
void vms__out_report_done(void); /* a report is whole: the keeper writes it now */
size_t vms__out_dropped(void);   /* bytes for fd 2 dropped because it stalled */
void vms__out_table(const char *text, size_t len); /* the table at the end, by the program or its keeper */
void vms__out_ended(void);       /* the table at the end is made: the keeper makes none */
bool vms__out_table_done(void);
bool vms__out_reported(void);
void vms__out_flush(void);       /* the keeper: what waited for the start's stderr, written there */
/*
 * What waits in m for the start's stderr (reports, then the table unless
 * the keeper delivers it whole), each part once, to put with its patience.
 * Touches only m: for the keeper's raw calls too.
 */
void vms__out_drain(struct vms_run_shm *m, void (*put)(const char *p, size_t len, int64_t patience, void *ctx),
                    void *ctx);
void vms__out_exec(bool replacing); /* around exec calls (true) and spawns (false): for the keeper */
/* The table at the end, for a keeper that is up to deliver whole (--output, --plot...): false when none is. */
bool vms__out_hand_over(const char *text, size_t len);
bool vms__out_handed_over(const char **text, size_t *len); /* in the keeper: such a table, once */
void vms__out_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
struct vms_run_shm *vms__out_shm(void); /* the memory shared with the keeper, NULL: none or not ours */
void vms__out_adopt(void);              /* the keeper takes the program's place there */

/*
 * keeper.c: the task that outlives the program, nobody's child but init's,
 * to make the table when the program ends without its exit handlers
 * (exit_group, a fatal signal, SIGKILL) and write what waited for the
 * stderr of the start; started once the shared memory is attached.
 */
void vms__keeper_start(void);
/* The keeper writes what waits for the start's stderr now; bounded wait, async-signal-safe. */
void vms__keeper_flush(void);

/* runpost.c: --plot, --folded and --flamegraph from the report text; 0, or -1 after a message. */
int vms__run_post(const char *text, size_t len);
/* flamegraph.c: --flamegraph, the chains of report (cut in place) drawn into path as SVG; 0, or -1 after a message. */
int vms__flamegraph_write(char *report, const char *path, const char *prog);

/* sigchain.c: the program's SIGSEGV/SIGBUS handlers behind the overflow handler. */
void vms__sigchain_init(void);  /* before the overflow handler is installed */
void vms__sigchain_start(void); /* after: the program's sigaction calls are recorded */
void vms__sigchain_undo(void);  /* the overflow handler could not be installed */

/* runtable.c */
void vms__run_live(struct run_thread *t);
/*
 * A thread's end.  A thread on a foreign stack is measured when its start
 * routine returns (vms__run_finished: the program may reuse that stack
 * right after); one on a vmstack stack once it is gone, when its stack is
 * freed (vms__run_released, through vms__thread_ended: its peak then
 * includes glibc's thread exit, and measuring and zeroing are one look at
 * the stack), and is only marked ended before (vms__run_ended).
 */
void vms__run_finished(struct run_thread *t);
void vms__run_ended(struct run_thread *t);
void vms__run_released(vms_stack *st);
/* pthread_setname_np on a thread of the table. */
void vms__run_rename(pthread_t thread, const char *name);
/* Deepest use of a thread's stack now, or 0 when it cannot be measured. */
size_t vms__run_measure(const struct run_thread *t);
/* Writes the table; why is "exit" or the signal's name.  -1 when --output FILE could not be written. */
int vms__run_table(const char *why);
/* The table at exit, once, by the process 'vmstack run' started; -1 as vms__run_table. */
int vms__run_exit_table(void);
/*
 * The table made by the keeper of program pid (main thread called name),
 * gone as why says ("exit_group", "death by SIGKILL").
 */
int vms__run_keeper_table(pid_t pid, const char *name, const char *why);
/* In the keeper: delivers a table the program handed over (vms__out_hand_over). */
void vms__run_deliver_kept(void);
/* Registers the table's part of the fork handling (core/fork.c). */
void vms__run_fork_init(void);
/* Starts the helper thread that prints the table on opts.report_signal. */
int vms__run_signal_init(void);
/* The main thread's stack VMA ([stack] in /proc/self/maps). */
int vms__run_main_stack(char **lo, char **hi);
/*
 * The program's RLIMIT_STACK, which 'vmstack run' raised for the dynamic
 * loader (VMSTACK_RUN_STACK_LIMIT), put back first thing in the
 * constructor; the main stack's mapping trimmed to it last (stacklimit.c).
 */
void vms__run_stack_limit_restore(void);
void vms__run_stack_trim(void);
/*
 * The same for what the program executes: under a soft limit too small
 * for the loader, an exec whose environment preloads us gets the raised
 * limit, and the limit to put back in its environment (e->env, on the
 * caller's stack; envp as it is when there is nothing to do or no room).
 * end puts the caller's limit back after the call (a failed exec, a spawn).
 */
#define VMS_EXEC_ENV_MAX 256
struct vms_exec_env {
    struct rlimit old;
    bool raised;
    char *env[VMS_EXEC_ENV_MAX + 2];
    char limit[48]; /* VMSTACK_RUN_STACK_LIMIT=N */
};
char *const *vms__run_exec_env(struct vms_exec_env *e, char *const envp[]);
void vms__run_exec_end(struct vms_exec_env *e);

/* tracepreload.c: 'vmstack trace' in libvmstack-preload.so. */
void vms__trace_preload_init(void);
void vms__trace_run_thread(const struct run_thread *t);
/*
 * sigtramp.c: the program's handlers, entered on the stack it chose from a
 * trampoline on vmstack's alternate stack.  wrap: whether act is such a
 * handler, then *out is what the kernel gets instead.
 */
bool vms__tramp_wrap(int sig, const struct sigaction *act, struct sigaction *out);
/* sigaction of the program's for signals but SIGSEGV and SIGBUS, through the trampoline; real is libc's. */
int vms__tramp_sigaction(int sig, const struct sigaction *act, struct sigaction *old,
                         int (*real)(int, const struct sigaction *, struct sigaction *));
/* The handlers already installed, put behind the trampoline. */
void vms__tramp_start(int (*real)(int, const struct sigaction *, struct sigaction *));

/* Undoes what a tripwire in mprotect mode cut off glibc's answer for the main thread's stack. */
void vms__main_attr_untrace(pthread_attr_t *attr);

#endif
