// SPDX-License-Identifier: MIT
/*
 * The C++ paths of 'vmstack bench instructions', vmstack's and the peer's
 * side by side, built -O2 -DNDEBUG as a user builds them: Boost.Fiber
 * spawn + join on vmstack::stack_allocator and on Boost's
 * pooled_fixedsize_stack; vmstack::callcc against boost::context::callcc
 * on a pooled stack; vmstack::continuation::resume against a raw resume.
 * Each function runs iters operations and nothing else, so that callgrind,
 * collecting only around the call, counts the operations alone.  Part of
 * the vmstack-peers.so module; its vms_* calls resolve against the vmstack
 * command that opens it.
 */
#include "peers_boost.h"

#include "vmstack.hpp"

#include <boost/context/continuation.hpp>
#include <boost/context/pooled_fixedsize_stack.hpp>
#ifdef VMS_HAVE_BOOST_FIBER
#include <boost/fiber/fiber.hpp>
#include <boost/fiber/pooled_fixedsize_stack.hpp>
#endif

#include <utility>

namespace ctx = boost::context;

/* vmstack.hpp's calls, forwarded to the command's vmstack (see peers_boost.h). */
static peers_vms_api vms;

extern "C" void peers_instr_init(const peers_vms_api *api)
{
    vms = *api;
}

extern "C" {
const char *vms_last_error(void)
{
    return vms.last_error();
}
int vms_on_stack(const void *ptr, vms_stack *st)
{
    return vms.on_stack(ptr, st);
}
int vms_stack_alloc(vms_stack *st, size_t size)
{
    return vms.stack_alloc(st, size);
}
int vms_stack_free(vms_stack *st)
{
    return vms.stack_free(st);
}
int vms_stack_free_sp(void *addr)
{
    return vms.stack_free_sp(addr);
}
int vms_stack_set_name(const vms_stack *st, const char *name)
{
    return vms.stack_set_name(st, name);
}
int vms_stack_on_overflow(const vms_stack *st, vms_stack_overflow_fn fn, void *arg)
{
    return vms.stack_on_overflow(st, fn, arg);
}
int vms_thread_attach(void)
{
    return vms.thread_attach();
}
int vms_stack_alloc_opts(vms_stack *st, const vms_stack_opts *opts)
{
    return vms.stack_alloc_opts(st, opts);
}
}

/* One pool for the whole run, as a user keeps it. */
static ctx::pooled_fixedsize_stack &pool()
{
    static ctx::pooled_fixedsize_stack p(PEERS_STACK);
    return p;
}

static ctx::continuation empty_body(ctx::continuation &&sink)
{
    return std::move(sink);
}

/* Suspends for ever: the other side of a resume ping-pong. */
static ctx::continuation echo_body(ctx::continuation &&sink)
{
    for (;;)
        sink = std::move(sink).resume();
}

extern "C" int peers_instr_callcc(int vmstack_side, long iters)
{
    if (vmstack_side)
        for (long i = 0; i < iters; i++)
            vmstack::callcc("c", empty_body, PEERS_STACK);
    else
        for (long i = 0; i < iters; i++)
            ctx::callcc(std::allocator_arg, pool(), empty_body);
    return 0;
}

/* The continuations stay suspended between calls: only the resumes are counted. */
extern "C" int peers_instr_resume(int vmstack_side, long iters)
{
    if (vmstack_side) {
        static vmstack::continuation c = vmstack::callcc("r", echo_body, PEERS_STACK);
        for (long i = 0; i < iters; i++)
            c.resume();
    } else {
        static ctx::continuation c = ctx::callcc(std::allocator_arg, pool(), echo_body);
        for (long i = 0; i < iters; i++)
            c = std::move(c).resume();
    }
    return 0;
}

extern "C" int peers_instr_fiber(int vmstack_side, long iters)
{
#ifdef VMS_HAVE_BOOST_FIBER
    static boost::fibers::pooled_fixedsize_stack fpool(PEERS_STACK);
    vmstack::stack_allocator valloc(PEERS_STACK);

    for (long i = 0; i < iters; i++) {
        if (vmstack_side) {
            boost::fibers::fiber f(std::allocator_arg, valloc, [] {});
            f.join();
        } else {
            boost::fibers::fiber f(std::allocator_arg, fpool, [] {});
            f.join();
        }
    }
    return 0;
#else
    (void)vmstack_side;
    (void)iters;
    return -1;
#endif
}
