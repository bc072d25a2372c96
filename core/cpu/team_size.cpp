#include "core/cpu/team_size.h"

#include <algorithm>

namespace loom::cpu {
namespace {

// A run is shared when its waiting threads slept, on average, more than this share of its wall
// time. With a thread per core they sleep almost never (a barrier's wait is covered by the short
// spin before sleeping): 0.3-2.4 % of a decode run on the 1B Llama, 2 threads, measured. With a
// busy process beside them on 2 cores: 92-102 % (each thread asleep about half the time, while
// the other is off its core).
constexpr double kSharedShare = 0.25;

// Shared runs in a row before a thread is taken away: one slow run (a page fault, a wake-up
// after idling) is not a busy neighbour. A decode token is one run, so this is a few tokens.
constexpr int kSharedRunsToShrink = 3;

// A trial with one more thread lasts kTrialRuns runs, of which the last kJudgedRuns decide: it
// is kept unless half of them or more were shared. The first are not judged: threads that were
// left out wait for their cores behind whatever ran there meanwhile (a background job at nice
// 19 too), and that settles within a run or two.
constexpr int kTrialRuns = 4;
constexpr int kJudgedRuns = 2;

// How long after shrinking the first trial comes; each failed trial doubles the wait, up to the
// longest. A failed trial costs about kTrialRuns slow runs (~4x a run with fewer threads when a
// busy process holds one of two cores), so once the waits are long it costs a few percent at
// most, and a neighbour that has left is noticed within the longest wait.
constexpr auto kFirstBackoff = std::chrono::milliseconds(100);
constexpr auto kMaxBackoff = std::chrono::seconds(4);

}  // namespace

TeamSize::TeamSize(int max_threads)
    : max_(std::max(1, max_threads)), current_(max_), backoff_(kFirstBackoff) {}

int TeamSize::next(Clock::time_point now) const {
    const bool try_more = trial_runs_ == 0 && current_ < max_ && now >= try_at_;
    return try_more ? current_ + 1 : current_;
}

void TeamSize::report(int used, double wall_seconds, double slept_seconds, Clock::time_point now) {
    const bool shared = used > 1 && slept_seconds > kSharedShare * wall_seconds * (used - 1);
    if (used > current_) {  // the first run of a trial with one more thread
        current_ = used;
        trial_runs_ = 1;
        trial_shared_ = 0;
        shared_runs_ = 0;
        return;
    }
    if (trial_runs_ > 0) {
        ++trial_runs_;
        if (trial_runs_ > kTrialRuns - kJudgedRuns && shared) ++trial_shared_;
        if (trial_runs_ < kTrialRuns) return;
        if (2 * trial_shared_ >= kJudgedRuns) {
            --current_;
            backoff_ = std::min<Clock::duration>(2 * backoff_, kMaxBackoff);
            try_at_ = now + backoff_;
        } else {
            backoff_ = kFirstBackoff;
        }
        trial_runs_ = 0;
        return;
    }
    shared_runs_ = shared ? shared_runs_ + 1 : 0;
    if (shared_runs_ >= kSharedRunsToShrink && current_ > 1) {
        --current_;
        shared_runs_ = 0;
        try_at_ = now + backoff_;
    }
}

}  // namespace loom::cpu
