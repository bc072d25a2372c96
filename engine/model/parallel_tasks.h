#pragma once
// Work split across short-lived threads outside a graph (loading, quantizing files): tasks
// 0 .. n - 1 handed out one at a time to whichever worker is free.
#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace loom::engine {

// Runs task(i) for every i in [0, n) on up to n_workers threads, the calling thread one of them;
// the first exception a task throws stops the hand-out and is rethrown here once all have stopped.
template <typename Task>
void run_tasks(size_t n, size_t n_workers, const Task &task) {
    std::atomic<size_t> next{0};
    std::exception_ptr error;
    std::mutex error_mutex;
    auto work = [&] {
        for (size_t i = next++; i < n; i = next++) {
            try {
                task(i);
            } catch (...) {
                std::lock_guard lock(error_mutex);
                if (!error) error = std::current_exception();
                next = n;
            }
        }
    };
    std::vector<std::thread> workers;
    for (size_t w = 1; w < std::clamp<size_t>(n_workers, 1, n); ++w) workers.emplace_back(work);
    work();
    for (std::thread &t : workers) t.join();
    if (error) std::rethrow_exception(error);
}

}  // namespace loom::engine
