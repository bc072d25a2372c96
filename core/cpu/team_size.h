#pragma once
// How many of the thread pool's threads the next graph run uses: all of them, unless other
// processes share the cores.
//
// A graph run is a chain of nodes with a barrier after each (about 20 per layer in generation),
// so one thread that the scheduler has taken off its core stalls every other thread at the next
// barrier until it comes back. With a busy process beside a 2-thread decode on 2 cores, the run
// crawls at a fraction of what one thread alone achieves (PERFORMANCE.md has the figures): fewer
// threads than cores is then faster than as many. The pool reports how long its threads slept
// waiting for each other; runs where that is a large share are "shared". Several shared runs in a
// row take one thread away; from time to time a trial of a few runs with one more follows, kept
// if its runs are not shared, with twice as long a wait before the next trial if they are. Each
// output element is computed the same with any number of threads (tests/core/test_threads.cpp),
// so this changes the speed, never the results.
#include <chrono>

namespace loom::cpu {

class TeamSize {
  public:
    using Clock = std::chrono::steady_clock;

    explicit TeamSize(int max_threads);

    // Threads for the run that starts at `now`.
    int next(Clock::time_point now) const;

    // What the run that ended at `now` measured: the threads it used, its wall time and the
    // seconds its threads slept waiting for each other (ThreadPool::run's result).
    void report(int used, double wall_seconds, double slept_seconds, Clock::time_point now);

    int current() const { return current_; }

  private:
    int max_;
    int current_;
    int shared_runs_ = 0;   // in a row, at current_ threads
    int trial_runs_ = 0;    // runs of the trial under way with one more thread; 0: none
    int trial_shared_ = 0;  // of its judged runs
    Clock::duration backoff_;
    Clock::time_point try_at_{};  // of the next trial, while current_ < max_
};

}  // namespace loom::cpu
