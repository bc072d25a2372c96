// TeamSize: how many threads a graph run uses when other processes share the cores. The policy is
// fed made-up measurements and a made-up clock, so every decision is checked exactly.
#include <gtest/gtest.h>

#include "core/cpu/team_size.h"

namespace loom::cpu {
namespace {

using std::chrono::milliseconds;
using Clock = TeamSize::Clock;

// One run of 10 ms at the size next() gives, its waiting threads asleep for `share` of it each.
struct Driver {
    TeamSize team;
    Clock::time_point now{};
    explicit Driver(int max) : team(max) {}
    int run(double share, milliseconds step = milliseconds(10)) {
        const int used = team.next(now);
        now += step;
        const double wall = 0.010;
        team.report(used, wall, share * wall * (used - 1), now);
        return used;
    }
};

TEST(TeamSize, KeepsEveryThreadWhileRunsAreNotShared) {
    Driver d(4);
    for (int i = 0; i < 100; ++i) {
        EXPECT_EQ(d.run(0.1), 4);  // 10 % asleep: below the share that counts
    }
    EXPECT_EQ(d.team.current(), 4);
}

TEST(TeamSize, ThreeSharedRunsInARowTakeOneThreadAway) {
    Driver d(2);
    d.run(1.0);
    d.run(1.0);
    d.run(0.0);  // the count starts again
    d.run(1.0);
    d.run(1.0);
    EXPECT_EQ(d.team.current(), 2);
    d.run(1.0);
    EXPECT_EQ(d.team.current(), 1);
}

TEST(TeamSize, ShrinksOneThreadAtATimeAndNeverBelowOne) {
    Driver d(3);
    std::vector<int> sizes;
    for (int i = 0; i < 9; ++i) sizes.push_back(d.run(1.0, milliseconds(1)));
    // 3 runs at 3 threads, then 3 at 2; at 1 thread nothing waits, so nothing is shared.
    EXPECT_EQ(sizes, (std::vector<int>{3, 3, 3, 2, 2, 2, 1, 1, 1}));
    EXPECT_EQ(d.team.current(), 1);
}

TEST(TeamSize, ATrialWithOneMoreThreadComesAfterTheWaitAndIsKeptWhenNotShared) {
    Driver d(2);
    for (int i = 0; i < 3; ++i) d.run(1.0);
    ASSERT_EQ(d.team.current(), 1);
    // The first wait is 100 ms: 10 runs of 10 ms stay at one thread.
    for (int i = 0; i < 10; ++i) EXPECT_EQ(d.run(0.0), 1) << "run " << i;
    // The trial: 4 runs at two threads; its first two are not judged.
    EXPECT_EQ(d.run(1.0), 2);
    EXPECT_EQ(d.run(1.0), 2);
    EXPECT_EQ(d.run(0.0), 2);
    EXPECT_EQ(d.run(0.0), 2);
    for (int i = 0; i < 20; ++i) EXPECT_EQ(d.run(0.0), 2);
    EXPECT_EQ(d.team.current(), 2);
}

TEST(TeamSize, AFailedTrialGoesBackAndDoublesTheWait) {
    Driver d(2);
    for (int i = 0; i < 3; ++i) d.run(1.0);
    // Count the one-thread runs between trials while every two-thread run is shared.
    std::vector<int> gaps;
    int gap = 0;
    for (int i = 0; i < 2000 && gaps.size() < 8; ++i) {
        if (d.run(1.0) == 1) {
            ++gap;
        } else if (gap > 0) {
            gaps.push_back(gap);
            gap = 0;
        }
    }
    // Waits of 100, 200, 400, ... ms, up to 4 s: in runs of 10 ms, 10, 20, 40, ... 400.
    ASSERT_EQ(gaps.size(), 8u);
    EXPECT_EQ(gaps, (std::vector<int>{10, 20, 40, 80, 160, 320, 400, 400}));
}

TEST(TeamSize, OneJudgedSharedRunOfTwoFailsTheTrial) {
    Driver d(2);
    for (int i = 0; i < 3; ++i) d.run(1.0);
    while (d.run(0.0) == 1) {
    }
    // That was the trial's first run; then one unjudged and two judged.
    d.run(0.0);
    d.run(1.0);
    d.run(0.0);
    EXPECT_EQ(d.team.current(), 1);
}

TEST(TeamSize, ASuccessfulTrialResetsTheWait) {
    Driver d(2);
    for (int i = 0; i < 3; ++i) d.run(1.0);
    // Two failed trials: the wait is 400 ms now.
    for (int failed = 0; failed < 2;) {
        if (d.run(1.0) == 2) {
            for (int i = 0; i < 3; ++i) d.run(1.0);
            ++failed;
        }
    }
    while (d.run(0.0) == 1) {
    }
    for (int i = 0; i < 3; ++i) d.run(0.0);
    ASSERT_EQ(d.team.current(), 2);
    for (int i = 0; i < 3; ++i) d.run(1.0);
    ASSERT_EQ(d.team.current(), 1);
    int gap = 0;
    while (d.run(0.0) == 1) ++gap;
    EXPECT_EQ(gap, 10);  // 100 ms again
}

TEST(TeamSize, OneThreadNeverTriesMore) {
    Driver d(1);
    for (int i = 0; i < 50; ++i) EXPECT_EQ(d.run(1.0, milliseconds(100)), 1);
}

}  // namespace
}  // namespace loom::cpu
