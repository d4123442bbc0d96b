/* SPDX-License-Identifier: MIT */
/*
 * vmstack stacks for a coroutine library that takes allocator callbacks,
 * as minicoro does (mco_desc.alloc_cb / dealloc_cb / allocator_data).
 *
 * The first half is a tiny coroutine library of this example's own, with
 * that callback shape (no code of minicoro's): coroutines on ucontext,
 * their stacks from whatever the callbacks hand out.  The second half is
 * all a program needs to put such a library on vmstack stacks:
 *
 *   - alloc_cb: vms_stack_alloc takes any size (rounded up to a size
 *     class), names the stack for reports, and registers an overflow
 *     handler that ends just the coroutine;
 *   - dealloc_cb: vms_stack_free_sp frees by the address the library kept.
 *
 * Three coroutines count; the second recurses without end.  vmstack
 * reports the overflow with the coroutine's name, the handler longjmps
 * back to the resumer, the library marks that coroutine dead, and the
 * other two finish.  Exits 0 when all of that happened.
 *
 * Build: cc coro_callbacks.c $(pkg-config --cflags --libs vmstack)
 */
#include <vmstack.h>

#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucontext.h>

/* ------------------------------------------------------------------ */
/* A tiny coroutine library with minicoro-style allocator callbacks.  */
/* ------------------------------------------------------------------ */

struct coro;

struct coro_desc {
    void (*func)(struct coro *co);
    void *user_data;
    size_t stack_size;
    /* The library asks these for a coroutine's stack and gives it back. */
    void *(*alloc_cb)(size_t size, void *allocator_data);
    void (*dealloc_cb)(void *ptr, size_t size, void *allocator_data);
    void *allocator_data;
};

enum coro_state { CORO_SUSPENDED, CORO_RUNNING, CORO_DEAD };

struct coro {
    struct coro_desc desc;
    enum coro_state state;
    void *stack;
    ucontext_t ctx, caller;
    jmp_buf resumer;   /* where coro_abandon goes: the last coro_resume */
};

static __thread struct coro *coro_running;

static void coro_main(void)
{
    struct coro *co = coro_running;

    co->desc.func(co);
    co->state = CORO_DEAD;
}

/* The context that starts coro_main on co's stack (getcontext returns twice: a frame of its own). */
static void coro_context(struct coro *co)
{
    getcontext(&co->ctx);
    co->ctx.uc_stack.ss_sp = co->stack;
    co->ctx.uc_stack.ss_size = co->desc.stack_size;
    co->ctx.uc_link = &co->caller;
    makecontext(&co->ctx, coro_main, 0);
}

static struct coro *coro_create(const struct coro_desc *desc)
{
    struct coro *co = calloc(1, sizeof *co);

    if (!co)
        return NULL;
    co->desc = *desc;
    co->stack = desc->alloc_cb(desc->stack_size, desc->allocator_data);
    if (!co->stack) {
        free(co);
        return NULL;
    }
    coro_context(co);
    return co;
}

/* Runs co until it yields or ends.  Not inlined: the setjmp keeps to a frame of its own. */
__attribute__((noinline)) static void coro_resume(struct coro *co)
{
    struct coro *prev = coro_running;

    if (co->state != CORO_SUSPENDED)
        return;
    co->state = CORO_RUNNING;
    coro_running = co;
    if (setjmp(co->resumer) == 0)
        swapcontext(&co->caller, &co->ctx);
    coro_running = prev;
}

static void coro_yield(struct coro *co)
{
    co->state = CORO_SUSPENDED;
    swapcontext(&co->ctx, &co->caller);
}

/* Ends co from outside its stack (its frames are abandoned) and leaves for its resumer. */
static _Noreturn void coro_abandon(struct coro *co)
{
    co->state = CORO_DEAD;
    longjmp(co->resumer, 1);
}

static void coro_destroy(struct coro *co)
{
    co->desc.dealloc_cb(co->stack, co->desc.stack_size, co->desc.allocator_data);
    free(co);
}

/* ------------------------------------------------------------------ */
/* vmstack as its allocator.                                          */
/* ------------------------------------------------------------------ */

/* What the program gives the callbacks: the name and the coroutine to end on overflow. */
struct vms_alloc_data {
    const char *name;
    struct coro **co;
};

/* Called on the alternate signal stack after the report; never returns. */
static void end_coroutine(const vms_overflow *ov, void *arg)
{
    struct vms_alloc_data *d = arg;

    (void)ov;
    coro_abandon(*d->co);
}

static void *vms_alloc_cb(size_t size, void *allocator_data)
{
    struct vms_alloc_data *d = allocator_data;
    vms_stack st;

    /* The library sets uc_stack from its own size: ask for exactly that, classes round up. */
    if (vms_stack_alloc(&st, size)) {
        fprintf(stderr, "no stack: %s\n", vms_last_error());
        return NULL;
    }
    vms_stack_set_name(&st, d->name);
    vms_stack_on_overflow(&st, end_coroutine, d);
    return st.base;
}

static void vms_dealloc_cb(void *ptr, size_t size, void *allocator_data)
{
    (void)size;
    (void)allocator_data;
    vms_stack_free_sp(ptr);
}

/* ------------------------------------------------------------------ */
/* The program.                                                       */
/* ------------------------------------------------------------------ */

static long recurse(long n)
{
    volatile char pad[200];

    pad[n % 200] = (char)n;
    return n == 0 ? 0 : recurse(n - 1) + pad[n % 200];
}

static void counter(struct coro *co)
{
    long *count = co->desc.user_data;

    for (int i = 0; i < 3; i++) {
        ++*count;
        if (count[1]) /* the bad one */
            *count += recurse(1L << 40);
        coro_yield(co);
    }
}

int main(void)
{
    static const char *names[3] = {"counter 0", "runaway", "counter 2"};
    struct vms_alloc_data data[3];
    struct coro *co[3];
    long counts[3][2] = {{0, 0}, {0, 1}, {0, 0}};
    int alive;

    for (int i = 0; i < 3; i++) {
        struct coro_desc desc = {
            .func = counter,
            .user_data = counts[i],
            .stack_size = 50000, /* not a page multiple: vmstack rounds it up to 56 KiB */
            .alloc_cb = vms_alloc_cb,
            .dealloc_cb = vms_dealloc_cb,
            .allocator_data = &data[i],
        };
        data[i] = (struct vms_alloc_data){names[i], &co[i]};
        if (!(co[i] = coro_create(&desc)))
            return 1;
    }
    do {
        alive = 0;
        for (int i = 0; i < 3; i++) {
            coro_resume(co[i]);
            alive += co[i]->state != CORO_DEAD;
        }
    } while (alive);
    for (int i = 0; i < 3; i++) {
        printf("%s: counted %ld\n", names[i], counts[i][0]);
        coro_destroy(co[i]);
    }
    /* The runaway counted once, then overflowed; the others counted to 3. */
    return counts[0][0] == 3 && counts[1][0] == 1 && counts[2][0] == 3 ? 0 : 1;
}
