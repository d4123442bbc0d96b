/* SPDX-License-Identifier: MIT */
/*
 * Interfaces between the parts of the overflow handler: fault.c
 * (handlers, classification, policies), report.c (the report), symbols.c
 * (symbols, read lazily), registry.c (stacks vmstack did not allocate).
 * Everything here marked async-signal-safe is called from the handler.
 */
#ifndef VMS_FAULT_H
#define VMS_FAULT_H

#include "task/task.h"

#include <setjmp.h>
#include <signal.h>
#include <sys/stat.h>
#include <ucontext.h>

#include <libunwind.h>

/* ---- report.c: the report, async-signal-safe ---- */

/*
 * Text being written into a fixed buffer; text beyond cap is dropped.  The
 * buffer of a report begun with vms__report_begin also streams: each line
 * goes out as soon as it is complete, so that a report cut short (a fault
 * while unwinding) still says what it had found, and text beyond cap
 * still goes out, only not into p.
 */
struct vms_sbuf {
    char *p;
    size_t cap, len;
};
void vms__sb_str(struct vms_sbuf *b, const char *s);
void vms__sb_hex(struct vms_sbuf *b, uint64_t v);
void vms__sb_dec(struct vms_sbuf *b, uint64_t v);
/* A name from a task record, at most max bytes, which need not be terminated. */
void vms__sb_name(struct vms_sbuf *b, const char *name, size_t max);

/* killsafe.c: may the overflowing task be killed?  (vms__kill_check below) */
struct vms_kill_check {
    bool followed;       /* the chain was followed up to the task's entry */
    bool ended;          /* or to the unwinder's end of the chain */
    const char *holder;  /* the outermost frame that may hold a shared lock, or NULL */
    const char *module;  /* its module */
    uintptr_t outer_sp;  /* a stack's chain, followed: the stack pointer in its outermost frame */
};
/*
 * A stack and its task, the one shape the fault layer passes around:
 * usable bytes [lo, hi), its guard [guard_lo, lo), and while the stack is
 * live (owned) a copy of its task's record.
 */
struct vms_stack_task {
    uintptr_t lo, hi, guard_lo;
    bool owned;
    struct vms_task task;
};
/* What the handler found, for the report. */
enum vms_fault_class { VMS_FAULT_NOT_OURS = 0, VMS_FAULT_OVERFLOW, VMS_FAULT_WILD, VMS_FAULT_UNMANAGED };

struct vms_fault {
    int signo;
    enum vms_fault_class cls;
    uintptr_t addr;               /* the faulting address */
    uintptr_t ip, sp, bp;         /* the interrupted context */
    struct vms_stack_task stack;  /* the stack whose guard was hit; unmanaged: [lo, hi) the mapping above the
                                     access, guard_lo where the access's own mapping starts (0: none), no task */
    struct vms_stack_task by;     /* wild access: the live stack sp is on, if it is on one (owned) */
    bool landed;                  /* the runner jumped its guard; the access hit the guard of ... */
    struct vms_stack_task landed_in; /* ... this other stack (owned: live) */
    bool kill_refused;            /* the policy said kill, the chain said no: why in kc */
    bool to_program;              /* not killed: passed on to a handler of the program's */
    struct vms_kill_check kc;
    ucontext_t *uc;
};

/*
 * unmanaged.c: an overflow of a stack vmstack did not allocate (a fault
 * just below the stack pointer), under 'vmstack run' only: fills f (class
 * VMS_FAULT_UNMANAGED, the mapping) and returns true.  Async-signal-safe.
 */
bool vms__classify_unmanaged(const siginfo_t *si, struct vms_fault *f);
void vms__fault_report_unmanaged(void); /* turns it on */
/* Writes the report up to (not including) the line saying what happens next. */
void vms__report_body(struct vms_sbuf *b, const struct vms_fault *f);
/* What happens to the task that overflowed (a wild access is passed on). */
enum vms_outcome {
    VMS_OUT_ABORT,        /* the policy says abort */
    VMS_OUT_UNKILLABLE,   /* the policy says kill, which this task does not allow: abort */
    VMS_OUT_KILL_FIBER,   /* vmstack kills the fiber */
    VMS_OUT_KILL_STACK,   /* the stack's overflow handler ends its coroutine */
};
/* The last line: "killed fiber 'name'", "aborting" and why, or passing the signal on. */
void vms__report_outcome(struct vms_sbuf *b, const struct vms_fault *f, enum vms_outcome o);
/*
 * A report's life: begin (waits, boundedly, until no other report is being
 * written, so two reports never interleave; decides whether lines stream),
 * then the text, then end (what has not gone out yet goes: all of it to a
 * vms_set_report_callback callback, which takes whole reports).
 */
void vms__report_begin(struct vms_sbuf *b);
void vms__report_end(struct vms_sbuf *b);
/* A whole text as one report (begin, the text, end). */
void vms__report_emit(const char *text, size_t len);
/*
 * Internal sink for the preload library: a writer that takes a report in
 * pieces (lines), and done, told when a report is whole (before the policy
 * acts on it); both async-signal-safe.  Replaces the fd or callback.
 */
void vms__set_report_writer(int (*w)(const char *text, size_t len), void (*done)(void));

/* ---- reportfd.c: the descriptor a report goes to, async-signal-safe ---- */

/* What a descriptor led to when it became the report's (fstat). */
struct vms_fd_id {
    bool open;
    dev_t dev;
    ino_t ino;
    mode_t type; /* st_mode & S_IFMT */
};
void vms__fd_id_take(int fd, struct vms_fd_id *id);
/*
 * Where fd leads now, against was: the same file; another that is no
 * regular file (a pipe, a terminal: stderr redirected, fit for reports);
 * another regular file (a data file of the program's: not to be written);
 * or nothing.  *type: the file type now (not set when closed).
 */
enum vms_fd_state { VMS_FD_SAME, VMS_FD_OTHER, VMS_FD_OTHER_FILE, VMS_FD_CLOSED };
enum vms_fd_state vms__fd_id_check(int fd, const struct vms_fd_id *was, mode_t *type);
/*
 * Writes p[0, len) to fd (whose file type is type), waiting for room in
 * all no longer than *patience ns (which the wait uses up) and without
 * changing its flags.  0, or -ETIMEDOUT when the reader took too little in
 * time (what did not go out is dropped; with no patience left, only what
 * fits at once goes out), or another -errno.
 */
int vms__fd_write_bounded(int fd, mode_t type, const char *p, size_t len, int64_t *patience);
/*
 * The most a blocking write to a file of this type takes at once after
 * poll() said there is room: a pipe's answer means a free page slot,
 * PIPE_BUF bytes; a regular file takes any write; others less.  No system
 * call, no errno: for raw callers too.
 */
size_t vms__fd_piece(mode_t type);
int64_t vms__fd_now_ns(void); /* CLOCK_MONOTONIC */
/* The fault handler's installation: fd 2, as it is now, is where reports go unless told otherwise. */
void vms__report_fd_init(void);

/*
 * Whether a caller's sp, found by unwinding from the frame at sp prev,
 * lies outward of it: above it, or, for the caller of the interrupted
 * frame (i == 1), at it: aarch64's bl moves no sp, so a function stopped
 * at its first instruction (stp x29, x30, [sp, #-N]!) has its caller's.
 * Past that, equal would be a loop.
 */
static inline bool vms__unwind_outward(unw_word_t sp, unw_word_t prev, long i)
{
    return sp > prev || (i == 1 && sp == prev);
}

/* ---- killsafe.c ---- */

/*
 * Async-signal-safe.  Safe to kill when followed && !holder.  stack: the
 * task is a stack of another runtime (its chain ends at the runtime's
 * trampoline), else a fiber (its chain ends at its start routine).
 */
void vms__kill_check(const struct vms_fault *f, struct vms_kill_check *k, bool stack);

/* ---- symbols.c: kallsyms for user space ---- */

struct vms_symres {
    const char *name;    /* NULL when the address is in no known function */
    uintptr_t off, size; /* offset into the function, its size */
    const char *module;  /* file name of the module, NULL when in no module */
    uintptr_t modoff;    /* offset from the module's load address */
};
/*
 * file:line for addr (a call site: a return address less one) from its
 * module's DWARF line table: the file's base name (in the mapped module,
 * not copied) and the line; false when the module has no uncompressed
 * .debug_line or no row for it.  Async-signal-safe, as vms__symbols_lookup.
 */
bool vms__symbols_line(uintptr_t addr, const char **file, unsigned *line);

/* ---- lines.c ---- */

/* The address range of one sequence of a line program, and the unit (in .debug_line) it is in. */
struct vms_dwarf_seq {
    uint64_t lo, hi;
    const unsigned char *unit;
};
/* A module's line table and the string sections it refers to, as mapped; its sequences once indexed. */
struct vms_dwarf {
    const char *line, *line_str, *str; /* NULL: none */
    size_t line_size, line_str_size, str_size;
    const struct vms_dwarf_seq *seqs;
    size_t nseqs;
};
/* Lists d's sequences (one pass over its programs): false when it has none or no memory.  Async-signal-safe. */
bool vms__dwarf_index(struct vms_dwarf *d);
/* The row for pc (a link-time address) in d, indexed: true with the file's base name and the line.  Async-signal-safe. */
bool vms__dwarf_line(const struct vms_dwarf *d, uint64_t pc, const char **file, unsigned *line);

/* [lo, hi): what a loaded module's PT_LOAD segments span; false for none. */
struct dl_phdr_info;
bool vms__module_range(const struct dl_phdr_info *info, uintptr_t *lo, uintptr_t *hi);
/* Lists the loaded modules again if any came or went; never from a signal handler.  0 or -errno. */
int vms__symbols_snapshot(void);
/* Async-signal-safe lookup; reads a module's symbols the first time. */
void vms__symbols_lookup(uintptr_t addr, struct vms_symres *r);

/* ---- unwind.c ---- */

/*
 * libunwind over an interrupted context, reading memory through a check
 * of each page that needs no descriptor (see unwind.c).  prepare once,
 * outside signal handlers (fault_init does); init then works in any
 * context and fails (negative) before prepare.  The struct holds the
 * cursor and what the accessors need, and must live while c is used.
 */
#define PAGES_KNOWN 64
struct vms_unwind {
    unw_cursor_t c;
    const ucontext_t *uc;
    pid_t pid;
    uintptr_t pages[PAGES_KNOWN]; /* readable pages seen, by page number modulo PAGES_KNOWN */
    uintptr_t live_lo, live_hi;   /* read without a check: see vms__unwind_live */
};
void vms__unwind_prepare(void);
int vms__unwind_init(struct vms_unwind *u, const ucontext_t *uc);
/* The same with libunwind's cache of parsed frames (unwind.c says when that is safe). */
int vms__unwind_init_cached(struct vms_unwind *u, const ucontext_t *uc);
/*
 * [lo, hi) is the interrupted task's own stack from its stack pointer up:
 * its live frames, which it could not return through were a page of them
 * unreadable.  Words there are read without asking the kernel first (a
 * stack tens of megabytes deep is thousands of pages).
 */
void vms__unwind_live(struct vms_unwind *u, uintptr_t lo, uintptr_t hi);
/* The dynamic loader's counts of modules loaded and unloaded so far (dl_phdr_info). */
void vms__modules_counts(unsigned long long *adds, unsigned long long *subs);
/*
 * Around every use of libunwind: fork waits for no thread to be inside
 * it.  begin returns NULL, or why nothing may be unwound now (a fork is
 * under way); end only after NULL.  begin_waiting, for the overflow
 * handler, first waits up to a second for another thread's fork to pass.
 * Async-signal-safe.
 */
const char *vms__unwind_begin(void);
const char *vms__unwind_begin_waiting(void);
void vms__unwind_end(void);
/*
 * The same bracket around listing the modules (dl_iterate_phdr, dladdr:
 * they hold the loader's lock too) outside signal handlers: while another
 * thread forks, begin waits a little for the fork to pass, then gives up
 * with -EAGAIN, for the fork may be waiting for a lock its caller holds.
 * 0: listed within the bracket; end with vms__unwind_end.
 */
int vms__modules_begin(void);

/*
 * unwindpipe.c: calls init(arg), in which libunwind initialises itself,
 * with libunwind's pipe2 failing (EMFILE) from then on, so that it never
 * opens a pipe.  Takes the loader's lock (dl_iterate_phdr): within
 * the bracket, never in a signal handler.
 */
void vms__unwind_init_pipeless(void (*init)(void *), void *arg);

/* ---- registry.c ---- */

/*
 * Stacks vmstack did not allocate (the main thread's, glibc-allocated
 * thread stacks under `vmstack run`): usable bytes [lo, hi), guard_below
 * inaccessible bytes below lo.  Consulted by the fault handler when an
 * address is not in a vmstack region.  A fixed table of VMS_REGISTRY_MAX
 * entries claimed lock-free; lookup is async-signal-safe.  Returns a handle
 * >= 0, or -ENOSPC when the table is full.  *task is copied.
 */
#define VMS_REGISTRY_MAX 4096
int vms__stack_register(void *lo, void *hi, size_t guard_below, const struct vms_task *task);
void vms__stack_unregister(int handle);

/* Async-signal-safe: the registered stack whose guard or usable bytes hold addr (hit->owned set). */
bool vms__registry_find(uintptr_t addr, struct vms_stack_task *hit);


/* ---- fault.c ---- */

/*
 * Installs the SIGSEGV/SIGBUS handlers (once per process) and gives the
 * calling thread its guarded alternate signal stack (once per thread; a
 * thread-local test afterwards).  Registered as core's thread_ready hook.
 * Returns 0 or a negative errno.
 */
int vms__fault_thread_init(void);
int vms__altstack_ensure(void);
/* Frees the calling thread's alternate stack, restoring its earlier one; -EBUSY while on it. */
int vms__altstack_drop(void);
/* sigaltstack(2) itself, past any interposer (the preload library's included). */
int vms__altstack_kernel(const stack_t *ss, stack_t *old);
/*
 * The calling thread's alternate stack of ours, [lo, hi) (below the report
 * area), both NULL when it has none: a variable, so that code leaving a
 * task's stack for it makes no call first (deadstack.c: every word below
 * its stack pointer is still the task's).
 */
struct vms_altstack_range {
    char *lo, *hi;
};
extern TLS_IE struct vms_altstack_range vms__altstack_own;
/*
 * sigaltstack as the program sees it while the kernel keeps this thread's
 * alternate stack of ours: the program's own, recorded, read back as set.
 * False when the thread has none of ours in place (the call is the
 * kernel's); else true, with sigaltstack's result in *rc (errno set).
 */
bool vms__altstack_program(const stack_t *ss, stack_t *old, int *rc);

/* ---- foreign.c: stacks of other coroutine libraries ---- */

/* Async-signal-safe: fills *ov (name: a buffer of sizeof owner.name + 1 bytes). */
void vms__overflow_info(const struct vms_fault *f, vms_overflow_task t, const struct vms_sbuf *b, char *name,
                        vms_overflow *ov);
/*
 * Async-signal-safe, in the handler after the report: calls the stack's
 * overflow handler with the interrupted code's signal mask.  Returns only
 * when the handler returned (then the mask is all-blocked again).
 */
void vms__foreign_end(const struct vms_fault *f, const struct vms_sbuf *b);
/*
 * Async-signal-safe, in the handler after the report, for a stack whose
 * handler runs on the coroutine's own stack: makes the interrupted
 * context call it there, on a fresh frame below the outermost frame
 * (f->kc.outer_sp), once the signal handler returns.
 */
void vms__foreign_redirect(const struct vms_fault *f, const struct vms_sbuf *b);

/*
 * Unwinding inside the handler follows call-frame information that may be
 * corrupt and read wild addresses.  Between arm and disarm, such a fault
 * on this thread jumps back to env (sigsetjmp(env, 1) in the caller, whose
 * frame must still be live), so the report says "(unwinding failed)" and
 * goes on.  Async-signal-safe; arm only from the handler.
 */
void vms__fault_nested_arm(sigjmp_buf *env);
void vms__fault_nested_disarm(void);

/*
 * A hook the stack tracer registers, called first for every SIGSEGV in
 * signal context: true when the fault was one of its tripwires (handled:
 * the access retries), false when it is none of the tracer's.
 */
extern bool (*_Atomic vms__fault_tripwire_hook)(const siginfo_t *si, ucontext_t *uc);

/*
 * A hook the preload library registers when it keeps the program's own
 * SIGSEGV/SIGBUS handlers behind ours: true when a fault passed on reaches
 * one of them.  Without it, any earlier handler that is a function counts.
 */
extern bool (*_Atomic vms__fault_chain_hook)(int sig);

#endif
