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

    // Runs task(ith) for ith in [0, size()) — ith 0 on the calling thread — and returns when
    // every thread has finished.
    void run(const std::function<void(int ith)> &task);

    // Called by every thread of the running task; returns once all have arrived.
    void barrier();

  private:
    void worker_loop(int ith);

    int n_threads_;
    std::vector<std::thread> workers_;

    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<uint64_t> generation_{0};  // bumped per run; workers wait for a change
    bool stop_ = false;
    const std::function<void(int)> *task_ = nullptr;
    std::atomic<int> running_{0};  // workers still inside the current task

    std::atomic<int> barrier_arrived_{0};
    std::atomic<uint64_t> barrier_phase_{0};
    std::atomic<int> sleepers_{0};  // threads asleep (or about to be) on running_ or barrier_phase_
};

}  // namespace loom::cpu
