/* SPDX-License-Identifier: MIT */
/*
 * What AddressSanitizer, ThreadSanitizer and valgrind must be told about
 * fiber switches, so that they see one stack per fiber instead of a thread
 * whose stack pointer jumps about.  Each hook compiles to nothing unless the
 * build is for that tool; the valgrind ones cost one branch on a flag when
 * the program is not running under valgrind.
 */
#ifndef VMS_SANITIZER_H
#define VMS_SANITIZER_H

#include <stdbool.h>
#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define VMS_SAN_ADDRESS 1
#endif
#if __has_feature(thread_sanitizer)
#define VMS_SAN_THREAD 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(VMS_ASAN)
#define VMS_SAN_ADDRESS 1
#endif
#if defined(__SANITIZE_THREAD__) || defined(VMS_TSAN)
#define VMS_SAN_THREAD 1
#endif

#ifdef VMS_SAN_ADDRESS
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef VMS_SAN_THREAD
#include <sanitizer/tsan_interface.h>
#endif
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>
#define VMS_SAN_VALGRIND 1
#endif

/*
 * ASan: before leaving a stack for [to_base, to_base + to_size).  fake is
 * where the leaving context's fake stack is kept, NULL when it leaves for
 * good (ASan then frees its fake stack).
 */
static inline void vms__san_leave(void **fake, const void *to_base, size_t to_size)
{
#ifdef VMS_SAN_ADDRESS
    __sanitizer_start_switch_fiber(fake, to_base, to_size);
#else
    (void)fake, (void)to_base, (void)to_size;
#endif
}

/*
 * ASan: first thing after arriving on a stack; fills the bounds of the stack
 * that was left (used to learn the bounds of a thread's own stack).
 */
static inline void vms__san_arrive(void *fake, const void **from_base, size_t *from_size)
{
#ifdef VMS_SAN_ADDRESS
    __sanitizer_finish_switch_fiber(fake, from_base, from_size);
#else
    (void)fake, (void)from_base, (void)from_size;
#endif
}

/*
 * ASan: a stack whose frames were abandoned (the fiber ended in a switch,
 * or was killed) keeps their redzones poisoned; clear them before the
 * memory serves anyone else.
 */
static inline void vms__san_stack_reset(void *base, size_t size)
{
#ifdef VMS_SAN_ADDRESS
    __asan_unpoison_memory_region(base, size);
#else
    (void)base, (void)size;
#endif
}

/* TSan: a fiber context, the thread's own, switching (just before the switch), freeing. */
static inline void *vms__san_fiber_create(void)
{
#ifdef VMS_SAN_THREAD
    return __tsan_create_fiber(0);
#else
    return NULL;
#endif
}

static inline void *vms__san_thread_fiber(void)
{
#ifdef VMS_SAN_THREAD
    return __tsan_get_current_fiber();
#else
    return NULL;
#endif
}

static inline void vms__san_switch_to(void *tsan_fiber)
{
#ifdef VMS_SAN_THREAD
    __tsan_switch_to_fiber(tsan_fiber, 0);
#else
    (void)tsan_fiber;
#endif
}

/* Must not be called on the fiber being destroyed. */
static inline void vms__san_fiber_destroy(void *tsan_fiber)
{
#ifdef VMS_SAN_THREAD
    if (tsan_fiber)
        __tsan_destroy_fiber(tsan_fiber);
#else
    (void)tsan_fiber;
#endif
}

/* Valgrind: whether we run under it; asked once per thread. */
static inline bool vms__san_on_valgrind(void)
{
#ifdef VMS_SAN_VALGRIND
    return RUNNING_ON_VALGRIND != 0;
#else
    return false;
#endif
}

/*
 * Valgrind: [base, base + size) is a stack.  Returns the registration + 1
 * (valgrind's ids start at 0), so that 0 can mean "not registered".  The
 * end valgrind is given is base + size itself, as valgrind compares the
 * stack pointer with it inclusively: a fiber's first stack pointer is the
 * stack's top, and outside the stack valgrind would take the switch there
 * for a frame popped off the previous stack, and mark what lies between
 * the two (other fibers' stacks) inaccessible.
 */
static inline unsigned vms__san_stack_register(void *base, size_t size)
{
#ifdef VMS_SAN_VALGRIND
    return VALGRIND_STACK_REGISTER(base, (char *)base + size) + 1;
#else
    (void)base, (void)size;
    return 0;
#endif
}

/*
 * Valgrind: [addr, addr + size) may not be touched.  Guard markers
 * (MADV_GUARD_INSTALL) are invisible to valgrind, which takes the pages
 * for the read-write mapping they lie in: its leak check at exit would
 * read every word of every guard, a fault each, for minutes.
 */
static inline void vms__san_noaccess(void *addr, size_t size)
{
#ifdef VMS_SAN_VALGRIND
    VALGRIND_MAKE_MEM_NOACCESS(addr, size);
#else
    (void)addr, (void)size;
#endif
}

/*
 * Valgrind: [addr, addr + size) may be written, as fresh memory.  A stack
 * a fiber used is left inaccessible to memcheck below the stack pointer it
 * last had; glibc writes a thread's descriptor at the top of a stack it is
 * given without the stack pointer ever going there.
 */
static inline void vms__san_accessible(void *addr, size_t size)
{
#ifdef VMS_SAN_VALGRIND
    VALGRIND_MAKE_MEM_DEFINED(addr, size);
#else
    (void)addr, (void)size;
#endif
}

static inline void vms__san_stack_deregister(unsigned id)
{
#ifdef VMS_SAN_VALGRIND
    if (id)
        VALGRIND_STACK_DEREGISTER(id - 1);
#else
    (void)id;
#endif
}

/*
 * Valgrind: reads by this thread between the two calls deliberately touch
 * stack memory no frame owns (the usage scan) and are not errors.
 */
static inline void vms__san_quiet_begin(void)
{
#ifdef VMS_SAN_VALGRIND
    VALGRIND_DISABLE_ERROR_REPORTING;
#endif
}

static inline void vms__san_quiet_end(void)
{
#ifdef VMS_SAN_VALGRIND
    VALGRIND_ENABLE_ERROR_REPORTING;
#endif
}

#endif
