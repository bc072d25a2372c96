#pragma once
// Repetition penalties: the recent token history and the logit adjustments it drives.
#include <cstdint>
#include <deque>
#include <unordered_map>

#include "engine/sampling/candidates.h"

namespace loom::engine {

using TokenCounts = std::unordered_map<int32_t, int32_t>;  // token id -> occurrences

// The last `window` tokens pushed and how often each occurs among them.
// window -1: every token since the last clear(); window 0: remembers nothing.
class TokenHistory {
  public:
    explicit TokenHistory(int32_t window) : window_(window) {}
    void push(int32_t token);
    void clear();
    const TokenCounts &counts() const { return counts_; }

  private:
    int32_t window_;
    std::deque<int32_t> tokens_;  // oldest first; only kept when the window is bounded
    TokenCounts counts_;
};

struct PenaltyParams {
    float repeat = 1.0f;     // 1: off
    float frequency = 0.0f;  // 0: off
    float presence = 0.0f;   // 0: off
    bool any() const { return repeat != 1.0f || frequency != 0.0f || presence != 0.0f; }
};

// For each distinct token in counts, once: a positive logit is divided by the repeat penalty and
// a non-positive one multiplied by it, then count * frequency + presence is subtracted. Tokens
// that are not among the candidates are ignored.
void apply_penalties(Candidates &candidates, const TokenCounts &counts,
                     const PenaltyParams &params);

}  // namespace loom::engine
