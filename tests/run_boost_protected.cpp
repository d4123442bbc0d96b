// SPDX-License-Identifier: MIT
// A Boost.Context fiber on Boost's own protected_fixedsize_stack (a guard
// page of Boost's) recursing until it overflows (test_run.sh, case
// unmanaged): plain, death by SIGSEGV; under 'vmstack run', the same
// death after a report that names a stack vmstack does not manage.
#include <boost/context/fiber.hpp>
#include <boost/context/protected_fixedsize_stack.hpp>
#include <cstdio>
#include <cstring>

namespace ctx = boost::context;

__attribute__((noinline)) static unsigned long down(unsigned long n)
{
    volatile char frame[512];

    std::memset(const_cast<char *>(frame), static_cast<int>(n), sizeof frame);
    return n ? down(n - 1) + static_cast<unsigned long>(frame[n % sizeof frame]) : 0;
}

int main()
{
    ctx::fiber f{std::allocator_arg, ctx::protected_fixedsize_stack(64 * 1024), [](ctx::fiber &&caller) {
                     std::printf("%lu\n", down(1000000));
                     return std::move(caller);
                 }};
    std::puts("into the fiber");
    std::fflush(stdout);
    f = std::move(f).resume();
    return 0;
}
