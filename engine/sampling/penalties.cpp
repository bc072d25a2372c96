// Token history and repetition penalties.
#include "engine/sampling/penalties.h"

#include <algorithm>

namespace loom::engine {
namespace {

// A fresh list has data[id].id == id, which finds a token at once; otherwise search.
TokenProb *find_candidate(Candidates &candidates, int32_t token) {
    auto &data = candidates.data;
    if (token >= 0 && static_cast<size_t>(token) < data.size() && data[token].id == token) {
        return &data[token];
    }
    auto it =
        std::find_if(data.begin(), data.end(), [&](const TokenProb &c) { return c.id == token; });
    return it == data.end() ? nullptr : &*it;
}

}  // namespace

void TokenHistory::push(int32_t token) {
    if (window_ == 0) return;
    ++counts_[token];
    if (window_ < 0) return;
    tokens_.push_back(token);
    if (tokens_.size() > static_cast<size_t>(window_)) {
        const int32_t oldest = tokens_.front();
        tokens_.pop_front();
        if (--counts_[oldest] == 0) counts_.erase(oldest);
    }
}

void TokenHistory::clear() {
    tokens_.clear();
    counts_.clear();
}

void apply_penalties(Candidates &candidates, const TokenCounts &counts,
                     const PenaltyParams &params) {
    for (const auto &[token, count] : counts) {
        TokenProb *candidate = find_candidate(candidates, token);
        if (candidate == nullptr || count <= 0) continue;
        float &logit = candidate->logit;
        logit = logit <= 0.0f ? logit * params.repeat : logit / params.repeat;
        logit -= static_cast<float>(count) * params.frequency + params.presence;
        candidates.sorted = false;
    }
}

}  // namespace loom::engine
