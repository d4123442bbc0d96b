// SPDX-License-Identifier: MIT
// Boost.Fiber with every fiber's stack from vmstack::stack_allocator, as a
// C++ program uses it; each case checks what Boost.Fiber promises:
//   join      200 fibers computing, joined in turn: every result is right,
//             every stack was a live vmstack stack of the asked size while
//             its fiber ran, and all of them are freed after the joins
//   yield     three fibers yielding take turns in the round-robin order
//   channel   a producer and a consumer fiber pass 10,000 values through a
//             bounded channel: all arrive, in order
//   mutex     fibers share a counter under a fiber mutex and wait on a
//             condition variable for their turn
//   future    fibers::async on a vmstack stack gives its value; an
//             exception thrown in the fiber comes out of future::get
//   detach    detached fibers run to their end without a join
//   overflow  one of five fibers overflows its stack from
//             vmstack::stack_allocator, which has no way to end it alone:
//             death by SIGSEGV after the report, whose last line says why
//   overflow_kill  the same on vmstack::fiber_stack_allocator: that fiber
//             alone is ended (its join returns), the other four finish,
//             every stack is freed
#include "vmstack.hpp"
#include "check.hpp"

#include <boost/fiber/all.hpp>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace fibers = boost::fibers;

static const std::size_t kStack = 32 << 10;

/* Whether the calling fiber runs on a live vmstack stack of at least kStack bytes. */
static bool on_vmstack()
{
    char here = 0;
    vms_stack st;

    return vms_on_stack(&here, &st) == 1 && st.size >= kStack;
}

static long fib(long n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static void join()
{
    const std::size_t before = live_stacks();
    std::vector<fibers::fiber> fs;
    std::vector<long> out(200, -1);
    int on_stack = 0;

    for (int i = 0; i < 200; i++)
        fs.emplace_back(std::allocator_arg, vmstack::stack_allocator(kStack), [i, &out, &on_stack] {
            on_stack += on_vmstack();
            boost::this_fiber::yield();
            out[i] = fib(i % 20);
        });
    CHECK(live_stacks() == before + 200);
    for (auto &f : fs)
        f.join();
    for (int i = 0; i < 200; i++)
        CHECK(out[i] == fib(i % 20));
    CHECK(on_stack == 200);
    fs.clear();
    CHECK(live_stacks() == before);
}

static void yield()
{
    std::string trace;
    auto turn = [&trace](char c) {
        for (int k = 0; k < 3; k++) {
            trace += c;
            boost::this_fiber::yield();
        }
    };
    fibers::fiber a(std::allocator_arg, vmstack::stack_allocator(kStack), turn, 'a');
    fibers::fiber b(std::allocator_arg, vmstack::stack_allocator(kStack), turn, 'b');
    fibers::fiber c(std::allocator_arg, vmstack::stack_allocator(kStack), turn, 'c');

    a.join();
    b.join();
    c.join();
    CHECK(trace == "abcabcabc");
}

static void channel()
{
    fibers::buffered_channel<int> ch(8);
    std::vector<int> got;

    fibers::fiber producer(std::allocator_arg, vmstack::stack_allocator(kStack), [&ch] {
        for (int i = 0; i < 10000; i++)
            CHECK(ch.push(i) == fibers::channel_op_status::success);
        ch.close();
    });
    fibers::fiber consumer(std::allocator_arg, vmstack::stack_allocator(kStack), [&ch, &got] {
        for (int v : ch)
            got.push_back(v);
    });
    producer.join();
    consumer.join();
    CHECK(got.size() == 10000);
    for (int i = 0; i < 10000; i++)
        CHECK(got[i] == i);
}

static void mutex()
{
    fibers::mutex m;
    fibers::condition_variable cv;
    int counter = 0, next = 0;
    std::vector<int> order;
    std::vector<fibers::fiber> fs;

    for (int id = 3; id >= 0; id--)
        fs.emplace_back(std::allocator_arg, vmstack::stack_allocator(kStack), [&, id] {
            for (int round = 0; round < 5; round++) {
                std::unique_lock<fibers::mutex> lk(m);
                cv.wait(lk, [&] { return next == id; });
                counter++;
                order.push_back(id);
                next = (next + 1) % 4;
                cv.notify_all();
            }
        });
    for (auto &f : fs)
        f.join();
    CHECK(counter == 20);
    for (std::size_t i = 0; i < order.size(); i++)
        CHECK(order[i] == static_cast<int>(i % 4));
}

static void future()
{
    fibers::future<long> ok = fibers::async(fibers::launch::post, std::allocator_arg,
                                            vmstack::stack_allocator(kStack), [] { return fib(15); });
    fibers::future<long> bad = fibers::async(fibers::launch::post, std::allocator_arg,
                                             vmstack::stack_allocator(kStack), []() -> long {
                                                 throw std::runtime_error("thrown on a vmstack stack");
                                             });
    bool caught = false;

    CHECK(ok.get() == fib(15));
    try {
        bad.get();
    } catch (const std::runtime_error &e) {
        caught = std::strcmp(e.what(), "thrown on a vmstack stack") == 0;
    }
    CHECK(caught);
}

static void detach()
{
    const std::size_t before = live_stacks();
    int done = 0;

    for (int i = 0; i < 50; i++)
        fibers::fiber(std::allocator_arg, vmstack::stack_allocator(kStack), [&done] {
            boost::this_fiber::yield();
            done++;
        }).detach();
    while (done < 50)
        boost::this_fiber::yield();
    /* A detached fiber's stack goes when Boost.Fiber cleans it up: by the next yield at the latest. */
    boost::this_fiber::yield();
    CHECK(live_stacks() == before);
}

// Recursion with a 128-byte frame, kept a real recursion by the volatile read after the call.
__attribute__((noinline, noclone)) long runaway(long n)
{
    volatile char pad[128];

    pad[n & 127] = static_cast<char>(n);
    if (n == 0)
        return 0;
    return runaway(n - 1) + pad[n & 127];
}

// The lines of text, without their newlines.
static std::vector<std::string> lines_of(const std::string &text)
{
    std::vector<std::string> out;
    std::size_t pos = 0, end;

    while ((end = text.find('\n', pos)) != std::string::npos) {
        out.push_back(text.substr(pos, end - pos));
        pos = end + 1;
    }
    return out;
}

// Runs fn in a child with its stderr captured; its text, which is also logged, and its wait status.
static std::string in_child(void (*fn)(), int *status)
{
    int fd[2];
    std::string text;
    char buf[4096];
    ssize_t n;
    pid_t pid;

    CHECK(pipe(fd) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        fn();
        _exit(0);
    }
    close(fd[1]);
    while ((n = read(fd[0], buf, sizeof buf)) > 0)
        text.append(buf, static_cast<std::size_t>(n));
    close(fd[0]);
    CHECK(waitpid(pid, status, 0) == pid);
    std::fwrite(text.data(), 1, text.size(), stderr);
    return text;
}

// Five fibers on stacks from the allocator A; the third overflows on its second turn.
template <typename A>
static void five_fibers()
{
    const std::size_t before = live_stacks();
    std::vector<fibers::fiber> fs;
    int finished = 0;

    for (int i = 0; i < 5; i++)
        fs.emplace_back(std::allocator_arg, A(kStack, i == 2 ? "runaway" : "calm"), [i, &finished] {
            boost::this_fiber::yield();
            long v = runaway(i == 2 ? 1L << 40 : 20);
            boost::this_fiber::yield();
            finished += v == 210; // 1 + 2 + ... + 20
        });
    for (auto &f : fs)
        f.join();
    fs.clear();
    vms_stats s;
    vms_stats_get(&s);
    std::fprintf(stderr, "test: %d finished, %zu stacks left, %lu overflows\n", finished, live_stacks() - before,
                 static_cast<unsigned long>(s.overflows));
}

static void overflow()
{
    int status = 0;
    std::vector<std::string> lines = lines_of(in_child(five_fibers<vmstack::stack_allocator>, &status));

    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
    CHECK(lines.size() > 6 && lines[0].find("vmstack: BUG: stack guard page was hit at ") == 0);
    CHECK(lines[1].find("vmstack: stack 'runaway' on thread '") == 0);
    CHECK(lines.back() == "vmstack: aborting: vmstack::stack_allocator's stacks have no overflow handler: "
                          "Boost.Context cannot end one coroutine alone on them (vmstack::callcc can, and "
                          "vmstack::fiber_stack_allocator for Boost.Fiber); the size given to vms_stack_alloc "
                          "sizes it");
}

static void overflow_kill()
{
    int status = 0;
    std::vector<std::string> lines = lines_of(in_child(five_fibers<vmstack::fiber_stack_allocator>, &status));

    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(lines.size() > 7 && lines[0].find("vmstack: BUG: stack guard page was hit at ") == 0);
    CHECK(lines[1].find("vmstack: stack 'runaway' on thread '") == 0);
    CHECK(lines[lines.size() - 2] == "vmstack: killed stack 'runaway': its overflow handler ends the coroutine");
    CHECK(lines.back() == "test: 4 finished, 0 stacks left, 1 overflows");
}

int main(int argc, char **argv)
{
    static const struct {
        const char *name;
        void (*fn)();
    } cases[] = {
        { "join", join }, { "yield", yield }, { "channel", channel },
        { "mutex", mutex }, { "future", future }, { "detach", detach }, { "overflow", overflow },
        { "overflow_kill", overflow_kill },
    };

    int ran = 0;

    for (const auto &c : cases)
        if (argc < 2 || std::strcmp(argv[1], c.name) == 0) {
            c.fn();
            std::printf("ok: %s\n", c.name);
            ran++;
        }
    if (!ran)
        std::fprintf(stderr, "test_boost_fiber: no case named '%s'\n", argv[1]);
    return ran ? 0 : 2;
}
