// SPDX-License-Identifier: MIT
// C++ exceptions in the compatibility suite: thrown in std::async tasks
// (each its own thread), from deep in their stacks, carried across to
// future::get in the caller, and rethrown there; nested tasks too.
#include <cstdio>
#include <future>
#include <stdexcept>
#include <string>
#include <vector>

static int deep(int n, int id)
{
    volatile char frame[128] = {};
    if (n == 0) {
        if (id % 3 == 0)
            throw std::runtime_error("task " + std::to_string(id) + " failed");
        if (id % 3 == 1)
            throw id;
        return id;
    }
    return deep(n - 1, id) + frame[n % sizeof frame];
}

static int nested(int id)
{
    auto inner = std::async(std::launch::async, deep, 300, id + 1);
    try {
        return inner.get() * 2;
    } catch (int v) {
        throw std::logic_error("nested " + std::to_string(v));
    }
}

int main()
{
    int sum = 0, errors = 0, ints = 0;
    for (int round = 0; round < 10; round++) {
        std::vector<std::future<int>> tasks;
        for (int id = 0; id < 8; id++)
            tasks.push_back(std::async(std::launch::async, id < 6 ? deep : [](int, int i) { return nested(i); },
                                       1000, id + round * 8));
        for (auto &t : tasks) {
            try {
                sum += t.get();
            } catch (const std::runtime_error &e) {
                errors++;
                if (round == 0)
                    std::printf("caught: %s\n", e.what());
            } catch (const std::logic_error &e) {
                errors++;
                if (round == 0)
                    std::printf("caught logic: %s\n", e.what());
            } catch (int v) {
                ints++;
            }
        }
    }
    std::printf("sum %d errors %d ints %d\n", sum, errors, ints);
    std::fflush(stdout); // abort flushes nothing
    auto last = std::async(std::launch::async, deep, 2000, 0);
    last.get(); // std::terminate: uncaught, as plain
    return 0;
}
