#pragma once
// Worker threads that live across graph runs, and the barrier that separates dependent nodes.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace loom::cpu {

class ThreadPool {
  public:
    explicit ThreadPool(int n_threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool &) = delete;
    ThreadPool &operator=(const ThreadPool &) = delete;

    int size() const { return n_threads_; }

    // Runs task(ith, n) for ith in [0, n) — ith 0 on the calling thread — on the first n threads
    // (clamped to [1, size()]), and returns when every one has finished: the seconds those
    // threads spent asleep in barrier() or waiting for the run's end, summed over them. Asleep
    // means past a short spin, so it stays near zero while each thread has a core of its own.
    double run(int n, const std::function<void(int ith, int nth)> &task);

    // Called by every thread of the running task; returns once all have arrived. A wait for
    // work only one thread does on purpose (a callback on thread 0) is kSerial, so that it does
    // not count as time lost to a thread without a core.
    enum class Wait { kPeers, kSerial };
    void barrier(Wait wait = Wait::kPeers);

  private:
    void worker_loop(int ith);

    int n_threads_;
    std::vector<std::thread> workers_;

    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<uint64_t> generation_{0};  // bumped per run; workers wait for a change
    bool stop_ = false;
    const std::function<void(int, int)> *task_ = nullptr;
    int run_threads_ = 1;          // threads of the current run, set with task_
    std::atomic<int> running_{0};  // workers still inside the current task

    std::atomic<int> barrier_arrived_{0};
    std::atomic<uint64_t> barrier_phase_{0};
    std::atomic<int> sleepers_{0};  // threads asleep (or about to be) on running_ or barrier_phase_
    std::atomic<int64_t> slept_ns_{0};  // of the current run, waits for peers only
};

}  // namespace loom::cpu
