#include "core/cpu/threadpool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loom::cpu {
namespace {

// Pauses a waiter spins through before it sleeps: ~50-100 us on the cores here, far longer
// than a barrier between nodes takes when every thread has a core of its own (microseconds).
constexpr int kSpinsBeforeSleep = 2048;

// Waits until `value` differs from `old`: spinning briefly, then asleep in the kernel (a futex)
// until the thread that changes it wakes the sleepers. When the machine is oversubscribed (more
// runnable threads than cores), the thread everyone waits for may have no core at all: a waiter
// that kept spinning, or yielding (which the Linux scheduler mostly ignores), would hold the
// core it needs. `sleepers` counts the waiters that may be asleep, so that a change wakes them
// with a system call only when there are any. The time asleep is added to `slept_ns`, when given.
template <typename T>
void wait_for_change(const std::atomic<T> &value, T old, std::atomic<int> &sleepers,
                     std::atomic<int64_t> *slept_ns) {
    for (int spins = 0; spins < kSpinsBeforeSleep; ++spins) {
        if (value.load(std::memory_order_acquire) != old) return;
#if defined(__x86_64__)
        _mm_pause();
#endif
    }
    const auto asleep = std::chrono::steady_clock::now();
    sleepers.fetch_add(1, std::memory_order_seq_cst);
    // seq_cst against the changer's store then load of `sleepers`: either this load sees the new
    // value, or the changer sees this sleeper and wakes it (wait() rechecks in the kernel).
    while (value.load(std::memory_order_seq_cst) == old) value.wait(old, std::memory_order_acquire);
    sleepers.fetch_sub(1, std::memory_order_relaxed);
    if (slept_ns != nullptr) {
        const auto slept = std::chrono::steady_clock::now() - asleep;
        slept_ns->fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(slept).count(),
                            std::memory_order_relaxed);
    }
}

// Wakes the waiters asleep on `value`, after a seq_cst change to it.
template <typename T>
void wake_sleepers(std::atomic<T> &value, std::atomic<int> &sleepers) {
    if (sleepers.load(std::memory_order_seq_cst) > 0) value.notify_all();
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

double ThreadPool::run(int n, const std::function<void(int, int)> &task) {
    n = std::clamp(n, 1, n_threads_);
    if (n == 1) {
        {
            std::lock_guard lock(mutex_);  // barrier() reads it; workers too, under the lock
            run_threads_ = 1;
        }
        task(0, 1);
        return 0.0;
    }
    slept_ns_.store(0, std::memory_order_relaxed);
    running_.store(n - 1, std::memory_order_relaxed);
    {
        std::lock_guard lock(mutex_);
        task_ = &task;
        run_threads_ = n;
        generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    task(0, n);
    for (int left = running_.load(std::memory_order_acquire); left != 0;
         left = running_.load(std::memory_order_acquire)) {
        wait_for_change(running_, left, sleepers_, &slept_ns_);
    }
    return double(slept_ns_.load(std::memory_order_relaxed)) * 1e-9;
}

void ThreadPool::worker_loop(int ith) {
    uint64_t seen = 0;
    bool took_part = false;  // in the last run: only then is the next one likely to be soon
    for (;;) {
        const std::function<void(int, int)> *task;
        int n;
        if (took_part) {
            const auto poll_end = std::chrono::steady_clock::now() + kPollBeforeSleep;
            for (int spins = 0; generation_.load(std::memory_order_acquire) == seen; ++spins) {
#if defined(__x86_64__)
                _mm_pause();
#endif
                if (spins % 256 == 255 && std::chrono::steady_clock::now() > poll_end) break;
            }
        }
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_.load() != seen; });
            if (stop_) return;
            seen = generation_.load();
            task = task_;
            n = run_threads_;
        }
        // A worker left out of a run (fewer threads than the pool's) goes back to sleep at once.
        took_part = ith < n;
        if (!took_part) continue;
        (*task)(ith, n);
        running_.fetch_sub(1, std::memory_order_seq_cst);
        wake_sleepers(running_, sleepers_);
    }
}

void ThreadPool::barrier(Wait wait) {
    const int n_threads = run_threads_;
    if (n_threads == 1) return;
    const uint64_t phase = barrier_phase_.load(std::memory_order_acquire);
    if (barrier_arrived_.fetch_add(1, std::memory_order_acq_rel) == n_threads - 1) {
        barrier_arrived_.store(0, std::memory_order_relaxed);
        barrier_phase_.fetch_add(1, std::memory_order_seq_cst);
        wake_sleepers(barrier_phase_, sleepers_);
        return;
    }
    wait_for_change(barrier_phase_, phase, sleepers_, wait == Wait::kPeers ? &slept_ns_ : nullptr);
}

}  // namespace loom::cpu
