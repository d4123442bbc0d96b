/* SPDX-License-Identifier: MIT */
/*
 * Stacks of other coroutine libraries, first-class: a name for reports, a
 * per-stack overflow handler through which the runtime ends just the
 * coroutine that overflowed, the outermost frame and the low-end record
 * of runtimes that need them known (vms_stack_alloc_opts, all of it in
 * one call), and the thread attach call that makes any thread (a
 * work-stealing scheduler's worker) report-ready.
 *
 * Ending a coroutine of another runtime cannot work as the kill of a
 * fiber does (a fresh frame near the top of the overflowed stack): the
 * runtime may keep its own records there (Boost.Context keeps the
 * continuation's record at the top).  So the runtime's handler runs on the
 * alternate signal stack, after the report, and leaves from there to a
 * context of the runtime's (longjmp, or its own context switch).  The
 * signal mask of the overflowed code is restored first: a handler that
 * never returns must not leave the thread with every signal blocked, and
 * with SIGSEGV blocked the next overflow would kill the process unreported.
 */
#include "fault/fault.h"
#include "core/sanitizer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The record of a bare stack a runtime may set up, made a STACK's.  0 or -errno. */
static int stack_task(const vms_stack *st, struct vms_task **out)
{
    struct vms_task *t = st ? vms__task_of(st) : NULL;

    if (!t)
        return vms__fail(EINVAL, "%p is not a live vmstack stack: stale or foreign handle", st ? st->base : NULL);
    if (t->kind != VMS_TASK_NONE && t->kind != VMS_TASK_STACK)
        return vms__fail(EBUSY, "stack %p runs a vmstack fiber or thread, which vmstack names and ends itself",
                         st->base);
    t->kind = VMS_TASK_STACK;
    t->id = st->id;
    *out = t;
    return 0;
}

static void put_name(struct vms_task *t, const char *name)
{
    size_t n = name ? strnlen(name, sizeof t->name - 1) : 0;

    memcpy(t->name, name ? name : "", n);
    memset(t->name + n, 0, sizeof t->name - n);
}

int vms_stack_set_name(const vms_stack *st, const char *name)
{
    struct vms_task *t = NULL;
    int rc = stack_task(st, &t);

    if (rc)
        return rc;
    put_name(t, name);
    return 0;
}

int vms_stack_on_overflow(const vms_stack *st, vms_stack_overflow_fn fn, void *arg)
{
    struct vms_task *t = NULL;
    int rc = stack_task(st, &t);

    if (rc)
        return rc;
    t->on_overflow_arg = arg;
    t->on_overflow = fn;
    return 0;
}

static size_t whole_pages(size_t n)
{
    return (n + vms__g.page - 1) & ~(vms__g.page - 1);
}

/* The runtime's record at the low end, then a guard, then the stack: at least a page of it. */
static int reserve_low(const vms_stack *st, struct vms_task *t, const vms_stack_opts *o)
{
    size_t off = whole_pages(o->low_reserve), len = whole_pages(o->low_guard ? o->low_guard : 1);

    if (o->low_reserve >= st->size || o->low_guard >= st->size || off + len + vms__g.page > st->size)
        return vms__fail(EINVAL, "a low reserve of %zu bytes and a guard of %zu leave no page of a %zu-byte stack: "
                         "ask for more size", o->low_reserve, o->low_guard ? o->low_guard : vms__g.page, st->size);
    return vms__inner_guard(st, t, off, len);
}

/*
 * The stack is fresh and ours: its record is found by its id, with no
 * check of the handle, and it was cleared when the stack was last freed.
 */
int vms_stack_alloc_opts(vms_stack *st, const vms_stack_opts *o)
{
    struct vms_task *t;
    int rc;

    /* vms_stack_alloc's hot path (same size and guard), then the record taken and written once. */
    if ((rc = vms_stack_alloc(st, o ? o->size : 0)) || !o)
        return rc;
    vms__record_take(vms__slot_of_id(st->id));
    t = &vms__slot_of_id(st->id)->task;
    if (o->name || o->on_overflow) {
        t->kind = VMS_TASK_STACK;
        t->id = st->id;
        put_name(t, o->name);
    }
    t->on_overflow_arg = o->on_overflow_arg;
    t->on_overflow = o->on_overflow;
    t->outermost = o->outermost_return;
    t->abort_reason = o->abort_reason;
    t->handler_on_stack = o->handler_on_stack != 0;
    if (o->low_reserve && (rc = reserve_low(st, t, o))) {
        vms_stack_free(st);
        return rc;
    }
    return 0;
}

int vms_thread_attach(void)
{
    int rc;

    /* Attached already (its altstack is set only after the handler): a thread-local test, no call. */
    if (vms__altstack_own.hi)
        return 0;
    rc = vms__ensure_init();

    return rc ? rc : vms__fault_thread_init();
}

int vms_thread_unattach(void)
{
    return vms__altstack_drop();
}

/* Async-signal-safe: what the policy callback and a stack's handler are told. */
void vms__overflow_info(const struct vms_fault *f, vms_overflow_task t, const struct vms_sbuf *b, char *name,
                        vms_overflow *ov)
{
    memcpy(name, f->stack.task.name, sizeof f->stack.task.name);
    name[sizeof f->stack.task.name] = 0;
    *ov = (vms_overflow){
        .task = t,
        .id = f->stack.task.id,
        .name = name,
        .fault_addr = (void *)f->addr,
        .stack_lo = (void *)f->stack.lo,
        .stack_hi = (void *)f->stack.hi,
        .guard_lo = (void *)f->stack.guard_lo,
        .ip = (void *)f->ip,
        .sp = (void *)f->sp,
        .bp = (void *)f->bp,
        .signo = f->signo,
        .report = b->p,
        .report_len = b->len,
    };
}

/*
 * The handler's call on the coroutine's own stack, kept there too (above
 * the frame it runs in): the signal handler that wrote it has returned.
 */
struct on_stack_call {
    vms_overflow ov;
    char name[sizeof ((struct vms_task *)0)->name + 1];
    vms_stack_overflow_fn fn;
    void *arg;
};

#define OUTER_GAP 128 /* bytes left below the outermost frame's stack pointer */

/* Ordinary code, the coroutine's own signal mask back: the handler leaves by the runtime's switch. */
static void call_on_stack(void *p)
{
    struct on_stack_call *c = p;
    char text[128];
    struct vms_sbuf b = {text, sizeof text, 0};

    c->fn(&c->ov, c->arg);
    vms__sb_str(&b, "vmstack: the overflow handler of stack '");
    vms__sb_str(&b, c->name);
    vms__sb_str(&b, "' returned: aborting\n");
    vms__report_emit(text, b.len);
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    abort();
}

void vms__foreign_redirect(const struct vms_fault *f, const struct vms_sbuf *b)
{
    uintptr_t at = (f->kc.outer_sp - OUTER_GAP - sizeof(struct on_stack_call)) & ~(uintptr_t)63;
    struct on_stack_call *c = (struct on_stack_call *)at;

    /* The abandoned frames' redzones must not trouble the call made there. */
    vms__san_stack_reset((void *)f->stack.lo, f->kc.outer_sp - f->stack.lo);
    vms__overflow_info(f, VMS_OVERFLOW_STACK, b, c->name, &c->ov);
    c->fn = f->stack.task.on_overflow;
    c->arg = f->stack.task.on_overflow_arg;
    vms__uc_redirect_ptr(f->uc, at, call_on_stack, c);
}

void vms__foreign_end(const struct vms_fault *f, const struct vms_sbuf *b)
{
    char name[sizeof f->stack.task.name + 1];
    sigset_t all;
    vms_overflow ov;

    vms__overflow_info(f, VMS_OVERFLOW_STACK, b, name, &ov);
    /* The abandoned frames' redzones must not trouble the stack's next user. */
    vms__san_stack_reset((void *)f->stack.lo, f->stack.hi - f->stack.lo);
    pthread_sigmask(SIG_SETMASK, &f->uc->uc_sigmask, NULL);
    f->stack.task.on_overflow(&ov, f->stack.task.on_overflow_arg);
    /* It returned: back to the handler's mask, everything blocked, for the abort. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, NULL);
}
