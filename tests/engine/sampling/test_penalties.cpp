// Repetition penalties against hand-computed values, and the history window they read.
#include <gtest/gtest.h>

#include <vector>

#include "engine/sampling/penalties.h"
#include "engine/sampling/sampler.h"

namespace loom::engine {
namespace {

Candidates candidates_of(const std::vector<float> &logits) {
    Candidates candidates;
    fill_candidates(candidates, logits);
    return candidates;
}

TEST(SamplingPenalties, MatchHandComputedValues) {
    Candidates candidates = candidates_of({2.0f, -1.0f, 0.5f, 3.0f, 0.0f});
    TokenHistory history(-1);
    for (int32_t token : {0, 0, 1, 3, 0, 4, 99}) history.push(token);
    apply_penalties(candidates, history.counts(),
                    {.repeat = 2.0f, .frequency = 0.1f, .presence = 0.5f});
    // token 0, three times: 2 / 2 - 3 * 0.1 - 0.5
    EXPECT_FLOAT_EQ(candidates.data[0].logit, 0.2f);
    // token 1, once, negative so multiplied: -1 * 2 - 0.1 - 0.5
    EXPECT_FLOAT_EQ(candidates.data[1].logit, -2.6f);
    // token 2 never seen
    EXPECT_FLOAT_EQ(candidates.data[2].logit, 0.5f);
    // token 3, once: 3 / 2 - 0.1 - 0.5
    EXPECT_FLOAT_EQ(candidates.data[3].logit, 0.9f);
    // token 4, once, zero counts as non-positive: 0 * 2 - 0.1 - 0.5
    EXPECT_FLOAT_EQ(candidates.data[4].logit, -0.6f);
    // token 99 is not a candidate and is ignored
    EXPECT_EQ(candidates.data.size(), 5u);
}

TEST(SamplingPenalties, FindTokensInAReorderedList) {
    Candidates candidates = candidates_of({1.0f, 4.0f, 2.0f});
    sort_by_logit(candidates);  // ids 1, 2, 0
    apply_penalties(candidates, {{0, 1}, {1, 2}}, {.repeat = 4.0f});
    EXPECT_FLOAT_EQ(candidates.data[0].logit, 1.0f);   // id 1: 4 / 4
    EXPECT_FLOAT_EQ(candidates.data[1].logit, 2.0f);   // id 2 untouched
    EXPECT_FLOAT_EQ(candidates.data[2].logit, 0.25f);  // id 0: 1 / 4
    EXPECT_FALSE(candidates.sorted);
}

TEST(SamplingPenalties, HistoryKeepsTheLastWindowTokens) {
    TokenHistory window(2);
    for (int32_t token : {5, 6, 5, 7}) window.push(token);
    EXPECT_EQ(window.counts(), (TokenCounts{{5, 1}, {7, 1}}));

    TokenHistory everything(-1);
    for (int32_t token : {5, 6, 5, 7}) everything.push(token);
    EXPECT_EQ(everything.counts(), (TokenCounts{{5, 2}, {6, 1}, {7, 1}}));

    TokenHistory nothing(0);
    nothing.push(5);
    EXPECT_TRUE(nothing.counts().empty());

    window.clear();
    EXPECT_TRUE(window.counts().empty());
}

TEST(SamplingPenalties, SamplerPenalizesAcceptedTokens) {
    const SamplingParams params{.temperature = 0.0f, .repeat_penalty = 10.0f, .penalty_last_n = 1};
    Sampler sampler(params);
    const std::vector<float> logits = {1.0f, 5.0f, 4.0f, 3.0f};
    EXPECT_EQ(sampler.sample(logits), 1);
    sampler.accept(1);  // 5 / 10 falls below 4
    EXPECT_EQ(sampler.sample(logits), 2);
    sampler.accept(2);  // the window of 1 forgets token 1
    EXPECT_EQ(sampler.sample(logits), 1);
    sampler.accept(1);
    sampler.reset();
    EXPECT_EQ(sampler.sample(logits), 1);
}

}  // namespace
}  // namespace loom::engine
