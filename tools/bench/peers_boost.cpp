// SPDX-License-Identifier: MIT
/*
 * The Boost.Context side of 'vmstack bench peers': what a C++ runtime
 * author would write with Boost, built -O2 -DNDEBUG as a user builds it.
 * Only the vmstack command links it (when CMake finds Boost.Context); the
 * library itself stays C.  Each function times iters operations and
 * returns the elapsed nanoseconds; bench_peers.c does the rest.
 */
#include "peers_boost.h"

#include <boost/context/continuation.hpp>
#include <boost/context/detail/fcontext.hpp>
#include <boost/context/fixedsize_stack.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>

#include <cstring>
#include <ctime>
#include <utility>

namespace ctx = boost::context;

static double now_ns()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The same body as vmstack's fibers run: PEERS_TOUCH bytes of stack written. */
template <class Alloc> static double spawn(Alloc &&salloc, long iters)
{
    double t0 = now_ns();

    for (long i = 0; i < iters; i++) {
        ctx::continuation c = ctx::callcc(std::allocator_arg, salloc, [i](ctx::continuation &&sink) {
            char buf[PEERS_TOUCH];
            std::memset(buf, (int)i, sizeof buf);
            __asm__ volatile("" : : "r"(buf) : "memory");
            return std::move(sink);
        });
        (void)c;
    }
    return now_ns() - t0;
}

extern "C" double peers_boost_spawn(enum peers_boost_stack kind, long iters)
{
    switch (kind) {
    case PEERS_FIXEDSIZE:
        return spawn(ctx::fixedsize_stack(PEERS_STACK), iters);
    case PEERS_POOLED: {
        /* One pool for the whole run, as a user keeps it. */
        static ctx::pooled_fixedsize_stack pool(PEERS_STACK);
        return spawn(pool, iters);
    }
    case PEERS_PROTECTED:
        return spawn(ctx::protected_fixedsize_stack(PEERS_STACK), iters);
    }
    return -1;
}

/* The other side of the ping-pong: jumps back as often as it is jumped to. */
static void pong(ctx::detail::transfer_t t)
{
    for (;;)
        t = ctx::detail::jump_fcontext(t.fctx, nullptr);
}

extern "C" double peers_boost_switch(long iters)
{
    static char stack[PEERS_STACK] __attribute__((aligned(64)));
    ctx::detail::fcontext_t other = ctx::detail::make_fcontext(stack + sizeof stack, sizeof stack, pong);
    double t0 = now_ns();

    /* Two switches per round, there and back. */
    for (long i = 0; i < iters / 2; i++)
        other = ctx::detail::jump_fcontext(other, nullptr).fctx;
    return now_ns() - t0;
}
