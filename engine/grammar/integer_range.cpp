#include "engine/grammar/integer_range.h"

#include <algorithm>
#include <vector>

namespace loom::engine::grammar {
namespace {

std::string join(const std::vector<std::string> &alternatives) {
    if (alternatives.size() == 1) return alternatives[0];
    std::string out = "(";
    for (size_t i = 0; i < alternatives.size(); ++i) out += (i > 0 ? " | " : " ") + alternatives[i];
    return out + " )";
}

std::string digit_class(char lo, char hi) {
    if (lo == hi) return std::string("\"") + lo + "\"";
    return std::string("[") + lo + "-" + hi + "]";
}

// Digit strings of one length from a to b (a <= b), every position free of the no-leading-zero
// rule (the caller's numbers of this length start with a non-zero digit, or are one digit).
std::string same_length(const std::string &a, const std::string &b) {
    if (a.empty()) return "";
    const size_t rest = a.size() - 1;
    const std::string tail_a = a.substr(1), tail_b = b.substr(1);
    if (a[0] == b[0]) {
        const std::string tail = same_length(tail_a, tail_b);
        return digit_class(a[0], a[0]) + (tail.empty() ? "" : " " + tail);
    }
    // a's first digit with the tails from a's up, the digits between with any tails, b's first
    // digit with the tails up to b's; a tail of zeros (or nines) joins the middle run instead.
    const bool a_from_zero =
        std::all_of(tail_a.begin(), tail_a.end(), [](char c) { return c == '0'; });
    const bool b_to_nine =
        std::all_of(tail_b.begin(), tail_b.end(), [](char c) { return c == '9'; });
    std::vector<std::string> alternatives;
    if (!a_from_zero) {
        alternatives.push_back(digit_class(a[0], a[0]) + " " +
                               same_length(tail_a, std::string(rest, '9')));
    }
    const char mid_lo = a_from_zero ? a[0] : char(a[0] + 1);
    const char mid_hi = b_to_nine ? b[0] : char(b[0] - 1);
    if (mid_lo <= mid_hi) {
        std::string run = digit_class(mid_lo, mid_hi);
        if (rest > 0) run += " [0-9]{" + std::to_string(rest) + "}";
        alternatives.push_back(run);
    }
    if (!b_to_nine) {
        alternatives.push_back(digit_class(b[0], b[0]) + " " +
                               same_length(std::string(rest, '0'), tail_b));
    }
    return join(alternatives);
}

// 0 <= a <= b <= kMaxIntegerMagnitude.
std::string unsigned_range(int64_t a, int64_t b) {
    std::vector<std::string> alternatives;
    int64_t first = 0, last = 9;  // of the numbers with `digits` digits
    for (int digits = 1; digits <= kMaxIntegerDigits; ++digits) {
        const int64_t lo = std::max(a, first), hi = std::min(b, last);
        if (lo <= hi) alternatives.push_back(same_length(std::to_string(lo), std::to_string(hi)));
        if (digits < kMaxIntegerDigits) first = last + 1, last = last * 10 + 9;
    }
    return join(alternatives);
}

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
    const int64_t a =
        std::clamp(lo.value_or(-kMaxIntegerMagnitude), -kMaxIntegerMagnitude, kMaxIntegerMagnitude);
    const int64_t b =
        std::clamp(hi.value_or(kMaxIntegerMagnitude), -kMaxIntegerMagnitude, kMaxIntegerMagnitude);
    std::vector<std::string> alternatives;
    if (b >= 0) alternatives.push_back(unsigned_range(std::max<int64_t>(a, 0), b));
    if (a < 0) alternatives.push_back("\"-\" " + unsigned_range(std::max<int64_t>(1, -b), -a));
    return join(alternatives);
}

}  // namespace loom::engine::grammar
