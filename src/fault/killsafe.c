/* SPDX-License-Identifier: MIT */
/*
 * May the overflowing task be killed?  Killing ends the task where it
 * stands and lets its scheduler go on, so whatever the task held stays
 * held: a fiber that overflows inside malloc holds the arena's lock, and
 * the next malloc of any thread then waits forever.  The kernel's oops
 * has the same problem and answers it by panicking where a lock may be
 * held; so do we.  The kill is allowed only when no frame of the faulting
 * chain, from the faulting instruction up to the task's entry, lies in
 * code that may hold a lock some other task needs: libc, the dynamic
 * loader, vmstack itself, a sanitizer's runtime, or Boost.Fiber.  The lock-free leaf
 * routines of libc (memcpy, strlen and the like, by name) are allowed, and so are
 * vmstack's own frames when the fault is the scheduler's stack probe
 * (vms__fiber_probing), which runs before vmstack takes or changes
 * anything for the fiber.  A chain that cannot be followed up to the
 * entry (main, on the main thread) proves nothing: no kill.
 *
 * The entry of a fiber is its start routine (or vmstack's fiber entry
 * above it).  A stack of another coroutine library ends with that
 * runtime's trampoline (glibc's __start_context under makecontext,
 * Boost.Context's trampoline): the outermost frame on the stack, after
 * which the unwinder finds no caller, or a caller on another stack.  The
 * trampoline itself holds nothing: it only calls the coroutine's function.
 * A runtime whose outermost frame returns to a sentinel address names it
 * (vms_task.outermost), and the chain ends there.
 *
 * Async-signal-safe: libunwind's local unwinding and the symbol lookup.
 */
#include "fault/fault.h"

#include <string.h>


#define MAX_CHAIN 100000 /* deeper than this is a broken stack, not a proof */

/*
 * task/fiber.c: the function that calls every fiber's start routine.  Its
 * frame ends the fiber's own part of the chain even when the start
 * routine tail-called its way out of the chain.  An address, not a call.
 */
extern const char vms__fiber_main[];

static bool starts_with(const char *s, const char *prefix)
{
    return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

/*
 * Modules whose code may hold a lock that others need (a sanitizer's
 * runtime is an allocator too; Boost.Fiber's scheduler, mutexes and
 * channels spin on locks that the other fibers of the thread need).
 */
static bool locking_module(const char *m)
{
    return starts_with(m, "libc.so") || starts_with(m, "libc-") || starts_with(m, "ld-linux") ||
           starts_with(m, "ld.so") || starts_with(m, "libpthread") || starts_with(m, "libvmstack") ||
           starts_with(m, "libasan") || starts_with(m, "libtsan") || starts_with(m, "libubsan") ||
           starts_with(m, "liblsan") || starts_with(m, "libboost_fiber");
}

/*
 * Boost.Fiber's code inlined into the program (its channels and futures
 * are templates that take its spinlocks), by mangled name; not the
 * function that runs a fiber's body (worker_context::run_), which holds
 * nothing while the body runs.
 */
static bool boost_fiber_code(const char *name)
{
    return (starts_with(name, "_ZN5boost6fibers") || starts_with(name, "_ZNK5boost6fibers")) &&
           !starts_with(name, "_ZN5boost6fibers14worker_context");
}

/*
 * libc's leaf routines that take no lock (their optimised variants start
 * with "__"), and a sanitizer's interceptors of them, which check shadow
 * memory and call them ("__interceptor_memcpy", "__asan_memcpy").
 */
static bool lock_free_leaf(const char *name)
{
    static const char *const wrapper[] = {"__interceptor_", "___interceptor_", "__asan_", "__tsan_"};
    static const char *const leaf[] = {
        "memcpy", "memmove", "memset", "memcmp", "memchr", "memrchr", "mempcpy", "memmem", "bcmp",
        "strlen", "strnlen", "strcpy", "strncpy", "strcat", "strncat", "strcmp", "strncmp", "strchr",
        "strrchr", "strchrnul", "strstr", "strspn", "strcspn", "strpbrk", "stpcpy", "stpncpy", "rawmemchr",
        "wmemcpy", "wmemmove", "wmemset", "wmemcmp", "wmemchr", "wcslen", "wcsnlen", "wcscpy", "wcsncpy",
        "wcscmp", "wcsncmp", "wcschr", "wcsrchr", "wcscat", "wcsncat", "wcpcpy", "wcpncpy"};

    for (size_t i = 0; name && i < sizeof wrapper / sizeof *wrapper; i++)
        if (starts_with(name, wrapper[i]))
            name += strlen(wrapper[i]);
    while (name && *name == '_')
        name++;
    if (!name)
        return false;
    /* By name, not by prefix: strdup, memalign and strftime take locks. */
    for (size_t i = 0; i < sizeof leaf / sizeof *leaf; i++) {
        size_t n = strlen(leaf[i]);
        if (strncmp(name, leaf[i], n) == 0 && (name[n] == '\0' || name[n] == '_' || name[n] == '@'))
            return true;
    }
    return false;
}

/* vmstack linked statically into the program: its functions by their prefix. */
static bool vmstack_function(const char *name)
{
    return starts_with(name, "vms_");
}

static bool frame_may_hold_lock(uintptr_t ip, struct vms_symres *s, bool probing)
{
    vms__symbols_lookup(ip, s);
    if (vmstack_function(s->name) || starts_with(s->module, "libvmstack"))
        return !probing;
    return (locking_module(s->module) && !lock_free_leaf(s->name)) || boost_fiber_code(s->name);
}

/* The task's own entry: a fiber's start routine, or vmstack's fiber entry above it. */
static bool fiber_entry(const struct vms_fault *f, unw_cursor_t *c)
{
    unw_proc_info_t pi;

    return unw_get_proc_info(c, &pi) == 0 && (pi.start_ip == (unw_word_t)(uintptr_t)f->stack.task.start ||
                                              pi.start_ip == (unw_word_t)(uintptr_t)vms__fiber_main);
}

static void hold(struct vms_kill_check *k, const struct vms_symres *s)
{
    k->holder = s->name ? s->name : "??";
    k->module = s->module ? s->module : "?";
}

/*
 * Follows the chain outwards.  On a fiber it ends at the fiber's entry.
 * On a stack of another runtime (stack) it ends at the outermost frame of
 * that stack, the runtime's trampoline, whose own frame is not judged: a
 * frame's verdict is kept only once a caller on the stack is found above
 * it.  The outermost frame is the one after which the unwinder reports
 * the end of the chain, finds a zero return address, or finds a caller
 * above the stack's top (on the stack that resumed the coroutine), or
 * whose return address is the one the runtime named as its coroutines'
 * outermost (vms_stack_alloc_opts: minicoro's 0xdeaddeaddeaddead, where
 * the unwinder would go on into no code and fail).
 */
static void walk(const struct vms_fault *f, struct vms_kill_check *k, bool stack)
{
    struct vms_unwind u;
    unw_cursor_t *c = &u.c;
    unw_word_t ip, sp, prev_sp = 0;
    struct vms_symres s;
    bool probing = !stack && vms__fiber_probing(), held = false;
    int step = 1;

    if (vms__unwind_init(&u, f->uc) < 0)
        return;
    for (long i = 0; i < MAX_CHAIN; i++) {
        if (unw_get_reg(c, UNW_REG_IP, &ip) < 0 || unw_get_reg(c, UNW_REG_SP, &sp) < 0)
            return;
        if (stack && i > 0 && (ip == 0 || sp > f->stack.hi || ip == f->stack.task.outermost)) {
            k->followed = true; /* the frame before was the outermost */
            k->outer_sp = prev_sp;
            return;
        }
        if (ip == 0 || (i > 0 && (!vms__unwind_outward(sp, prev_sp, i) || sp > f->stack.hi)))
            return;
        prev_sp = sp;
        if (stack && held)
            hold(k, &s); /* the frame below had a caller on the stack: not the trampoline */
        /* The start routine's own frame is the program's; above it is vmstack's fiber entry. */
        if (!stack && fiber_entry(f, c)) {
            k->followed = true;
            return;
        }
        /* A return address points after the call: look up ip - 1, inside the calling function. */
        held = frame_may_hold_lock(i > 0 ? ip - 1 : ip, &s, probing);
        if (held && !stack)
            hold(k, &s);
        /* The main thread's start routine: what calls it holds no lock. */
        if (!stack && !held && s.name && strcmp(s.name, "main") == 0) {
            k->followed = true;
            return;
        }
        if ((step = unw_step(c)) <= 0) {
            /* 0: the unwinder's own end of the chain (undefined return address), after the trampoline. */
            k->followed = stack && step == 0 && i > 0;
            k->ended = step == 0;
            k->outer_sp = sp;
            return;
        }
    }
}

void vms__kill_check(const struct vms_fault *f, struct vms_kill_check *k, bool stack)
{
    sigjmp_buf env;

    memset(k, 0, sizeof *k);
    if (vms__unwind_begin_waiting())
        return; /* nothing followed: nothing is proven */
    if (sigsetjmp(env, 1) == 0) {
        vms__fault_nested_arm(&env);
        walk(f, k, stack);
        vms__fault_nested_disarm();
        vms__unwind_end();
        return;
    }
    vms__unwind_end();
    k->followed = k->ended = false; /* a fault while unwinding: nothing is proven */
}
