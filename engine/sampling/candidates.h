#pragma once
// The candidate list for one position: the unit every sampling stage reads and narrows.
#include <cstdint>
#include <span>
#include <vector>

namespace loom::engine {

struct TokenProb {
    int32_t id;
    float logit;
    float p;  // set by softmax(); stale once a stage changes the logits
};

struct Candidates {
    std::vector<TokenProb> data;
    bool sorted = false;  // logits non-increasing along data
};

// The order every sort uses: higher logit first, then lower id, so results never depend on
// the standard library's sort. Candidates never hold NaN (fill_candidates turns it into -inf),
// which keeps this a strict weak order.
inline bool more_likely(const TokenProb &a, const TokenProb &b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// One candidate per logit, in id order (so data[id].id == id). A NaN logit becomes -inf.
void fill_candidates(Candidates &candidates, std::span<const float> logits);

// Removes the candidates with a -inf logit: they can never be chosen.
void drop_impossible(Candidates &candidates);

// Sorts by more_likely() unless the list is already sorted.
void sort_by_logit(Candidates &candidates);

// Sets each p to the softmax of the logits, leaving the order alone. When the largest logit is
// infinite, exp(logit - max) is undefined, so the tokens at that maximum share the probability
// equally.
void normalize(Candidates &candidates);

// sort_by_logit(), then normalize().
void softmax(Candidates &candidates);

}  // namespace loom::engine
