/* SPDX-License-Identifier: MIT */
/*
 * Fibers and the per-thread scheduler.
 *
 * A fiber's descriptor lives in the slot table next to its stack's entry
 * (the kernel's thread_info moved off the stack); the stack holds only the
 * fiber's own frames.  Where no guard lies below the stack (VMSTACK_GUARD=
 * none, or a stack vmstack did not allocate), its lowest word also holds a
 * canary (VMS_STACK_END_MAGIC, after the kernel's), checked when the fiber
 * switches away and when it ends.  Where a guard lies below, an overflow
 * reaches the guard before the canary, and a fiber that touched little
 * keeps one resident page, not two.
 *
 * A fiber starts by a call on its new stack and, when it returns, ends by
 * the matching return (vms__fiber_launch): call and ret stay paired for the
 * processor's return-address predictor.
 *
 * Each thread has one scheduler: a ring of ready fibers and the "main"
 * descriptor, the thread's own context.  The ring holds the running fiber
 * too, at sched.ring, so a yield is a step along the ring and one switch,
 * straight to the next fiber; round-robin in spawn order, and new or woken
 * fibers join just behind the running one, as at the tail of a FIFO.  The
 * main context is resumed when a fiber it joins has ended (it is put in the
 * ring, and leaves it on arrival), or when the ring is empty: then it sleeps
 * until a waiting fiber can go on (wait.c), or, with nothing to wait for,
 * vms_run() returns or a deadlock is noticed.  The current context is
 * recorded only once a switch has arrived, so a fault anywhere before that
 * is charged to the fiber that made it.
 *
 * A fiber that ends cannot free the stack it is running on: it leaves itself
 * in sched.dead, and whoever it switched to buries it.
 */
#include "task/task.h"
#include "task/debugtable.h"
#include "core/sanitizer.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Fiber ids are handed to threads in blocks, so spawning takes no atomic. */
#define ID_BLOCK 1024
/*
 * Stack a fiber needs to switch away by a join: probed before any scheduler
 * state changes, so that an overflow in the switch hits the guard while the
 * fiber can still be killed cleanly.  Sanitizer runtimes use more, and are
 * probed at every yield too.  A plain yield is not probed: it changes one
 * pointer of the scheduler and pushes one switch frame (64 bytes), and a
 * fault on any of its instructions leaves a state the kill handles.
 */
#if defined(VMS_SAN_ADDRESS) || defined(VMS_SAN_THREAD)
#define SWITCH_HEADROOM 8192
#define YIELD_PROBE 1
#else
#define SWITCH_HEADROOM 1024
#define YIELD_PROBE 0
#endif
/*
 * Under TSan every return is instrumented: a fiber that returned after
 * switching TSan to the next fiber would pop that fiber's shadow stack.
 * There the fiber leaves by a switch from vms__fiber_main, as a kill does.
 */
#ifdef VMS_SAN_THREAD
#define END_BY_RETURN 0
#else
#define END_BY_RETURN 1
#endif

struct vms_sched {
    struct vms_fiber_desc *current;     /* &main or a fiber; NULL before first use */
    struct vms_fiber_desc *ring;        /* the running or next ready fiber; NULL: none */
    struct vms_fiber_desc *dead;        /* ended fiber just switched away from */
    struct vms_fiber_desc main;         /* the thread's own context */
    uint64_t serial;                    /* owner tag of this thread's fibers */
    uint64_t next_id, id_end;           /* this thread's block of fiber ids */
    struct vms_region *region;          /* of the last spawn's stack size... */
    size_t region_size;                 /* ...that size as asked (0: the default) */
    bool colour;                        /* the region has a page more than asked, for colours */
    bool ready;                         /* vms__thread_ready() done: the thread can report an overflow */
    volatile bool probing;              /* in the stack probe: see vms__fiber_probing */
    bool valgrind;
    vms_sched_stats stats;
};

static TLS_IE struct vms_sched sched;
static _Atomic uint64_t next_id_block = 1;
static _Atomic uint64_t next_serial = 1;
/* Where sched lies from the thread pointer, the same in every thread: for debuggers (debugtable.h). */
static int64_t sched_tpoff;

const struct vms_debug_sched vms__debug_sched = {
    .tpoff = &sched_tpoff,
    .current = { offsetof(struct vms_sched, current), sizeof(void *) },
    .main = { offsetof(struct vms_sched, main), sizeof(struct vms_fiber_desc) },
    .serial = { offsetof(struct vms_sched, serial), sizeof(uint64_t) },
};

void *vms__fiber_main(struct vms_fiber_desc *f);

static struct vms_sched *sched_get(void)
{
    struct vms_sched *s = &sched;

    if (__builtin_expect(!s->current, 0)) {
        s->current = &s->main;
        s->main.san_tsan = vms__san_thread_fiber();
        s->serial = atomic_fetch_add_explicit(&next_serial, 1, memory_order_relaxed);
        s->valgrind = vms__san_on_valgrind();
        __atomic_store_n(&sched_tpoff, (char *)s - (char *)__builtin_thread_pointer(), __ATOMIC_RELAXED);
    }
    return s;
}

static inline bool in_fiber(const struct vms_sched *s)
{
    return s->current && s->current != &s->main;
}

static uint64_t new_id(struct vms_sched *s)
{
    if (s->next_id == s->id_end) {
        s->next_id = atomic_fetch_add_explicit(&next_id_block, ID_BLOCK, memory_order_relaxed);
        s->id_end = s->next_id + ID_BLOCK;
    }
    return s->next_id++;
}

_Atomic vms_fiber_hook vms__fiber_start_hook, vms__fiber_end_hook;

/* ---- the ring of ready fibers ---- */

/* Makes f ready: last in turn, just behind the running (or next) fiber. */
static inline void ring_add(struct vms_sched *s, struct vms_fiber_desc *f)
{
    struct vms_fiber_desc *head = s->ring;

    if (!head) {
        f->next = f->prev = f;
        s->ring = f;
        return;
    }
    f->next = head;
    f->prev = head->prev;
    head->prev->next = f;
    head->prev = f;
}

/* Takes f out of the ring (it blocks, ends, or is main arriving); the next in turn goes first. */
static inline void ring_del(struct vms_sched *s, struct vms_fiber_desc *f)
{
    if (f->next == f) {
        s->ring = NULL;
        return;
    }
    f->prev->next = f->next;
    f->next->prev = f->prev;
    if (s->ring == f)
        s->ring = f->next;
}

/* ---- canary and stack ---- */

/* An asm load: under ASan the lowest word may lie in a deep frame's redzone. */
static inline bool canary_ok(const struct vms_fiber_desc *f)
{
    return vms__arch_load_word(f->base) == VMS_STACK_END_MAGIC;
}

/* Touches the stack SWITCH_HEADROOM below the stack pointer (moved there, so valgrind sees no bad read). */
static inline void stack_probe(void)
{
    vms__arch_probe_below(SWITCH_HEADROOM);
}

/* ---- switching ---- */

/* Bury a fiber that ended in the switch that brought us here. */
static void bury(struct vms_sched *s);

/* First thing on arrival in a context, whether resumed or new. */
static inline void arrived(struct vms_sched *s, struct vms_fiber_desc *self)
{
    const void *base = NULL;
    size_t size = 0;

    vms__san_arrive(self->san_fake, &base, &size);
    /* s->current is still the context we left; ASan tells us the bounds of the thread's own stack. */
    if (base && s->current == &s->main) {
        s->main.base = (char *)base;
        s->main.size = size;
    }
    s->current = self;
    if (__builtin_expect(s->dead != NULL, 0))
        bury(s);
}

static inline void switch_to(struct vms_sched *s, struct vms_fiber_desc *from, struct vms_fiber_desc *to)
{
    s->stats.switches++;
    vms__san_leave(from->ended ? NULL : &from->san_fake, to->base, to->size);
    vms__san_switch_to(to->san_tsan);
    if (__builtin_expect(to->sp != NULL, 1))
        vms__switch(&from->sp, to->sp);
    else
        vms__fiber_launch(&from->sp, to, to->top, &to->fpenv, vms__fiber_main);
    arrived(s, from);
}

/* Gives the stack back; the descriptor and its handle are dead after this. */
static void release(struct vms_fiber_desc *f)
{
    vms__san_stack_reset(f->base, f->size);
    atomic_store_explicit(&f->id, 0, memory_order_relaxed);
    if (f->owns_stack) {
        /* A killed fiber's stack is full of its abandoned frames: wiped, as the kernel's are. */
        if (f->end != VMS_FIBER_RETURNED)
            vms__os_release(f->base, f->size);
        vms__stack_give(&f->stack);
    } else {
        vms__san_stack_deregister(f->vg_id);
        f->vg_id = 0;
    }
}

static void bury(struct vms_sched *s)
{
    struct vms_fiber_desc *f = s->dead;

    s->dead = NULL;
    vms__san_fiber_destroy(f->san_tsan);
    f->san_tsan = NULL;
    if (f->detached)
        release(f);
}

/* Ends the running fiber f; returns the context to go to: the next ready fiber, or main. */
static struct vms_fiber_desc *end_fiber(struct vms_sched *s, struct vms_fiber_desc *f, vms_fiber_end end)
{
    /* Acquire: the hook reads what was set up before it was stored (the tracer's tables). */
    vms_fiber_hook end_hook = atomic_load_explicit(&vms__fiber_end_hook, memory_order_acquire);

    /* First, while f is still a live fiber: its mutexes go on, its fiber-local destructors run (and may wait). */
    if (f->sync)
        vms__sync_fiber_end(f, end);
    if (end_hook)
        end_hook(f);
    f->end = (uint8_t)end;
    f->ended = true;
    vms__trim_forget(f);
    s->stats.live--;
    if (end == VMS_FIBER_RETURNED)
        s->stats.returned++;
    else
        s->stats.killed++;
    ring_del(s, f);
    if (f->joiner)
        ring_add(s, f->joiner);
    s->dead = f;
    return s->ring ? s->ring : &s->main;
}

/* Ends the running fiber f and switches away, for good. */
static _Noreturn void finish(struct vms_sched *s, struct vms_fiber_desc *f, vms_fiber_end end)
{
    switch_to(s, f, end_fiber(s, f, end));
    abort(); /* nobody switches to an ended fiber */
}

static _Noreturn void kill_fiber(struct vms_sched *s, struct vms_fiber_desc *f, vms_fiber_end end)
{
    /* A fault inside the hook comes back here: run it once. */
    if (!f->dying) {
        f->dying = true;
        if (f->on_kill)
            f->on_kill(f->on_kill_arg);
    }
    /* Killed in the middle of a wait (no room to switch away): no timer or fd may point to it. */
    if (f->wait)
        vms__wait_forget(f);
    f->arg = NULL;
    finish(s, f, end);
}

/* The kernel's "corrupted stack end detected inside scheduler", then the kill. */
static _Noreturn void canary_kill(struct vms_sched *s, struct vms_fiber_desc *f)
{
    char line[256];
    int n = snprintf(line, sizeof line,
                     "vmstack: BUG: corrupted stack end detected inside scheduler: fiber '%s' (id %llu), "
                     "stack %p-%p; killed fiber '%s'\n",
                     f->task->name, (unsigned long long)f->task->id, (void *)f->base, (void *)(f->base + f->size),
                     f->task->name);

    if (n > (int)sizeof line - 1)
        n = (int)sizeof line - 1;
    (void)!write(STDERR_FILENO, line, (size_t)n);
    kill_fiber(s, f, VMS_FIBER_KILLED_CANARY);
}

static inline void canary_check(struct vms_sched *s, struct vms_fiber_desc *cur)
{
    if (__builtin_expect(cur->canary, 0) && !canary_ok(cur))
        canary_kill(s, cur);
}

/* Before the running fiber switches away: room to do so, and an intact canary. */
static inline void leave_check(struct vms_sched *s, struct vms_fiber_desc *cur)
{
    s->probing = true;
    stack_probe();
    s->probing = false;
    canary_check(s, cur);
}

/*
 * Runs f, called by vms__fiber_launch on f's fresh stack; returns the saved
 * stack pointer of the context to resume, which the launch stub switches to
 * after its matching return.  A fiber that never ran yet cannot be resumed
 * that way: it is launched from here, by a switch, as a kill switches.
 */
void *vms__fiber_main(struct vms_fiber_desc *f)
{
    struct vms_sched *s = &sched;
    struct vms_fiber_desc *to;

    arrived(s, f);
    f->arg = f->fn(f->arg);
    canary_check(s, f);
    to = end_fiber(s, f, VMS_FIBER_RETURNED);
    if (!END_BY_RETURN || !to->sp) {
        switch_to(s, f, to);
        abort(); /* nobody switches to an ended fiber */
    }
    s->stats.switches++;
    vms__san_leave(NULL, to->base, to->size);
    return to->sp;
}

/* Not instrumented: its frame lies among the poisoned redzones of abandoned frames. */
__attribute__((no_sanitize_address)) _Noreturn void vms__fiber_kill_current(int status)
{
    struct vms_sched *s = &sched;
    struct vms_fiber_desc *f = s->current;

    if (!in_fiber(s))
        abort();
    vms__san_stack_reset(f->base, f->size);
    kill_fiber(s, f, (vms_fiber_end)status);
}

struct vms_fiber_desc *vms__fiber_current(void)
{
    return in_fiber(&sched) ? sched.current : NULL;
}

bool vms__fiber_probing(void)
{
    return sched.probing;
}

/* ---- spawning ---- */

/* The name, cut to the task record's size; the default is two stores, not a loop. */
static void set_name(char *dst, const char *src)
{
    size_t cap = sizeof ((struct vms_task *)0)->name, n;

    if (!src) {
        memcpy(dst, "fiber", sizeof "fiber");
        return;
    }
    n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

/*
 * A new fiber: its stack [base, base + size), its first frame colour bytes
 * below the top, a canary at base or not; what it runs, and its options.
 */
struct fiber_setup {
    void *base;
    size_t size, colour;
    bool canary;
    void *(*fn)(void *);
    void *arg;
    const vms_fiber_opts *opts;
};

/* Fills f and its task record from g and puts it on s's ready ring. */
static void fiber_init(struct vms_sched *s, struct vms_fiber_desc *f, struct vms_task *task,
                       const struct fiber_setup *g)
{
    uint64_t id = new_id(s);
    vms_fiber_hook start_hook;

    f->sp = NULL;
    f->base = g->base;
    f->size = g->size;
    f->top = (char *)g->base + g->size - g->colour;
    f->fn = g->fn;
    f->arg = g->arg;
    f->joiner = NULL;
    f->on_kill = NULL;
    f->on_kill_arg = NULL;
    f->task = task;
    f->ended = f->dying = false;
    f->detached = g->opts->detached != 0;
    f->canary = g->canary;
    f->trim_listed = false;
    f->san_fake = NULL;
    f->sync = NULL;
    f->san_tsan = vms__san_fiber_create();
    /* The spawner's floating-point control state, as Boost's make_fcontext gives. */
    f->fpenv = vms__arch_fpenv();
    task->kind = VMS_TASK_FIBER;
    task->id = id;
    task->start = (void *)g->fn;
    set_name(task->name, g->opts->name);
    if (g->canary)
        *(uint64_t *)f->base = VMS_STACK_END_MAGIC;
    if ((start_hook = atomic_load_explicit(&vms__fiber_start_hook, memory_order_acquire)))
        start_hook(f);
    atomic_store_explicit(&f->owner, s->serial, memory_order_relaxed);
    /* Release: another thread that reads this id (vms_fiber_wake) reads this owner, not a stale one. */
    atomic_store_explicit(&f->id, id, memory_order_release);
    ring_add(s, f);
    s->stats.spawned++;
    if (++s->stats.live > s->stats.peak_live)
        s->stats.peak_live = s->stats.live;
}

static const vms_fiber_opts no_opts;

/*
 * Stack colouring.  Every stack top has the same address modulo the page
 * size, so in a ring of fibers all first frames would fall into one set of
 * the L1 cache and evict one another.  A fiber's first frame starts
 * (slot % COLOURS) * 64 bytes below its stack's top instead; the colour is
 * taken from the slack of the stack's size class, and fibers ask for 2 KiB
 * more than their size to make sure there is some, so the usable stack
 * never shrinks below the request (a 64 KiB fiber gets an 80 KiB class,
 * which costs address space, not memory).  Not in the mprotect
 * mode: there fibers share the region of bare stacks of their size, since
 * the guards of another region's chunks would cost VMAs, which that mode
 * runs out of first.
 */
#define COLOURS 32u
#define COLOUR_STEP 64u

/* The region for fibers of stack size `size` as asked (0: the default), with room for colours when it fits. */
static int region_get(struct vms_sched *s, size_t size)
{
    const size_t room = COLOURS * COLOUR_STEP;
    size_t want;
    int rc;
    struct vms_region *r;

    if ((rc = vms__ensure_init()))
        return rc;
    want = size ? size : vms__g.cfg.stack_size;
    /* A size vms_stack_alloc refuses gets its error message as asked. */
    s->colour = vms__g.mode != VMS_GUARD_MPROTECT && want <= VMS_MAX_STACK - room;
    if (!(r = vms__region_for(s->colour ? want + room : want, 0, &rc)))
        return rc;
    s->region = r;
    s->region_size = size;
    return 0;
}

/* vms_stack_alloc, less what a thread's scheduler needs to do only once, or once per stack size. */
static int stack_get(struct vms_sched *s, vms_stack *st, size_t size)
{
    int rc = 0;

    if (__builtin_expect(!s->region || s->region_size != size, 0) && (rc = region_get(s, size)))
        return rc;
    if (__builtin_expect(!s->ready, 0)) {
        /* The spawning thread gets the overflow handler and its alternate stack. */
        if ((rc = vms__thread_ready()))
            return rc;
        s->ready = true;
    }
    return vms__stack_take(s->region, st);
}

int vms_fiber_spawn(vms_fiber *h, void *(*fn)(void *), void *arg, const vms_fiber_opts *opts)
{
    struct vms_sched *s = sched_get();
    struct vms_fiber_desc *f;
    struct vms_slot *slot;
    vms_stack st;
    int rc;

    if (!opts)
        opts = &no_opts;
    if (!fn || (!h && !opts->detached))
        return vms__fail(EINVAL, "vms_fiber_spawn: %s",
                         !fn ? "no function to run" : "no place for the handle of a joinable fiber");
    if ((rc = stack_get(s, &st, opts->stack_size)))
        return rc;
    slot = &s->region->slots[st.id & ((1u << VMS_SLOT_BITS) - 1)];
    vms__record_take(slot);
    f = vms__slot_fiber(slot);
    f->stack = st;
    f->owns_stack = true;
    f->ref = st.id;
    /* Once per slot: the slot's stack never moves. */
    if (s->valgrind && !f->vg_id)
        f->vg_id = vms__san_stack_register(st.base, st.size);
    /* The guard below catches an overflow first: no canary, no second page touched. */
    fiber_init(s, f, &slot->task,
               &(struct fiber_setup){.base = st.base, .size = st.size,
                                     .colour = s->colour ? (st.id % COLOURS) * COLOUR_STEP : 0,
                                     .canary = vms__g.mode == VMS_GUARD_NONE, .fn = fn, .arg = arg, .opts = opts});
    if (h)
        *h = (vms_fiber){ .id = atomic_load_explicit(&f->id, memory_order_relaxed), .ref = f->ref };
    return 0;
}

int vms__fiber_start(struct vms_fiber_desc *f, struct vms_task *task, void *base, size_t size,
                     void *(*fn)(void *), void *arg)
{
    struct vms_sched *s = sched_get();

    if (!fn)
        return vms__fail(EINVAL, "vms__fiber_start: no function to run");
    f->owns_stack = false;
    f->ref = VMS_FIBER_NOREF;
    f->vg_id = s->valgrind ? vms__san_stack_register(base, size) : 0;
    /* The canary where no guard is below: a foreign stack, or guards off. */
    fiber_init(s, f, task,
               &(struct fiber_setup){.base = base, .size = size,
                                     .canary = vms__g.mode == VMS_GUARD_NONE || !vms_on_stack(base, NULL),
                                     .fn = fn, .arg = arg, .opts = &no_opts});
    return 0;
}

/* ---- handles ---- */

/* The descriptor of a handle of this thread's, or an error with its message. */
static int lookup(struct vms_sched *s, vms_fiber h, struct vms_fiber_desc **out)
{
    struct vms_fiber_desc *f = NULL;
    struct vms_slot *slot;

    *out = NULL; /* the compiler cannot see that vms__fail returns nonzero */
    if (h.ref == VMS_FIBER_NOREF) {
        if (in_fiber(s) && atomic_load_explicit(&s->current->id, memory_order_relaxed) == h.id)
            f = s->current;
    } else if ((slot = vms__slot_of_id(h.ref))) {
        f = vms__slot_fiber(slot);
    }
    if (!f || h.id == 0)
        return vms__fail(EINVAL, "not a fiber handle (id %llu): never spawned, or corrupted", (unsigned long long)h.id);
    if (atomic_load_explicit(&f->id, memory_order_relaxed) != h.id)
        return vms__fail(EALREADY, "fiber %llu was joined already (or was detached and has ended): stale handle",
                         (unsigned long long)h.id);
    if (atomic_load_explicit(&f->owner, memory_order_relaxed) != s->serial)
        return vms__fail(EPERM, "fiber %llu belongs to another thread: a fiber stays on the thread that spawned it",
                         (unsigned long long)h.id);
    *out = f;
    return 0;
}

vms_fiber vms_fiber_current(void)
{
    struct vms_sched *s = &sched;

    if (!in_fiber(s))
        return (vms_fiber){ 0, 0 };
    return (vms_fiber){ .id = atomic_load_explicit(&s->current->id, memory_order_relaxed), .ref = s->current->ref };
}

const char *vms_fiber_name(vms_fiber h)
{
    struct vms_fiber_desc *f;
    int rc = lookup(sched_get(), h, &f);

    if (rc) {
        errno = -rc;
        return NULL;
    }
    return f->task->name;
}

int vms_fiber_stack(vms_fiber h, vms_stack *st)
{
    struct vms_fiber_desc *f;
    int rc = lookup(sched_get(), h, &f);

    if (rc)
        return rc;
    *st = f->owns_stack ? f->stack : (vms_stack){ .base = f->base, .size = f->size };
    return 0;
}

int vms_fiber_on_kill(void (*fn)(void *), void *arg)
{
    struct vms_sched *s = &sched;

    if (!in_fiber(s))
        return vms__fail(EPERM, "vms_fiber_on_kill outside a fiber: only a fiber can set its kill hook");
    s->current->on_kill = fn;
    s->current->on_kill_arg = arg;
    return 0;
}

void vms_sched_stats_get(vms_sched_stats *st)
{
    *st = sched.stats;
}

/* ---- scheduling ---- */

int vms_yield(void)
{
    struct vms_sched *s = &sched;
    struct vms_fiber_desc *cur = s->current, *next;

    /* in_fiber(s), from cur alone: of the contexts, only the thread's own (main) has no task record. */
    if (__builtin_expect(!cur || !cur->task, 0))
        return vms__fail(EPERM, "vms_yield outside a fiber: the thread's own stack cannot yield; use vms_run");
    if (YIELD_PROBE)
        stack_probe();
    canary_check(s, cur);
    next = cur->next;
    if (next == cur)
        return 0;
    s->ring = next;
    switch_to(s, cur, next);
    return 0;
}

static int deadlock(const struct vms_sched *s)
{
    return vms__fail(EDEADLK, "deadlock: the %zu live fibers of this thread all wait to join one another",
                     s->stats.live);
}

/*
 * Blocks the current context until f has ended.  A fiber sleeps; the main
 * context runs the ready fibers, and gets control back with f still live
 * only when nothing is ready any more: a deadlock.
 */
static int wait_end(struct vms_sched *s, struct vms_fiber_desc *f)
{
    struct vms_fiber_desc *self = s->current;
    bool is_main = self == &s->main;

    if (f->ended)
        return 0;
    if (f == self)
        return vms__fail(EDEADLK, "fiber %llu '%s' tried to join itself", (unsigned long long)f->task->id,
                         f->task->name);
    if (f->joiner)
        return vms__fail(EBUSY, "fiber %llu '%s' is already being joined by another fiber",
                         (unsigned long long)f->task->id, f->task->name);
    if (!is_main) {
        leave_check(s, self);
        ring_del(s, self);
    }
    f->joiner = self;
    for (;;) {
        /* Never switch to ourselves: main with nothing ready idles instead. */
        if (s->ring || !is_main)
            switch_to(s, self, s->ring ? s->ring : &s->main);
        if (f->ended) {
            /* Main was put in the ring to be woken; it runs outside it. */
            if (is_main)
                ring_del(s, self);
            return 0;
        }
        /* Nothing ready: sleep until a timer, an fd or a wake readies a fiber. */
        if (!is_main || !vms__wait_idle())
            break;
    }
    f->joiner = NULL;
    return deadlock(s);
}

static int join(struct vms_sched *s, struct vms_fiber_desc *f, vms_fiber_status *st)
{
    int rc = wait_end(s, f);

    if (rc)
        return rc;
    if (st)
        *st = (vms_fiber_status){ .end = (vms_fiber_end)f->end,
                                  .tainted = f->owns_stack && vms_stack_tainted(&f->stack) == 1,
                                  .result = f->arg };
    release(f);
    return 0;
}

int vms_fiber_join(vms_fiber h, vms_fiber_status *st)
{
    struct vms_sched *s = sched_get();
    struct vms_fiber_desc *f;
    int rc = lookup(s, h, &f);

    if (rc)
        return rc;
    if (f->detached)
        return vms__fail(EINVAL, "fiber %llu '%s' is detached: nobody can join it", (unsigned long long)h.id,
                         f->task->name);
    return join(s, f, st);
}

int vms__fiber_wait(struct vms_fiber_desc *f, vms_fiber_status *st)
{
    return join(sched_get(), f, st);
}

int vms_run(void)
{
    struct vms_sched *s = sched_get();

    if (in_fiber(s))
        return vms__fail(EPERM, "vms_run from a fiber: run the scheduler from the thread's own stack");
    /* Back here once no fiber is ready: all ended, or all waiting. */
    for (;;) {
        if (s->ring)
            switch_to(s, &s->main, s->ring);
        if (!s->stats.live)
            return 0;
        if (!vms__wait_idle())
            return deadlock(s);
    }
}

/* ---- waiting (the rest is in wait.c) ---- */

static inline void block(void (*then)(void *), void *arg)
{
    struct vms_sched *s = &sched;
    struct vms_fiber_desc *cur = s->current;

    leave_check(s, cur);
    if (then)
        then(arg);
    vms__trim_note(cur);
    ring_del(s, cur);
    switch_to(s, cur, s->ring ? s->ring : &s->main);
}

void vms__sched_block(void)
{
    block(NULL, NULL);
}

void vms__sched_block_then(void (*then)(void *), void *arg)
{
    block(then, arg);
}

void vms__sched_ready(struct vms_fiber_desc *f)
{
    ring_add(&sched, f);
}

bool vms__sched_owns(const struct vms_fiber_desc *f)
{
    return atomic_load_explicit(&f->owner, memory_order_relaxed) == sched.serial;
}
