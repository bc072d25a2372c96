#include "core/cpu/threadpool.h"

#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loom::cpu {
namespace {

// Spin briefly (a barrier between nodes is usually reached within microseconds), then give the
// core away so an oversubscribed machine still makes progress.
template <typename Done>
void spin_until(Done done) {
    for (int spins = 0; !done(); ++spins) {
        if (spins < 4096) {
#if defined(__x86_64__)
            _mm_pause();
#endif
        } else {
            std::this_thread::yield();
        }
    }
}

// How long a worker that finished a run polls for the next one before it sleeps on the condition
// variable. Decoding runs one graph per token with only sampling and input setting in between
// (tens of microseconds); waking a sleeping worker costs ~0.1 ms of a ~25 ms token here, in the
// first node of every graph.
constexpr auto kPollBeforeSleep = std::chrono::milliseconds(2);

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
    for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    for (auto &w : workers_) w.join();
}

void ThreadPool::run(const std::function<void(int)> &task) {
    if (n_threads_ == 1) {
        task(0);
        return;
    }
    running_.store(n_threads_ - 1, std::memory_order_relaxed);
    {
        std::lock_guard lock(mutex_);
        task_ = &task;
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    task(0);
    spin_until([&] { return running_.load(std::memory_order_acquire) == 0; });
}

void ThreadPool::worker_loop(int ith) {
    uint64_t seen = 0;
    for (;;) {
        const std::function<void(int)> *task;
        const auto poll_end = std::chrono::steady_clock::now() + kPollBeforeSleep;
        for (int spins = 0; generation_.load(std::memory_order_acquire) == seen; ++spins) {
#if defined(__x86_64__)
            _mm_pause();
#endif
            if (spins % 256 == 255 && std::chrono::steady_clock::now() > poll_end) break;
        }
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
            if (stop_) return;
            seen = generation_.load();
            task = task_;
        }
        (*task)(ith);
        running_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

void ThreadPool::barrier() {
    if (n_threads_ == 1) return;
    const uint64_t phase = barrier_phase_.load(std::memory_order_acquire);
    if (barrier_arrived_.fetch_add(1, std::memory_order_acq_rel) == n_threads_ - 1) {
        barrier_arrived_.store(0, std::memory_order_relaxed);
        barrier_phase_.fetch_add(1, std::memory_order_release);
        return;
    }
    spin_until([&] { return barrier_phase_.load(std::memory_order_acquire) != phase; });
}

}  // namespace loom::cpu
