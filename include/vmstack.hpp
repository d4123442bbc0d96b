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
 * How a continuation is ended: resume() (and callcc, which runs it up to
 * its first suspension) marks a recovery point (setjmp) on the resuming
 * side and registers the stack's overflow handler (vms_stack_on_overflow).
 * On an overflow, after the report, the handler longjmps from the
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

    boost::context::stack_context allocate()
    {
        stack st(size_, name_);
        boost::context::stack_context sctx;

        sctx.size = st.size();
        sctx.sp = st.top();
        st.release();
        return sctx;
    }

    void deallocate(boost::context::stack_context &sctx) noexcept { vms_stack_free_sp(sctx.sp); }

private:
    std::size_t size_;
    const char *name_;
};

namespace detail {

/* A continuation's recovery point, kept off its stack. */
struct guard {
    std::jmp_buf recover;
    bool armed = false;
    bool overflowed = false;
    vms_stack st{};
};

/* Called by vmstack on the alternate stack after the report; leaves for the recovery point. */
inline void end_continuation(const vms_overflow *, void *arg)
{
    guard *g = static_cast<guard *>(arg);

    if (g->armed)
        std::longjmp(g->recover, 1);
}

/* stack_allocator that also sets the stack's handler up and tells the guard which stack it is. */
class guarded_allocator {
public:
    guarded_allocator(guard *g, std::size_t size, const char *name) noexcept : g_(g), inner_(size, name) {}

    boost::context::stack_context allocate()
    {
        boost::context::stack_context sctx = inner_.allocate();
        vms_stack st;

        vms_on_stack(static_cast<char *>(sctx.sp) - 1, &st);
        vms_stack_on_overflow(&st, end_continuation, g_);
        g_->st = st;
        return sctx;
    }

    void deallocate(boost::context::stack_context &sctx) noexcept
    {
        g_->st = vms_stack{};
        inner_.deallocate(sctx);
    }

private:
    guard *g_;
    stack_allocator inner_;
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
    continuation() = default;
    continuation(continuation &&) noexcept = default;
    continuation &operator=(continuation &&o) noexcept
    {
        if (this != &o) {
            drop();
            g_ = std::move(o.g_);
            c_ = std::move(o.c_);
        }
        return *this;
    }
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
    bool overflowed() const noexcept { return g_ && g_->overflowed; }

private:
    template <typename Fn>
    friend continuation callcc(const char *name, Fn &&fn, std::size_t size);

    /* The overflow report needs the resuming thread's alternate signal stack. */
    static void attach()
    {
        if (int rc = vms_thread_attach())
            throw error(rc);
    }

    /*
     * Runs step (which switches into the continuation) behind a recovery
     * point.  Nothing with a destructor lives between the setjmp and the
     * switch, so the longjmp skips no destructor of this side.
     */
    template <typename Step>
    void guarded(Step &&step)
    {
        detail::guard *const g = g_.get();

        if (setjmp(g->recover) == 0) {
            g->armed = true;
            try {
                step();
            } catch (...) {
                g->armed = false;
                throw;
            }
            g->armed = false;
            return;
        }
        /* Back from the overflow handler: the continuation's frames are gone. */
        g->armed = false;
        g->overflowed = true;
        vms_stack_free(&g->st);
        g->st = vms_stack{};
    }

    /* Boost unwinds a suspended continuation on its own stack: guarded too. */
    void drop() noexcept
    {
        if (c_) {
            vms_thread_attach(); /* should it fail, an overflow while unwinding kills unreported */
            guarded([this] { c_ = boost::context::continuation(); });
        }
    }

    /* Declared before c_, so that c_ (whose end may free the stack through g_) goes first. */
    std::unique_ptr<detail::guard> g_;
    boost::context::continuation c_;
};

/*
 * boost::context::callcc(fn) on a new vmstack stack of at least size bytes
 * (0: the default) named name: runs fn until it first suspends, and
 * returns the continuation to resume.  fn is Boost's: it takes the
 * continuation to suspend to (boost::context::continuation &&) and returns
 * the one to go to when it ends.  Throws vmstack::error when no stack can
 * be had.
 */
template <typename Fn>
continuation callcc(const char *name, Fn &&fn, std::size_t size)
{
    continuation k;

    k.g_.reset(new detail::guard());
    detail::guard *g = k.g_.get();
    continuation::attach();
    k.guarded([&] {
        k.c_ = boost::context::callcc(std::allocator_arg, detail::guarded_allocator(g, size, name),
                                      std::forward<Fn>(fn));
    });
    return k;
}

} // namespace vmstack

#endif /* Boost.Context */
#endif
