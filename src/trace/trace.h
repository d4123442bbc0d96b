/* SPDX-License-Identifier: MIT */
/*
 * The trace layer: the stack tracer, the ftrace stack tracer's "Depth Size
 * Location" table for unmodified programs, recorded with tripwires.  May
 * call the fault, task and core layers.
 *
 * trace.c keeps, per traced task, a tripwire window (guard markers, at
 * least as large as the stack's guard) just below the deepest stack page
 * touched so far; once configured it registers vms__trace_fault as the
 * fault layer's tripwire hook (it sees every SIGSEGV first, records the
 * call chain that touched the window and moves the window down) and its
 * fiber hooks with the task layer.  deadstack.c reads the dead stack when
 * a task ends: the exact depth, and the chain at that depth joined to
 * the recorded one.  tracetable.c prints the deepest chains at exit; the
 * preload layer starts and ends the traced threads.
 */
#ifndef VMS_TRACE_H
#define VMS_TRACE_H

#include "fault/fault.h"

#include <signal.h>
#include <stdio.h>
#include <ucontext.h>

/* Nonzero once tracing is configured. */
extern _Atomic int vms__trace_armed;

/*
 * The fault layer's tripwire hook, in signal context, before classification: true when the
 * fault was a tripwire (handled: return from the handler so the access
 * retries), false when it is none of the tracer's.
 */
bool vms__trace_fault(const siginfo_t *si, ucontext_t *uc);

/*
 * Whether addr is in a tripwire window.  In mprotect mode a window splits
 * the stack's mapping in /proc/self/maps, where glibc finds the main
 * thread's stack (mainattr.c).
 */
bool vms__trace_holds(uintptr_t addr);

/*
 * Whether this thread is unwinding in the tripwire handler, where every
 * signal is blocked already: libunwind's own sigprocmask calls around
 * its locks (two system calls a frame) need not be made (tracepreload.c).
 */
bool vms__trace_unwinding(void);

struct vms_trace_opts {
    size_t warn_frame;   /* report frames above this many bytes; 0: off */
    unsigned warn_depth; /* warn when a task passes this % of its stack; 0: off */
    unsigned max_tasks;  /* tasks traced at once (the rest run untraced, and are counted); 0: 16384 */
};

/*
 * Turns tracing on for the process (once, outside signal context).  0, or
 * -ENOTSUP when guards are off (VMSTACK_GUARD=none), -ENOMEM.
 */
int vms__trace_configure(const struct vms_trace_opts *o);

/*
 * The calling thread starts being traced: its stack is [lo, hi) (hi the
 * top, from which depths are counted); grows: the main thread's stack,
 * which the kernel extends on demand; guard: the bytes of guard below it
 * (the tripwire window is larger, so that no frame that cannot jump the
 * guard can jump the window).  Its unused stack is zeroed.  Call on the
 * task's own stack.
 */
int vms__trace_begin(char *lo, char *hi, bool grows, size_t guard, const struct vms_task *who);
/*
 * The calling thread's tracing ends: its dead stack is scanned for the
 * exact depth and the chain there, which go to the results.  Call it
 * before any other code of ours runs deeper on that stack.
 */
void vms__trace_end(void);
/* The task layer's fiber hooks: a fiber about to run for the first time, and one ending (on its stack). */
void vms__trace_fiber_start(const struct vms_fiber_desc *f);
void vms__trace_fiber_end(const struct vms_fiber_desc *f);
/*
 * Touches the pages of up to `bytes` below the caller's frame (never the
 * thread's bottom page), so that a libc call cannot be the first to reach
 * a new page while a tripwire fault would kill the process: one that
 * blocks all signals (pthread_create), or one made while the program's
 * SIG_IGN for SIGSEGV is in the kernel (exec, spawn, system, popen).
 * Beyond VMS_PREFAULT_THREAD only on the calling thread's own stack.
 */
#define VMS_PREFAULT_THREAD ((size_t)4 << 10) /* glibc's pthread_create uses under 2 KiB with signals blocked */
#define VMS_PREFAULT_SPAWN ((size_t)32 << 10) /* system() under AddressSanitizer, with room */
void vms__trace_prefault(size_t bytes);

/* One frame of a chain: return address (the faulting ip for entry 0) and stack pointer. */
struct vms_trace_frame {
    uintptr_t ip, sp;
};

/* ---- deadstack.c: the scan of the dead stack at a task's end ---- */

/* The lowest non-zero word of [lo, below) (a fiber's canary at lo is skipped); 0 if none. */
uintptr_t vms__dead_lowest(uintptr_t lo, uintptr_t below);
/* Zeroes [lo, below): whole pages with MADV_DONTNEED, the rest with memset; only what is not zero. */
void vms__dead_zero(uintptr_t lo, uintptr_t below);

struct vms_dead_args {
    uintptr_t lo, hi;            /* the stack */
    uintptr_t lowest;            /* its lowest written word (vms__dead_lowest) */
    uintptr_t clobbered;         /* words at and above may have been written by our own code */
    const struct vms_trace_frame *rec; /* the chain the tripwires recorded, outermost first */
    uint32_t nrec;
    bool rec_cut;                /* rec[0]'s code has no call-frame information: its callers are unknown */
};
/*
 * The deepest chain still on the dead stack, innermost first, into
 * chain->f (cap entries) and chain->n: f[0] is the deepest function (ip:
 * its entry, 0 when an indirect call's target is unknown; sp: its lowest
 * stack pointer, or the lowest written word when its frame is unknown),
 * then return addresses outwards, each after a call that could have
 * entered the frame below.  chain->partial: it neither reached the
 * outermost frame nor joined the recorded chain (later calls overwrote
 * it, it reached JIT code, or the scan ran out of time); the recorded
 * callers above the lost frames, when their chain passes through the kept
 * ones, follow from f[chain->gap] on.  chain->cut: it is whole but ends,
 * as the recorded one did, at code without call-frame information, whose
 * callers are unknown.  No frames when lowest is 0.  Thread-safe: tasks
 * that end together scan in parallel.
 */
struct vms_trace_chain;
void vms__dead_chain(const struct vms_dead_args *a, struct vms_trace_chain *chain, uint32_t cap);
/*
 * Runs fn(arg, sp) on the calling thread's alternate signal stack, sp
 * being the lowest address of the current stack that code of ours may
 * have written before the switch; in place when the thread has none.
 */
void vms__trace_on_altstack(void (*fn)(void *, uintptr_t), void *arg);

/* The deepest chain of a task, innermost frame first. */
struct vms_trace_chain {
    struct vms_task who;
    uintptr_t lo, hi;
    uint32_t n;                   /* frames in f */
    struct vms_trace_frame *f;
    uintptr_t depth;              /* bytes from hi to the deepest stack pointer (see trace.c) */
    uint64_t faults;              /* tripwire faults taken */
    unsigned long count;          /* tasks this stands for (folded) */
    bool ret;                     /* f[0].ip is a return address (not the faulting ip) */
    bool exact;                   /* depth is the dead-stack scan's; else the tripwires' (running tasks) */
    bool partial;                 /* the chain at that depth was overwritten before it could be joined */
    uint32_t gap;                 /* partial: frames lost before f[gap] (recorded callers from there) */
    bool cut;                     /* f[n - 1]'s code has no call-frame information: its callers are unknown */
    bool running, main, depth_warned, lost, signal_lost;
};

/* A frame above --warn-frame, with the chain that reached it (frame first). */
#define VMS_TRACE_WARN_CHAIN 64
struct vms_trace_warn {
    struct vms_task who;
    uintptr_t hi;
    size_t size;
    uint32_t n, total;            /* frames kept, frames in the whole chain */
    bool ret;                     /* f[0].ip is a return address (not the faulting ip) */
    struct vms_trace_frame f[VMS_TRACE_WARN_CHAIN];
};

/* Snapshots of every task's deepest chain, deepest first; free with vms__trace_free. */
size_t vms__trace_collect(struct vms_trace_chain **out);
void vms__trace_free(struct vms_trace_chain *c, size_t n);
/* Tasks that ran untraced: no record was free for them (the limit in *limit). */
unsigned long vms__trace_untraced(int *limit);
/* Tasks, ended or running, that never touched their first tripwire: no chain. */
unsigned long vms__trace_quiet(void);
/* Copies of the frame warnings so far. */
size_t vms__trace_warnings(struct vms_trace_warn **out);
const struct vms_trace_opts *vms__trace_options(void);
/* The pid that ptraced the process when tracing began (no tripwires then: depths from the dead stack), or 0. */
int vms__trace_tracer(void);
/* Whether valgrind runs the process (no tripwires either: depths from the dead stack). */
bool vms__trace_on_valgrind(void);

/* tracetable.c: the report, in the kernel's format, of process pid (the table's keeper is not it). */
void vms__trace_format(FILE *f, const char *why, pid_t pid);
/*
 * The same report as one JSON object (chains with their frames unfolded,
 * quiet tasks, frame warnings), written as the value the caller's writer
 * expects next.
 */
struct vms_json;
void vms__trace_json(struct vms_json *j, const char *why);

#endif
