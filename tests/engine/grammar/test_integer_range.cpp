// integer_range_gbnf: the grammar of a range accepts the decimal form of an integer exactly when
// arithmetic says the integer is in the range, on every integer near the bounds and at random.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/integer_range.h"
#include "engine/grammar/matcher.h"

namespace loom::engine::grammar {
namespace {

bool accepts(const Grammar &grammar, const std::string &text) {
    Matcher matcher(grammar);
    if (!matcher.allows(text)) return false;
    matcher.accept(text);
    return matcher.can_end();
}

Grammar range_grammar(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    return parse_gbnf("root ::= " + integer_range_gbnf(lo, hi) + "\n");
}

// Every integer in [from, to] and a few far ones: accepted exactly when within [lo, hi].
void expect_range(std::optional<int64_t> lo, std::optional<int64_t> hi, int64_t from, int64_t to) {
    const Grammar g = range_grammar(lo, hi);
    const int64_t a = lo.value_or(-kMaxIntegerMagnitude), b = hi.value_or(kMaxIntegerMagnitude);
    auto check = [&](int64_t v) {
        const bool in = v >= a && v <= b && v >= -kMaxIntegerMagnitude && v <= kMaxIntegerMagnitude;
        ASSERT_EQ(accepts(g, std::to_string(v)), in)
            << v << " in [" << (lo ? std::to_string(*lo) : "-inf") << ", "
            << (hi ? std::to_string(*hi) : "inf") << "]";
    };
    for (int64_t v = from; v <= to; ++v) check(v);
    for (const int64_t v : {kMaxIntegerMagnitude, -kMaxIntegerMagnitude, int64_t(1e15),
                            int64_t(-1e15), int64_t(123456789012), int64_t(-99999)}) {
        check(v);
    }
    EXPECT_FALSE(accepts(g, "-0"));
    EXPECT_FALSE(accepts(g, "007"));
    EXPECT_FALSE(accepts(g, "10000000000000000"));  // 17 digits
}

TEST(IntegerRange, BoundedRangesAgreeWithArithmetic) {
    expect_range(25, 341, -50, 1200);
    expect_range(0, 0, -20, 20);
    expect_range(-7, -7, -20, 20);
    expect_range(-1200, 35, -1500, 1500);
    expect_range(1000, 1000, 900, 1100);
    expect_range(-999, -100, -1200, 100);
    expect_range(9, 10, -20, 120);
    expect_range(99, 100, 0, 1200);
    expect_range(1, 1999, -10, 2500);
}

TEST(IntegerRange, OpenBoundsGoToSixteenDigits) {
    expect_range(0, std::nullopt, -300, 300);
    expect_range(1, std::nullopt, -300, 300);
    expect_range(-5, std::nullopt, -300, 300);
    expect_range(250, std::nullopt, -300, 1300);
    expect_range(std::nullopt, 0, -300, 300);
    expect_range(std::nullopt, -17, -300, 300);
    expect_range(std::nullopt, 4321, 4000, 5000);
    expect_range(std::nullopt, std::nullopt, -300, 300);
}

TEST(IntegerRange, RandomRangesAgreeWithArithmetic) {
    std::mt19937_64 rng(11);
    for (int i = 0; i < 40; ++i) {
        const int magnitude = int(rng() % 6);  // bounds of up to 6 digits
        int64_t scale = 1;
        for (int d = 0; d < magnitude; ++d) scale *= 10;
        int64_t a = int64_t(rng() % uint64_t(2 * scale + 1)) - scale;
        int64_t b = int64_t(rng() % uint64_t(2 * scale + 1)) - scale;
        if (a > b) std::swap(a, b);
        const Grammar g = range_grammar(a, b);
        for (int k = 0; k < 300; ++k) {
            const int64_t v = int64_t(rng() % uint64_t(4 * scale + 41)) - 2 * scale - 20;
            ASSERT_EQ(accepts(g, std::to_string(v)), v >= a && v <= b)
                << v << " in [" << a << ", " << b << "]";
        }
        ASSERT_TRUE(accepts(g, std::to_string(a)));
        ASSERT_TRUE(accepts(g, std::to_string(b)));
    }
}

}  // namespace
}  // namespace loom::engine::grammar
