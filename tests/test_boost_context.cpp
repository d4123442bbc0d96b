// SPDX-License-Identifier: MIT
// Boost.Context's two interfaces, callcc/continuation and fiber, with every
// stack from vmstack::stack_allocator: the behaviours Boost.Context's own
// test_callcc and test_fiber check, written anew.  Each case runs for both
// interfaces (argv[1]: callcc or fiber; argv[2]: the case, or all):
//   move          a suspended context moved between handles resumes from
//                 the new one; the old one is empty
//   bind          the context function is a bound callable with arguments
//   exception     an exception thrown and caught inside the context
//   fp            floating-point values and the rounding mode survive switches
//   stacked       a context started from inside another, both on vmstack stacks
//   prealloc      Boost's record in a stack given as preallocated
//   ontop         resume_with runs a function on top of the resumed context
//   ontop_throw   an exception thrown by that function reaches the context
//   unwind        destroying a suspended context unwinds it: destructors run,
//                 and its stack is freed
//   libc          sscanf and snprintf on a context's stack
//   deep          a recursion about 24 KiB deep on a 64 KiB stack
#include "vmstack.hpp"
#include "check.hpp"

#include <boost/context/continuation.hpp>
#include <boost/context/fiber.hpp>

#include <cfenv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>

namespace ctx = boost::context;

static bool on_vmstack()
{
    char here = 0;

    return vms_on_stack(&here, nullptr) == 1;
}

/*
 * The two interfaces behind one face: K is the context type, start()
 * makes one on a vmstack stack and runs it to its first suspension (callcc)
 * or not at all (fiber, which starts on its first resume).
 */
struct callcc_api {
    using K = ctx::continuation;
    static const bool starts_at_once = true;
    template <typename Fn> static K start(Fn &&fn)
    {
        return ctx::callcc(std::allocator_arg, vmstack::stack_allocator(64 << 10), std::forward<Fn>(fn));
    }
    template <typename Fn> static K start_prealloc(ctx::preallocated p, Fn &&fn)
    {
        return ctx::callcc(std::allocator_arg, p, vmstack::stack_allocator(), std::forward<Fn>(fn));
    }
};

struct fiber_api {
    using K = ctx::fiber;
    static const bool starts_at_once = false;
    template <typename Fn> static K start(Fn &&fn)
    {
        return K(std::allocator_arg, vmstack::stack_allocator(64 << 10), std::forward<Fn>(fn));
    }
    template <typename Fn> static K start_prealloc(ctx::preallocated p, Fn &&fn)
    {
        return K(std::allocator_arg, p, vmstack::stack_allocator(), std::forward<Fn>(fn));
    }
};

/* Runs a context that has not started yet up to its first suspension. */
template <typename A> static typename A::K first(typename A::K &&k)
{
    return A::starts_at_once ? std::move(k) : std::move(k).resume();
}

template <typename A> static void move_case()
{
    using K = typename A::K;
    int value = 0;
    K k1 = first<A>(A::start([&value](K &&back) {
        value = 1;
        back = std::move(back).resume();
        value = 2;
        return std::move(back);
    }));
    CHECK(value == 1 && k1);
    K k2 = std::move(k1);
    CHECK(!k1 && k2);
    k2 = std::move(k2).resume();
    CHECK(value == 2 && !k2);
}

template <typename A> static void bind_case()
{
    using K = typename A::K;
    int out = 0;
    auto body = [](K &&back, int *o, int a, int b) {
        *o = a + b;
        return std::move(back);
    };
    K k = first<A>(A::start(std::bind(body, std::placeholders::_1, &out, 40, 2)));
    CHECK(!k && out == 42);
}

template <typename A> static void exception_case()
{
    using K = typename A::K;
    std::string what;
    K k = first<A>(A::start([&what](K &&back) {
        try {
            throw std::runtime_error("inside");
        } catch (const std::runtime_error &e) {
            what = e.what();
        }
        return std::move(back);
    }));
    CHECK(!k && what == "inside");
}

template <typename A> static void fp_case()
{
    using K = typename A::K;
    volatile double x = 1.25;
    double seen = 0;
    int mode = -1;

    std::fesetround(FE_UPWARD);
    K k = first<A>(A::start([&](K &&back) {
        mode = std::fegetround();
        seen = std::sqrt(x) * 2.0;
        back = std::move(back).resume();
        seen += 0.5;
        return std::move(back);
    }));
    CHECK(mode == FE_UPWARD);
    CHECK(std::fabs(seen - std::sqrt(1.25) * 2.0) < 1e-12);
    std::fesetround(FE_TONEAREST);
    k = std::move(k).resume();
    CHECK(!k && std::fabs(seen - (std::sqrt(1.25) * 2.0 + 0.5)) < 1e-12);
}

template <typename A> static void stacked_case()
{
    using K = typename A::K;
    int inner = 0, outer = 0;
    K k = first<A>(A::start([&](K &&back) {
        outer = on_vmstack();
        K in = first<A>(A::start([&](K &&b2) {
            inner = on_vmstack() + 1;
            return std::move(b2);
        }));
        CHECK(!in);
        return std::move(back);
    }));
    CHECK(!k && outer == 1 && inner == 2);
}

template <typename A> static void prealloc_case()
{
    using K = typename A::K;
    const std::size_t before = live_stacks();
    vmstack::stack_allocator alloc(64 << 10);
    ctx::stack_context sctx = alloc.allocate();
    /* Boost's record in the top 256 bytes of the stack, the context below it. */
    void *sp = static_cast<char *>(sctx.sp) - 256;
    int ran = 0;
    K k = first<A>(A::start_prealloc(ctx::preallocated(sp, sctx.size - 256, sctx), [&ran](K &&back) {
        ran = on_vmstack();
        return std::move(back);
    }));
    CHECK(!k && ran == 1);
    CHECK(live_stacks() == before); /* freed through the allocator, by its address */
}

template <typename A> static void ontop_case()
{
    using K = typename A::K;
    int step = 0, ontop_saw = 0;
    K k = first<A>(A::start([&](K &&back) {
        step = 1;
        back = std::move(back).resume();
        step = 3;
        return std::move(back);
    }));
    CHECK(step == 1);
    k = std::move(k).resume_with([&](K &&back) {
        ontop_saw = step; /* runs before the context goes on */
        step = 2;
        return std::move(back);
    });
    CHECK(!k && ontop_saw == 1 && step == 3);
}

/* What the function on top throws: it carries the context to go back to. */
template <typename K> struct carried {
    K back;
    std::string what;
};

template <typename A> static void ontop_throw_case()
{
    using K = typename A::K;
    std::string caught;
    K k = first<A>(A::start([&caught](K &&back) {
        try {
            back = std::move(back).resume();
        } catch (carried<K> &e) {
            caught = e.what;
            back = std::move(e.back);
        }
        return std::move(back);
    }));
    k = std::move(k).resume_with([](K &&back) -> K { throw carried<K>{ std::move(back), "from on top" }; });
    CHECK(!k && caught == "from on top");
}

struct counted {
    int *n;
    explicit counted(int *p) : n(p) {}
    ~counted() { ++*n; }
};

template <typename A> static void unwind_case()
{
    using K = typename A::K;
    const std::size_t before = live_stacks();
    int destroyed = 0;
    {
        K k = first<A>(A::start([&destroyed](K &&back) {
            counted c(&destroyed);
            for (;;)
                back = std::move(back).resume();
            return std::move(back);
        }));
        CHECK(k && destroyed == 0);
        CHECK(live_stacks() == before + 1);
    }
    CHECK(destroyed == 1);
    CHECK(live_stacks() == before);
}

template <typename A> static void libc_case()
{
    using K = typename A::K;
    int a = 0, b = 0;
    char buf[64] = "";
    K k = first<A>(A::start([&](K &&back) {
        CHECK(std::sscanf("17 25", "%d %d", &a, &b) == 2);
        std::snprintf(buf, sizeof buf, "%d+%d=%.3f", a, b, (a + b) / 2.0);
        return std::move(back);
    }));
    CHECK(!k && a == 17 && b == 25 && std::strcmp(buf, "17+25=21.000") == 0);
}

static int descend(int n)
{
    volatile char frame[256];

    frame[0] = static_cast<char>(n);
    return n == 0 ? frame[0] : descend(n - 1) + 1 + frame[0] * 0;
}

template <typename A> static void deep_case()
{
    using K = typename A::K;
    int depth = 0;
    K k = first<A>(A::start([&depth](K &&back) {
        depth = descend(80); /* about 80 frames of over 256 bytes */
        return std::move(back);
    }));
    CHECK(!k && depth == 80);
}

template <typename A> static int run(const char *which)
{
    static const struct {
        const char *name;
        void (*fn)();
    } cases[] = {
        { "move", move_case<A> },           { "bind", bind_case<A> },         { "exception", exception_case<A> },
        { "fp", fp_case<A> },               { "stacked", stacked_case<A> },   { "prealloc", prealloc_case<A> },
        { "ontop", ontop_case<A> },         { "ontop_throw", ontop_throw_case<A> },
        { "unwind", unwind_case<A> },       { "libc", libc_case<A> },         { "deep", deep_case<A> },
    };
    int ran = 0;

    for (const auto &c : cases)
        if (!std::strcmp(which, "all") || !std::strcmp(which, c.name)) {
            c.fn();
            std::printf("ok: %s\n", c.name);
            ran++;
        }
    return ran;
}

int main(int argc, char **argv)
{
    const char *which = argc > 2 ? argv[2] : "all";
    int ran = 0;

    if (argc > 1 && !std::strcmp(argv[1], "callcc"))
        ran = run<callcc_api>(which);
    else if (argc > 1 && !std::strcmp(argv[1], "fiber"))
        ran = run<fiber_api>(which);
    if (!ran) {
        std::fprintf(stderr, "usage: test_boost_context callcc|fiber [CASE|all]\n");
        return 2;
    }
    return 0;
}
