#pragma once
// The decimal forms of the integers in a range, as a GBNF expression: JSON Schema's `minimum` and
// `maximum` on an integer (json_schema.h). A range is split by digit count, and each part into
// runs that share leading digits: [25, 341] is "2" [5-9] | [3-9] [0-9] | "1" [0-9]{2} | "2"
// [0-9]{2} | "3" ( [0-3] [0-9] | "4" [0-1] ), roughly. No leading zeros, no "-0"; at most
// kMaxDigits digits, as the unbounded integer rule.
#include <cstdint>
#include <optional>
#include <string>

namespace loom::engine::grammar {

inline constexpr int kMaxIntegerDigits = 16;
inline constexpr int64_t kMaxIntegerMagnitude = 9'999'999'999'999'999;  // 16 nines

// The integers in [lo, hi], a missing bound meaning as far as kMaxIntegerDigits digits go; the
// bounds are clamped to ±kMaxIntegerMagnitude. Needs lo <= hi after clamping.
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace loom::engine::grammar
