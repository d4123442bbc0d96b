// SPDX-License-Identifier: MIT
// vmstack.hpp with Boost.Context, as a C++ program uses it:
//   many      10,000 live continuations at once, with vmstack::stack_allocator
//             given to boost::context::callcc directly and through
//             vmstack::callcc; every stack is freed once they end
//   overflow  100 continuations take turns; one of them overflows its
//             stack: the report names it and shows the demangled C++
//             function, only that continuation ends, the others finish
//             with the right results and the process lives on
//   worker    a continuation made on the main thread overflows while a
//             std::thread that never called vmstack resumes it (as a
//             work-stealing scheduler does): reported there, by name
//   raii      vmstack::stack frees its stack, moves, and throws on bad sizes
#include "vmstack.hpp"
#include "check.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <regex.h>
#include <string>
#include <thread>
#include <vector>

namespace ctx = boost::context;

static void many()
{
    const int n = 10000;
    std::vector<ctx::continuation> raw;
    std::vector<vmstack::continuation> guarded;
    long sum = 0;

    raw.reserve(n);
    for (int i = 0; i < n; i++)
        raw.push_back(ctx::callcc(std::allocator_arg, vmstack::stack_allocator(16 << 10), [i, &sum](ctx::continuation &&sink) {
            sink = sink.resume(); // suspended once: all n are live at the same time
            sum += i;
            return std::move(sink);
        }));
    for (int i = 0; i < n; i++)
        guarded.push_back(vmstack::callcc("many", [i, &sum](ctx::continuation &&sink) {
            sink = sink.resume();
            sum += i;
            return std::move(sink);
        }, 16 << 10));
    CHECK(live_stacks() == 2 * (std::size_t)n);
    for (auto &c : raw) {
        c = c.resume();
        CHECK(!c);
    }
    for (auto &c : guarded)
        CHECK(!c.resume() && !c.overflowed());
    CHECK(sum == 2L * n * (n - 1) / 2);
    CHECK(live_stacks() == 0);
}

// The report, captured as it is written (async-signal-safe: a copy into a fixed buffer).
static char report[1 << 16];
static std::size_t report_len;

static void capture(const char *text, std::size_t len, void *)
{
    if (len > sizeof report - report_len)
        len = sizeof report - report_len;
    std::memcpy(report + report_len, text, len);
    report_len += len;
}

namespace app {
// Recursion with a 256-byte frame, kept a real recursion by the volatile read after the call.
__attribute__((noinline, noclone)) long deep(long n)
{
    volatile char pad[256];

    pad[n & 255] = (char)n;
    if (n == 0)
        return 0;
    return deep(n - 1) + pad[n & 255];
}
} // namespace app

// Whether a whole line of text matches the extended regular expression re.
static bool has_line(const std::string &text, const char *re)
{
    std::string anchored = std::string("^") + re + "$";
    std::size_t pos = 0, end;
    regex_t r;
    bool found = false;

    CHECK(regcomp(&r, anchored.c_str(), REG_EXTENDED | REG_NOSUB) == 0);
    while (!found && (end = text.find('\n', pos)) != std::string::npos) {
        found = regexec(&r, text.substr(pos, end - pos).c_str(), 0, nullptr, 0) == 0;
        pos = end + 1;
    }
    regfree(&r);
    return found;
}

static void overflow()
{
    const int n = 100, victim = 37, turns = 3;
    std::vector<vmstack::continuation> cs;
    std::vector<long> got(n, 0);
    vms_stats s;

    vms_set_report_callback(capture, nullptr);
    for (int i = 0; i < n; i++) {
        std::string name = i == victim ? "victim" : "worker " + std::to_string(i);
        cs.push_back(vmstack::callcc(name.c_str(), [i, &got](ctx::continuation &&sink) {
            for (int t = 0; t < turns; t++) {
                got[i] += i + t;
                if (i == victim && t == 1)
                    got[i] += app::deep(1L << 40);
                sink = sink.resume();
            }
            return std::move(sink);
        }));
    }
    for (bool any = true; any;) {
        any = false;
        for (auto &c : cs)
            if (c)
                any |= c.resume();
    }
    for (int i = 0; i < n; i++) {
        CHECK(cs[i].overflowed() == (i == victim));
        CHECK(got[i] == (i == victim ? 2 * i + 1 : turns * i + turns * (turns - 1) / 2));
    }
    vms_set_report_fd(2);
    vms_stats_get(&s);
    CHECK(s.overflows == 1 && s.live == 0);
    std::string text(report, report_len);
    std::fwrite(report, 1, report_len, stderr);
    CHECK(has_line(text, "vmstack: BUG: stack guard page was hit at 0x[0-9a-f]+ \\(stack is 0x[0-9a-f]+\\.\\.0x[0-9a-f]+\\)"));
    CHECK(has_line(text, "vmstack: stack 'victim' on thread '[^']*' \\(tid [0-9]+\\)"));
    CHECK(has_line(text, "vmstack:  \\[<0x[0-9a-f]+>\\] app::deep\\(long\\)\\+0x[0-9a-f]+/0x[0-9a-f]+ \\[test_boost\\]( [^ ]+:[0-9]+)?"));
    CHECK(has_line(text, "vmstack: killed stack 'victim': its overflow handler ends the coroutine"));
    CHECK(text.find("_ZN3app4deep") == std::string::npos);
}

static void worker()
{
    long done = 0;
    auto c = vmstack::callcc("stolen", [&done](ctx::continuation &&sink) {
        sink = sink.resume();
        done = app::deep(1L << 40);
        return std::move(sink);
    });
    vmstack::continuation other = vmstack::callcc("stays", [&done](ctx::continuation &&sink) {
        sink = sink.resume();
        done += 1;
        return std::move(sink);
    });

    vms_set_report_callback(capture, nullptr);
    std::thread t([&c] {
        pthread_setname_np(pthread_self(), "thief");
        CHECK(!c.resume() && c.overflowed());
    });
    t.join();
    CHECK(!other.resume() && !other.overflowed() && done == 1);
    vms_set_report_fd(2);
    std::string text(report, report_len);
    std::fwrite(report, 1, report_len, stderr);
    CHECK(has_line(text, "vmstack: stack 'stolen' on thread 'thief' \\(tid [0-9]+\\)"));
    CHECK(has_line(text, "vmstack:  \\[<0x[0-9a-f]+>\\] app::deep\\(long\\)\\+0x[0-9a-f]+/0x[0-9a-f]+ \\[test_boost\\]( [^ ]+:[0-9]+)?"));
    CHECK(has_line(text, "vmstack: killed stack 'stolen': its overflow handler ends the coroutine"));
    CHECK(live_stacks() == 0);
}

static void raii()
{
    void *base;

    {
        vmstack::stack a(100000, "raii");
        CHECK(a.size() >= 100000 && vms_on_stack(a.base(), nullptr));
        base = a.base();
        vmstack::stack b(std::move(a));
        CHECK(!a && b.base() == base);
    }
    CHECK(!vms_on_stack(base, nullptr));
    try {
        vmstack::stack too_big((std::size_t)2 << 30);
        CHECK(!"a 2 GiB stack was made");
    } catch (const vmstack::error &e) {
        CHECK(e.code().value() == EINVAL && std::strstr(e.what(), "at most 1 GiB"));
    }
}

int main(int argc, char **argv)
{
    const std::string what = argc > 1 ? argv[1] : "";

    if (what == "many")
        many();
    else if (what == "overflow")
        overflow();
    else if (what == "worker")
        worker();
    else if (what == "raii")
        raii();
    else {
        std::fprintf(stderr, "usage: %s many|overflow|worker|raii\n", argv[0]);
        return 2;
    }
    std::printf("%s: ok\n", what.c_str());
    return 0;
}
