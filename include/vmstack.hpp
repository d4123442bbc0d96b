// SPDX-License-Identifier: MIT
/*
 * vmstack for C++11 and later: header-only, optional, on top of vmstack.h.
 *
 *   vmstack::stack            a guarded stack, freed when the object goes
 *   vmstack::error            what the calls throw: the errno value and the
 *                             sentence of vms_last_error()
 *
 * With Boost.Context (found with __has_include; define VMSTACK_NO_BOOST to
 * leave it out; link with -lboost_context):
 *
 *   vmstack::stack_allocator  Boost.Context's StackAllocator: allocate()
 *                             gives a stack_context on a vmstack stack,
 *                             deallocate() frees it by its address
 *   vmstack::fiber_stack_allocator  (with Boost.Fiber's headers; link
 *                             -lboost_fiber) Boost.Fiber's StackAllocator:
 *                             an overflow in a fiber ends that fiber alone
 *   vmstack::callcc           boost::context::callcc on a named vmstack
 *                             stack, returning a vmstack::continuation: an
 *                             overflow in it gives the report with its
 *                             name and ends only that continuation
 *
 *     auto c = vmstack::callcc("parser", [](boost::context::continuation &&sink) {
 *         for (;;) { ...; sink = sink.resume(); }
 *         return std::move(sink);
 *     });
 *     while (c.resume()) { ... }      // false once it returned or overflowed
 *     if (c.overflowed()) { ... }     // it was ended by a stack overflow
 *
 * How a continuation is ended: callcc gives its stack an overflow handler
 * (vms_stack_alloc_opts) and keeps the recovery point in the top (at most) 256
 * bytes of the stack itself, above Boost's record, where an overflow (which
 * runs down into the guard below the stack) cannot reach it: no heap
 * allocation per continuation.  resume() (and callcc, which runs it up to
 * its first suspension) marks the recovery point (setjmp) on the resuming
 * side.  On an overflow, after the report, the handler longjmps from the
 * alternate signal stack back to that point; the continuation is then
 * empty, its stack freed, and resume() returns false.
 *
 * What such an end cannot undo (as for any kill, see vmstack.h): the
 * continuation's frames are abandoned, not unwound.  No destructor of
 * theirs runs, also not those of the function object callcc was given,
 * which Boost keeps on the continuation's stack; locks stay held, memory
 * stays allocated.  An overflow while the continuation was resumed other
 * than through vmstack::continuation::resume (for example by another
 * continuation switching to it directly) has no recovery point: vmstack
 * reports that its handler returned, and aborts.
 *
 * Every call that runs a continuation first makes the calling thread
 * report-ready (vms_thread_attach), so that work-stealing workers need no
 * set-up of their own.
 */
#ifndef VMSTACK_HPP
#define VMSTACK_HPP

#include "vmstack.h"

#include <csetjmp>
#include <cstddef>
#include <memory>
#include <system_error>
#include <utility>

namespace vmstack {

/* A failed vmstack call: code() is the errno value, what() vms_last_error(). */
class error : public std::system_error {
public:
    explicit error(int negative_errno)
        : std::system_error(-negative_errno, std::generic_category(), vms_last_error())
    {
    }
};

/* A guarded stack of at least size bytes (0: the default), freed by the destructor. */
class stack {
public:
    explicit stack(std::size_t size = 0, const char *name = nullptr)
    {
        int rc = vms_stack_alloc(&st_, size);

        if (rc)
            throw error(rc);
        if (name && (rc = vms_stack_set_name(&st_, name))) {
            vms_stack_free(&st_);
            throw error(rc);
        }
    }
    stack(stack &&o) noexcept : st_(take(o.st_)) {}
    stack &operator=(stack &&o) noexcept
    {
        if (this != &o) {
            reset();
            st_ = take(o.st_);
        }
        return *this;
    }
    stack(const stack &) = delete;
    stack &operator=(const stack &) = delete;
    ~stack() { reset(); }

    void *base() const noexcept { return st_.base; }
    void *top() const noexcept { return vms_stack_top(&st_); }
    std::size_t size() const noexcept { return st_.size; }
    const vms_stack &handle() const noexcept { return st_; }
    explicit operator bool() const noexcept { return st_.base != nullptr; }

    /* The name in overflow reports (vms_stack_set_name). */
    void set_name(const char *name)
    {
        if (int rc = vms_stack_set_name(&st_, name))
            throw error(rc);
    }
    /* The stack's overflow handler (vms_stack_on_overflow). */
    void on_overflow(vms_stack_overflow_fn fn, void *arg)
    {
        if (int rc = vms_stack_on_overflow(&st_, fn, arg))
            throw error(rc);
    }
    /* Gives the stack up without freeing it; free it with vms_stack_free(_sp). */
    vms_stack release() noexcept { return take(st_); }

private:
    /* std::exchange(st, vms_stack{}), which C++11 lacks. */
    static vms_stack take(vms_stack &st) noexcept
    {
        vms_stack old = st;

        st = vms_stack();
        return old;
    }
    void reset() noexcept
    {
        if (st_.base)
            vms_stack_free(&st_);
        st_ = vms_stack{};
    }
    vms_stack st_{};
};

} // namespace vmstack

#if !defined(VMSTACK_NO_BOOST) && __has_include(<boost/context/continuation.hpp>)
#include <boost/context/continuation.hpp>
#include <boost/context/stack_context.hpp>

namespace vmstack {

namespace detail {

/* A Boost stack_context on a new vmstack stack made as o says; throws vmstack::error. */
inline boost::context::stack_context stack_context_of(const vms_stack_opts &o)
{
    vms_stack st;
    boost::context::stack_context sctx;

    if (int rc = vms_stack_alloc_opts(&st, &o))
        throw error(rc);
    sctx.size = st.size;
    sctx.sp = vms_stack_top(&st);
    return sctx;
}

} // namespace detail

/*
 * Boost.Context's StackAllocator on vmstack stacks of at least size bytes
 * (0: the default), each named name (may be NULL) in overflow reports.
 * Copyable, as Boost wants; allocate() throws vmstack::error.
 */
class stack_allocator {
public:
    explicit stack_allocator(std::size_t size = 0, const char *name = nullptr) noexcept
        : size_(size), name_(name)
    {
    }

    /*
     * The stack has no overflow handler: Boost.Context's own callcc and
     * fiber keep nothing to go back to that vmstack could end one of their
     * coroutines through.  So an overflow aborts, and the report's last
     * line says this and what can end one alone.
     */
    boost::context::stack_context allocate()
    {
        vms_stack_opts o = vms_stack_opts();

        o.size = size_;
        o.name = name_;
        o.abort_reason = "vmstack::stack_allocator's stacks have no overflow handler: Boost.Context cannot end "
                         "one coroutine alone on them (vmstack::callcc can, and vmstack::fiber_stack_allocator "
                         "for Boost.Fiber)";
        return detail::stack_context_of(o);
    }

    void deallocate(boost::context::stack_context &sctx) noexcept { vms_stack_free_sp(sctx.sp); }

private:
    std::size_t size_;
    const char *name_;
};

namespace detail {

/*
 * The recovery point is marked on every resume.  GCC's __builtin_setjmp
 * saves three words where setjmp saves every callee-saved register and
 * calls out to say no signal mask was saved: the compiler makes the code
 * after it reload what it needs instead.  Neither saves the signal mask.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define VMSTACK_BUILTIN_SETJMP 1
#else
#define VMSTACK_BUILTIN_SETJMP 0
#endif

/*
 * A continuation's recovery point, kept at the very top of its own stack,
 * above the record Boost keeps there: out of an overflow's reach (an
 * overflow runs down into the guard below the stack), freed with the
 * stack, and no heap allocation per continuation.
 */
struct guard {
#if VMSTACK_BUILTIN_SETJMP
    void *recover[5]; /* __builtin_setjmp's: frame, resume address, stack pointer */
#else
    std::jmp_buf recover;
#endif
    bool armed;
    vms_stack st;
};

/* Bytes taken from a stack's top for its guard; the stack pointer below stays 64-byte aligned. */
static const std::size_t guard_room = (sizeof(guard) + 63) & ~static_cast<std::size_t>(63);

/* The guard of a stack whose usable bytes end at top. */
inline guard *guard_below(void *top)
{
    return static_cast<guard *>(static_cast<void *>(static_cast<char *>(top) - guard_room));
}

/* Called by vmstack on the alternate stack after the report; leaves for the recovery point. */
inline void end_continuation(const vms_overflow *ov, void *)
{
    guard *g = guard_below(ov->stack_hi);

    if (g->armed) {
#if VMSTACK_BUILTIN_SETJMP
        __builtin_longjmp(g->recover, 1);
#else
        std::longjmp(g->recover, 1);
#endif
    }
}

/*
 * A named stack with its guard at the top and its overflow handler set,
 * in one call that writes the stack's record once: the handler finds the
 * guard from the stack's top, so it needs no argument known only after
 * the allocation.
 */
inline guard *guarded_stack(std::size_t size, const char *name)
{
    vms_stack_opts o = vms_stack_opts();
    vms_stack st;

    o.size = size;
    o.name = name;
    o.on_overflow = end_continuation;
    if (int rc = vms_stack_alloc_opts(&st, &o))
        throw error(rc);
    guard *g = guard_below(vms_stack_top(&st));
    g->armed = false;
    g->st = st;
    return g;
}

/* Boost's StackAllocator for one continuation: hands out the stack below g, once. */
class guarded_allocator {
public:
    explicit guarded_allocator(guard *g) noexcept : g_(g) {}

    boost::context::stack_context allocate()
    {
        boost::context::stack_context sctx;

        sctx.size = g_->st.size - guard_room;
        sctx.sp = g_;
        return sctx;
    }

    /* By its handle, read before the stack goes: no lookup of the address. */
    void deallocate(boost::context::stack_context &sctx) noexcept
    {
        vms_stack st = static_cast<guard *>(sctx.sp)->st;

        vms_stack_free(&st);
    }

private:
    guard *g_;
};

} // namespace detail

class continuation;
template <typename Fn>
continuation callcc(const char *name, Fn &&fn, std::size_t size = 0);

/*
 * A Boost continuation on a vmstack stack that an overflow ends alone.
 * Move-only; destroying one that is suspended unwinds it as Boost does.
 */
class continuation {
public:
    continuation() noexcept : g_(nullptr), overflowed_(false) {}
    continuation(continuation &&o) noexcept : g_(o.g_), c_(std::move(o.c_)), overflowed_(o.overflowed_)
    {
        o.g_ = nullptr;
    }
    continuation &operator=(continuation &&o) noexcept
    {
        if (this != &o) {
            drop();
            g_ = o.g_;
            o.g_ = nullptr;
            c_ = std::move(o.c_);
            overflowed_ = o.overflowed_;
        }
        return *this;
    }
    continuation(const continuation &) = delete;
    continuation &operator=(const continuation &) = delete;
    ~continuation() { drop(); }

    /* Runs it until it suspends (true) or ends: returned, or overflowed (false). */
    bool resume()
    {
        if (c_) {
            attach();
            guarded([this] { c_ = std::move(c_).resume(); });
        }
        return static_cast<bool>(c_);
    }
    /* Whether it can be resumed. */
    explicit operator bool() const noexcept { return static_cast<bool>(c_); }
    /* Whether a stack overflow ended it. */
    bool overflowed() const noexcept { return overflowed_; }

private:
    template <typename Fn>
    friend continuation callcc(const char *name, Fn &&fn, std::size_t size);

    /* The overflow report needs the resuming thread's alternate signal stack. */
    static void attach()
    {
        if (int rc = vms_thread_attach())
            throw error(rc);
    }

    /* After a step: a continuation that ended has no stack, so no guard, left. */
    void settle() noexcept
    {
        if (c_)
            g_->armed = false;
        else
            g_ = nullptr;
    }

    /*
     * Runs step (which switches into the continuation) behind a recovery
     * point.  Nothing with a destructor lives between the setjmp and the
     * switch, so the longjmp skips no destructor of this side.
     */
    template <typename Step>
    void guarded(Step &&step)
    {
        detail::guard *const g = g_;

#if VMSTACK_BUILTIN_SETJMP
        if (__builtin_setjmp(g->recover) == 0) {
#else
        if (setjmp(g->recover) == 0) {
#endif
            g->armed = true;
            try {
                step();
            } catch (...) {
                settle();
                throw;
            }
            settle();
            return;
        }
        /* Back from the overflow handler: the continuation's frames are gone; c_ was emptied as it left. */
        vms_stack st = g->st;

        g_ = nullptr;
        overflowed_ = true;
        vms_stack_free(&st);
    }

    /* Boost unwinds a suspended continuation on its own stack: guarded too. */
    void drop() noexcept
    {
        if (c_) {
            vms_thread_attach(); /* should it fail, an overflow while unwinding kills unreported */
            guarded([this] { c_ = boost::context::continuation(); });
        }
    }

    detail::guard *g_;
    boost::context::continuation c_;
    bool overflowed_;
};

/*
 * boost::context::callcc(fn) on a new vmstack stack of at least size bytes
 * (0: the default) named name: runs fn until it first suspends, and
 * returns the continuation to resume.  fn is Boost's: it takes the
 * continuation to suspend to (boost::context::continuation &&) and returns
 * the one to go to when it ends.  The top (at most) 256 bytes of the stack hold the
 * continuation's recovery point.  Throws vmstack::error when no stack can
 * be had.
 */
template <typename Fn>
continuation callcc(const char *name, Fn &&fn, std::size_t size)
{
    continuation k;

    continuation::attach();
    k.g_ = detail::guarded_stack(size, name);
    k.guarded([&] {
        k.c_ = boost::context::callcc(std::allocator_arg, detail::guarded_allocator(k.g_), std::forward<Fn>(fn));
    });
    return k;
}

} // namespace vmstack

#endif /* Boost.Context */

#if !defined(VMSTACK_NO_BOOST) && __has_include(<boost/fiber/context.hpp>)
#include <boost/fiber/context.hpp>

#include <new>

namespace vmstack {

namespace detail {

/*
 * Ends the Boost.Fiber fiber that overflowed, as its own return would:
 * called by vmstack on the fiber's own stack, below the frame of Boost's
 * trampoline (vms_stack_opts.handler_on_stack), where Boost.Fiber's record
 * of the fiber at the stack's top is intact.  terminate() marks the fiber
 * ended, wakes its joiners and switches away; it comes back once the last
 * reference to the fiber is dropped, from the code that drops it, which
 * then expects the stack to be given back and an empty fiber back, as
 * Boost.Context's own exit does.  The fiber's handle there is kept, never
 * destroyed: destroying it would unwind the fiber again.
 */
inline void end_boost_fiber(const vms_overflow *ov, void *)
{
    void *top = ov->stack_hi;
    boost::context::fiber releaser = boost::fibers::context::active()->terminate();

    std::move(releaser).resume_with([top](boost::context::fiber &&ended) {
        alignas(boost::context::fiber) static unsigned char kept[sizeof(boost::context::fiber)];

        new (kept) boost::context::fiber(std::move(ended));
        vms_stack_free_sp(top);
        return boost::context::fiber();
    });
}

} // namespace detail

/*
 * Boost.Fiber's StackAllocator on vmstack stacks of at least size bytes
 * (0: the default), named name (may be NULL): an overflow in a fiber ends
 * that fiber alone, as if it had returned (its joiners wake; join() does
 * not say how it ended: vms_stats.overflows and the report do), and the
 * scheduler goes on.  Only for Boost.Fiber's fibers (link -lboost_fiber);
 * what the kill cannot undo is as for any (vmstack.h): the fiber's frames
 * are abandoned, their destructors do not run, a promise it would have
 * kept stays unkept.  The kill is refused (abort) when the chain holds a
 * frame of libboost_fiber or of Boost.Fiber's own inline code, which may
 * hold a scheduler or channel lock other fibers need.
 */
class fiber_stack_allocator {
public:
    explicit fiber_stack_allocator(std::size_t size = 0, const char *name = nullptr) noexcept
        : size_(size), name_(name)
    {
    }

    boost::context::stack_context allocate()
    {
        vms_stack_opts o = vms_stack_opts();

        o.size = size_;
        o.name = name_;
        o.on_overflow = detail::end_boost_fiber;
        o.handler_on_stack = 1;
        return detail::stack_context_of(o);
    }

    void deallocate(boost::context::stack_context &sctx) noexcept { vms_stack_free_sp(sctx.sp); }

private:
    std::size_t size_;
    const char *name_;
};

} // namespace vmstack

#endif /* Boost.Fiber */
#endif
