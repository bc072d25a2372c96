// The whole chain: greedy, seeded draws, their distribution, candidates() and bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engine/sampling/sampler.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// Every truncation off: the draw follows softmax(logits / temperature) exactly.
SamplingParams untruncated(float temperature, uint64_t seed) {
    return {.temperature = temperature, .top_k = 0, .top_p = 1.0f, .min_p = 0.0f, .seed = seed};
}

std::vector<float> random_logits(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<float> logits(n);
    for (auto &l : logits) l = normal(rng);
    return logits;
}

std::vector<int32_t> draws(Sampler &sampler, const std::vector<float> &logits, int n) {
    std::vector<int32_t> tokens;
    for (int i = 0; i < n; ++i) tokens.push_back(sampler.sample(logits));
    return tokens;
}

TEST(Sampler, GreedyIsArgmaxWithTiesToTheLowestId) {
    for (int32_t top_k : {0, 40}) {
        for (uint32_t seed = 0; seed < 20; ++seed) {
            std::vector<float> logits = random_logits(5000, seed);
            for (auto &l : logits) l = std::round(l);  // many ties at the maximum
            size_t argmax = 0;
            for (size_t i = 1; i < logits.size(); ++i) {
                if (logits[i] > logits[argmax]) argmax = i;
            }
            Sampler sampler({.temperature = 0.0f, .top_k = top_k});
            EXPECT_EQ(sampler.sample(logits), int32_t(argmax)) << "seed " << seed;
        }
    }
}

TEST(Sampler, SameSeedSameDrawsOtherSeedOtherDraws) {
    const std::vector<float> logits = random_logits(1000, 1);
    Sampler first({.seed = 1234}), second({.seed = 1234}), other({.seed = 1235});
    const std::vector<int32_t> tokens = draws(first, logits, 1000);
    EXPECT_EQ(draws(second, logits, 1000), tokens);
    EXPECT_NE(draws(other, logits, 1000), tokens);
    first.reset();
    EXPECT_EQ(draws(first, logits, 1000), tokens);
    EXPECT_EQ(first.seed(), 1234u);
}

TEST(Sampler, RandomSeedComesFromTheDevice) {
    Sampler sampler({.seed = kRandomSeed});
    EXPECT_NE(sampler.seed(), kRandomSeed);  // random_device yields 32 bits; a clash is 2^-32
}

// Pearson's chi-square of the draw counts against softmax(logits / temperature).
double chi_square(Sampler &sampler, const std::vector<float> &logits, float temperature, int n) {
    std::vector<double> expected(logits.size());
    double sum = 0.0;
    for (size_t i = 0; i < logits.size(); ++i)
        sum += expected[i] = std::exp(logits[i] / temperature);
    std::vector<int> counts(logits.size());
    for (int i = 0; i < n; ++i) ++counts[sampler.sample(logits)];
    double statistic = 0.0;
    for (size_t i = 0; i < logits.size(); ++i) {
        const double e = n * expected[i] / sum;
        statistic += (counts[i] - e) * (counts[i] - e) / e;
    }
    return statistic;
}

TEST(Sampler, DrawFrequenciesFollowTheSoftmax) {
    // Eight tokens, none rarer than about 1%, so every expected count is large.
    const std::vector<float> logits = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, -1.0f, 0.2f, 2.5f};
    // 29.88: the 0.9999 quantile of chi-square with 7 degrees of freedom. The seed is fixed, so
    // this passes or fails the same way every run.
    for (float temperature : {0.5f, 1.0f, 1.7f}) {
        Sampler sampler(untruncated(temperature, 42));
        EXPECT_LT(chi_square(sampler, logits, temperature, 100000), 29.88) << temperature;
    }
}

TEST(Sampler, CandidatesAreAProbabilityDistributionMostLikelyFirst) {
    const std::vector<float> logits = random_logits(32000, 7);
    for (const SamplingParams &params :
         {SamplingParams{.seed = 1}, untruncated(1.0f, 1), SamplingParams{.temperature = 0.0f},
          SamplingParams{.top_k = 0, .typical_p = 0.5f, .seed = 1}}) {
        Sampler sampler(params);
        const int32_t token = sampler.sample(logits);
        double sum = 0.0;
        bool has_token = false;
        const auto candidates = sampler.candidates();
        for (size_t i = 0; i < candidates.size(); ++i) {
            sum += candidates[i].p;
            has_token |= candidates[i].id == token;
        }
        for (size_t i = 1; i < candidates.size(); ++i)
            EXPECT_GE(candidates[i - 1].p, candidates[i].p);
        EXPECT_NEAR(sum, 1.0, 1e-5);
        EXPECT_TRUE(has_token);
    }
}

TEST(Sampler, NaNAndMinusInfAreNeverChosen) {
    const std::vector<float> logits = {kNaN, -kInf, 0.0f, kNaN, -kInf, 0.1f};
    Sampler sampler(untruncated(1.0f, 3));
    for (int32_t token : draws(sampler, logits, 1000)) EXPECT_TRUE(token == 2 || token == 5);
    EXPECT_EQ(sampler.candidates().size(), 2u);
}

TEST(Sampler, PlusInfTokensShareTheProbability) {
    const std::vector<float> logits = {1.0f, kInf, 2.0f, kInf};
    Sampler sampler(untruncated(1.0f, 5));
    int ones = 0;
    for (int32_t token : draws(sampler, logits, 1000)) {
        ASSERT_TRUE(token == 1 || token == 3);
        ones += token == 1;
    }
    EXPECT_GT(ones, 400);
    EXPECT_LT(ones, 600);
    Sampler greedy({.temperature = 0.0f});
    EXPECT_EQ(greedy.sample(logits), 1);
}

TEST(Sampler, RejectsBadInput) {
    Sampler sampler({.seed = 1});
    EXPECT_THROW(sampler.sample(std::vector<float>{}), Error);
    EXPECT_THROW(sampler.sample(std::vector<float>{kNaN, -kInf}), Error);
    EXPECT_THROW(Sampler({.repeat_penalty = 0.0f}), Error);
    EXPECT_THROW(Sampler({.top_p = kNaN}), Error);
    EXPECT_THROW(Sampler({.penalty_last_n = -2}), Error);
}

// A bias moves a token's logit before everything else: the draws follow softmax(logits + bias),
// greedy picks the biased argmax, and -inf bans a token even at +inf.
TEST(Sampler, LogitBiasShiftsTheLogitsFirst) {
    const std::vector<float> logits = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, -1.0f, 0.2f, 2.5f};
    std::vector<float> shifted = logits;
    shifted[0] += 3.0f;
    shifted[7] -= 2.0f;
    SamplingParams params = untruncated(1.0f, 42);
    params.logit_bias = {{0, 3.0f}, {7, -2.0f}};
    Sampler biased(params);
    // The counts of the biased sampler against the shifted logits' softmax (see above).
    std::vector<double> expected(shifted.size());
    double sum = 0.0;
    for (size_t i = 0; i < shifted.size(); ++i) sum += expected[i] = std::exp(shifted[i]);
    std::vector<int> counts(shifted.size());
    const int n = 100000;
    for (int i = 0; i < n; ++i) ++counts[biased.sample(logits)];
    double statistic = 0.0;
    for (size_t i = 0; i < shifted.size(); ++i) {
        const double e = n * expected[i] / sum;
        statistic += (counts[i] - e) * (counts[i] - e) / e;
    }
    EXPECT_LT(statistic, 29.88);

    Sampler greedy({.temperature = 0.0f, .logit_bias = {{3, 1.1f}}});
    EXPECT_EQ(greedy.sample(logits), 3);  // 1.5 + 1.1 > 2.5
    Sampler banned({.temperature = 0.0f, .logit_bias = {{1, -kInf}}});
    EXPECT_EQ(banned.sample(std::vector<float>{1.0f, kInf, 2.0f}), 2);
    Sampler past_the_end({.logit_bias = {{8, 1.0f}}});
    EXPECT_THROW(past_the_end.sample(logits), Error);
    EXPECT_THROW(Sampler({.logit_bias = {{-1, 1.0f}}}), Error);
    EXPECT_THROW(Sampler({.logit_bias = {{1, kNaN}}}), Error);
    EXPECT_THROW(Sampler({.logit_bias = {{1, kInf}}}), Error);
}

TEST(Sampler, HandlesALargeVocabulary) {
    const std::vector<float> logits = random_logits(256000, 9);
    Sampler sampler({.seed = 1});
    for (int i = 0; i < 20; ++i) sampler.accept(sampler.sample(logits));
    EXPECT_LE(sampler.candidates().size(), 40u);
}

}  // namespace
}  // namespace loom::engine
