// Each sampling stage against a naive reference written here: double precision, full stable sort.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "engine/sampling/stages.h"

namespace loom::engine {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

struct RefToken {
    int32_t id;
    double logit;
    double p;
};
using Ref = std::vector<RefToken>;

// Most likely first (stable, so ties keep ascending ids), with softmax probabilities.
Ref ref_softmax(const std::vector<float> &logits) {
    Ref ref;
    for (size_t i = 0; i < logits.size(); ++i) ref.push_back({int32_t(i), logits[i], 0.0});
    std::stable_sort(ref.begin(), ref.end(), [](auto &a, auto &b) { return a.logit > b.logit; });
    double sum = 0.0;
    for (auto &t : ref) sum += t.p = std::exp(t.logit - ref[0].logit);
    for (auto &t : ref) t.p /= sum;
    return ref;
}

Ref ref_top_k(const std::vector<float> &logits, int32_t k) {
    Ref ref = ref_softmax(logits);
    if (k > 0 && size_t(k) < ref.size()) ref.resize(k);
    return ref;
}

Ref ref_top_p(const std::vector<float> &logits, float p) {
    Ref ref = ref_softmax(logits);
    if (p >= 1.0f) return ref;
    double mass = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
        mass += ref[i].p;
        if (mass >= p) {
            ref.resize(i + 1);
            break;
        }
    }
    return ref;
}

Ref ref_min_p(const std::vector<float> &logits, float p) {
    Ref ref = ref_softmax(logits);
    if (p <= 0.0f) return ref;
    const double p_max = ref[0].p;
    std::erase_if(ref, [&](auto &t) { return t.p < std::min(double(p), 1.0) * p_max; });
    return ref;
}

Ref ref_typical(const std::vector<float> &logits, float p) {
    Ref ref = ref_softmax(logits);
    if (p >= 1.0f) return ref;
    double entropy = 0.0;
    for (auto &t : ref) entropy -= t.p > 0.0 ? t.p * std::log(t.p) : 0.0;
    std::stable_sort(ref.begin(), ref.end(), [&](auto &a, auto &b) {
        return std::abs(-std::log(a.p) - entropy) < std::abs(-std::log(b.p) - entropy);
    });
    double mass = 0.0;
    for (size_t i = 0; i < ref.size(); ++i) {
        mass += ref[i].p;
        if (mass > p) {
            ref.resize(i + 1);
            break;
        }
    }
    return ref;
}

std::vector<float> random_logits(size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(n);
    for (auto &l : logits) l = normal(rng);
    return logits;
}

// Random logits (20000: top-p's nucleus outgrows its first sorted prefix), some -inf, all
// equal (8 of them, so every mass is exact), one.
std::vector<std::vector<float>> logit_sets() {
    std::vector<float> with_minus_inf = random_logits(100, 3);
    for (size_t i = 0; i < with_minus_inf.size(); i += 3) with_minus_inf[i] = -kInf;
    return {random_logits(1000, 1),
            random_logits(7, 2),
            with_minus_inf,
            std::vector<float>(8, 1.5f),
            {0.25f}};
}

Candidates candidates_of(const std::vector<float> &logits) {
    Candidates candidates;
    fill_candidates(candidates, logits);
    return candidates;
}

// Same tokens, in the same order when `ordered`, with the same logits (and p when `with_p`).
void expect_matches(const Candidates &got, Ref want, bool ordered, bool with_p) {
    ASSERT_EQ(got.data.size(), want.size());
    std::vector<TokenProb> have = got.data;
    if (!ordered) {
        std::sort(have.begin(), have.end(), [](auto &a, auto &b) { return a.id < b.id; });
        std::sort(want.begin(), want.end(), [](auto &a, auto &b) { return a.id < b.id; });
    }
    for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(have[i].id, want[i].id) << "at " << i;
        EXPECT_FLOAT_EQ(have[i].logit, float(want[i].logit)) << "id " << want[i].id;
        if (with_p) {
            EXPECT_NEAR(have[i].p, want[i].p, 1e-6) << "id " << want[i].id;
        }
    }
}

TEST(SamplingStages, SoftmaxMatchesReference) {
    for (const auto &logits : logit_sets()) {
        Candidates candidates = candidates_of(logits);
        softmax(candidates);
        EXPECT_TRUE(candidates.sorted);
        expect_matches(candidates, ref_softmax(logits), true, true);
    }
}

TEST(SamplingStages, SoftmaxSharesAnInfiniteMaximum) {
    Candidates plus = candidates_of({1.0f, kInf, 3.0f, kInf});
    softmax(plus);
    ASSERT_EQ(plus.data.size(), 4u);
    EXPECT_EQ(plus.data[0].id, 1);
    EXPECT_EQ(plus.data[1].id, 3);
    EXPECT_EQ(plus.data[0].p, 0.5f);
    EXPECT_EQ(plus.data[1].p, 0.5f);
    EXPECT_EQ(plus.data[2].p, 0.0f);
    EXPECT_EQ(plus.data[3].p, 0.0f);

    Candidates minus = candidates_of({-kInf, -kInf});
    softmax(minus);
    EXPECT_EQ(minus.data[0].p, 0.5f);
    EXPECT_EQ(minus.data[1].p, 0.5f);
}

TEST(SamplingStages, TopKMatchesReference) {
    for (const auto &logits : logit_sets()) {
        const int32_t n = int32_t(logits.size());
        for (int32_t k : {-1, 0, 1, 3, 40, n, n + 10}) {
            SCOPED_TRACE(testing::Message() << "n " << n << " k " << k);
            Candidates candidates = candidates_of(logits);
            top_k(candidates, k);
            expect_matches(candidates, ref_top_k(logits, k), k > 0, false);
            EXPECT_EQ(candidates.sorted, k > 0);
        }
    }
}

TEST(SamplingStages, TopPMatchesReference) {
    for (const auto &logits : logit_sets()) {
        for (float p : {0.0f, 0.1f, 0.5f, 0.9f, 0.999f, 1.0f}) {
            SCOPED_TRACE(testing::Message() << "n " << logits.size() << " p " << p);
            Candidates candidates = candidates_of(logits);
            top_p(candidates, p);
            expect_matches(candidates, ref_top_p(logits, p), p < 1.0f, p < 1.0f);
        }
    }
}

TEST(SamplingStages, MinPMatchesReference) {
    for (const auto &logits : logit_sets()) {
        for (float p : {-1.0f, 0.0f, 0.01f, 0.1f, 0.5f, 1.0f, 1.5f}) {
            SCOPED_TRACE(testing::Message() << "n " << logits.size() << " p " << p);
            Candidates candidates = candidates_of(logits);
            min_p(candidates, p);
            expect_matches(candidates, ref_min_p(logits, p), false, false);
        }
    }
}

TEST(SamplingStages, TypicalMatchesReference) {
    for (const auto &logits : logit_sets()) {
        for (float p : {0.0f, 0.2f, 0.5f, 0.9f, 0.99f, 1.0f}) {
            SCOPED_TRACE(testing::Message() << "n " << logits.size() << " p " << p);
            Candidates candidates = candidates_of(logits);
            typical(candidates, p);
            expect_matches(candidates, ref_typical(logits, p), p < 1.0f, p < 1.0f);
        }
    }
}

TEST(SamplingStages, TemperatureDividesLogitsAndKeepsOrder) {
    const std::vector<float> logits = random_logits(100, 4);
    for (float t : {0.1f, 0.7f, 1.0f, 2.0f}) {
        Candidates candidates = candidates_of(logits);
        top_k(candidates, 10);
        temperature(candidates, t);
        Ref want = ref_top_k(logits, 10);
        for (auto &token : want) token.logit /= t;
        expect_matches(candidates, want, true, false);
        EXPECT_TRUE(candidates.sorted);
    }
}

TEST(SamplingStages, EmptyListStaysEmpty) {
    Candidates candidates;
    top_k(candidates, 5);
    typical(candidates, 0.5f);
    top_p(candidates, 0.5f);
    min_p(candidates, 0.5f);
    softmax(candidates);
    EXPECT_TRUE(candidates.data.empty());
}

}  // namespace
}  // namespace loom::engine
