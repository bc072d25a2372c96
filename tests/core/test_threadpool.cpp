// ThreadPool: runs on fewer threads than it has, barriers among them, and the sleep it reports.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/cpu/threadpool.h"

namespace loom::cpu {
namespace {

TEST(ThreadPool, RunsTheTaskOnTheFirstNThreads) {
    ThreadPool pool(4);
    for (const int n : {4, 2, 1, 3, 4, 0, 9}) {
        const int expected = std::clamp(n, 1, 4);
        std::vector<std::atomic<int>> calls(4);
        std::atomic<int> bad_nth{0};
        pool.run(n, [&](int ith, int nth) {
            calls[size_t(ith)].fetch_add(1);
            if (nth != expected) bad_nth.fetch_add(1);
        });
        for (int i = 0; i < 4; ++i) EXPECT_EQ(calls[size_t(i)].load(), i < expected ? 1 : 0);
        EXPECT_EQ(bad_nth.load(), 0) << "n = " << n;
    }
}

// Each phase reads what every thread wrote in the one before: wrong if the barrier waited for the
// wrong number of threads (a deadlock if it waited for threads outside the run).
TEST(ThreadPool, BarrierSeparatesPhasesAtAnySize) {
    ThreadPool pool(3);
    for (const int n : {3, 2, 1, 2, 3}) {
        std::vector<int> value(3, 0);
        std::atomic<int> wrong{0};
        pool.run(n, [&](int ith, int nth) {
            for (int phase = 1; phase <= 50; ++phase) {
                value[size_t(ith)] = phase;
                pool.barrier();
                for (int j = 0; j < nth; ++j) {
                    if (value[size_t(j)] != phase) wrong.fetch_add(1);
                }
                pool.barrier();
            }
        });
        EXPECT_EQ(wrong.load(), 0) << "n = " << n;
    }
}

// A thread late by 50 ms: the others wait past their spin and sleep, and the run says so. A wait
// for work thread 0 does alone on purpose (kSerial) is not counted.
TEST(ThreadPool, ReportsTheTimeThreadsSleptWaitingForEachOther) {
    ThreadPool pool(2);
    const auto late = std::chrono::milliseconds(50);
    const double peers = pool.run(2, [&](int ith, int) {
        if (ith == 1) std::this_thread::sleep_for(late);
        pool.barrier();
    });
    EXPECT_GT(peers, 0.025);
    EXPECT_LT(peers, 10.0);
    const double serial = pool.run(2, [&](int ith, int) {
        if (ith == 0) std::this_thread::sleep_for(late);
        pool.barrier(ThreadPool::Wait::kSerial);
    });
    EXPECT_LT(serial, 0.025);
    EXPECT_EQ(pool.run(1, [&](int, int) { std::this_thread::sleep_for(late); }), 0.0);
}

}  // namespace
}  // namespace loom::cpu
