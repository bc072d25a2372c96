// Building, sorting and normalizing a candidate list.
#include "engine/sampling/candidates.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace loom::engine {
namespace {

constexpr float minus_inf = -std::numeric_limits<float>::infinity();

}  // namespace

void fill_candidates(Candidates &candidates, std::span<const float> logits) {
    candidates.data.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) {
        const float logit = std::isnan(logits[i]) ? minus_inf : logits[i];
        candidates.data[i] = {.id = static_cast<int32_t>(i), .logit = logit, .p = 0.0f};
    }
    candidates.sorted = false;
}

void drop_impossible(Candidates &candidates) {
    std::erase_if(candidates.data, [](const TokenProb &c) { return c.logit == minus_inf; });
}

void sort_by_logit(Candidates &candidates) {
    if (candidates.sorted) return;
    std::sort(candidates.data.begin(), candidates.data.end(), more_likely);
    candidates.sorted = true;
}

void normalize(Candidates &candidates) {
    auto &data = candidates.data;
    if (data.empty()) return;
    const float max_logit = std::max_element(data.begin(), data.end(), [](auto &a, auto &b) {
                                return a.logit < b.logit;
                            })->logit;
    if (std::isinf(max_logit)) {
        const auto n_at_max = std::count_if(
            data.begin(), data.end(), [&](const TokenProb &c) { return c.logit == max_logit; });
        for (auto &c : data) c.p = c.logit == max_logit ? 1.0f / n_at_max : 0.0f;
        return;
    }
    double sum = 0.0;
    for (auto &c : data) {
        c.p = std::exp(c.logit - max_logit);
        sum += c.p;
    }
    for (auto &c : data) c.p = static_cast<float>(c.p / sum);
}

void softmax(Candidates &candidates) {
    sort_by_logit(candidates);
    normalize(candidates);
}

}  // namespace loom::engine
