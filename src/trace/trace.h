/*
 * The trace layer: the stack tracer, the ftrace stack tracer's "Depth Size
 * Location" table for unmodified programs, recorded with tripwires.  May
 * call the fault, task and core layers.
 *
 * trace.c keeps, per traced task, a one-page tripwire just below the
 * deepest stack page touched so far; once configured it registers
 * vms__trace_fault as the fault layer's tripwire hook (it sees every
 * SIGSEGV first, records the call chain that touched the new page and moves
 * the tripwire one page down) and its fiber hooks with the task layer.
 * tracetable.c prints the deepest chains at exit; the preload layer starts
 * and ends the traced threads.
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

struct vms_trace_opts {
    size_t warn_frame;   /* report frames above this many bytes; 0: off */
    unsigned warn_depth; /* warn when a task passes this % of its stack; 0: off */
};

/*
 * Turns tracing on for the process (once, outside signal context).  0, or
 * -ENOTSUP when guards are off (VMSTACK_GUARD=none), -ENOMEM.
 */
int vms__trace_configure(const struct vms_trace_opts *o);

/*
 * The calling thread starts being traced: its stack is [lo, hi) (hi the
 * top, from which depths are counted); grows: the main thread's stack,
 * which the kernel extends on demand.  Call on the task's own stack.
 */
int vms__trace_begin(char *lo, char *hi, bool grows, const struct vms_task *who);
/* The calling thread's tracing ends; its deepest chain goes to the results. */
void vms__trace_end(void);
/* The task layer's fiber hooks: a fiber about to run for the first time, and one ending (on its stack). */
void vms__trace_fiber_start(const struct vms_fiber_desc *f);
void vms__trace_fiber_end(const struct vms_fiber_desc *f);
/*
 * Touches a few pages below the caller's frame, so that a libc call that
 * blocks all signals (pthread_create) cannot be the first to reach a new
 * page: a tripwire fault with SIGSEGV blocked kills the process.
 */
void vms__trace_prefault(void);

/* One frame of a chain: return address (the faulting ip for entry 0) and stack pointer. */
struct vms_trace_frame {
    uintptr_t ip, sp;
};

/* The deepest chain of a task, innermost frame first. */
struct vms_trace_chain {
    struct vms_task who;
    uintptr_t lo, hi;
    uint32_t n;                   /* frames in f */
    struct vms_trace_frame *f;
    uint64_t faults;              /* tripwire faults taken */
    unsigned long count;          /* tasks this stands for (folded) */
    bool ret;                     /* f[0].ip is a return address (not the faulting ip) */
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
/* Tasks, ended or running, that never touched their first tripwire: no chain. */
unsigned long vms__trace_quiet(void);
/* Copies of the frame warnings so far. */
size_t vms__trace_warnings(struct vms_trace_warn **out);
const struct vms_trace_opts *vms__trace_options(void);

/* tracetable.c: the report, in the kernel's format. */
void vms__trace_format(FILE *f, const char *why);

#endif
