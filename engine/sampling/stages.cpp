// The truncation and scaling stages; the order they run in is the Sampler's business.
#include "engine/sampling/stages.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "loom/error.h"

namespace loom::engine {

void top_k(Candidates &candidates, int32_t k) {
    auto &data = candidates.data;
    if (k <= 0 || data.empty()) return;
    const size_t keep = std::min(static_cast<size_t>(k), data.size());
    if (!candidates.sorted) {
        // A heap of the k best seen so far: one comparison for most of a 256k vocabulary, and
        // several times faster than nth_element + sort when k is small.
        std::partial_sort(data.begin(), data.begin() + keep, data.end(), more_likely);
        candidates.sorted = true;
    }
    data.resize(keep);
}

void typical(Candidates &candidates, float p) {
    auto &data = candidates.data;
    if (p >= 1.0f || data.empty()) return;
    normalize(candidates);
    double entropy = 0.0;
    for (const auto &c : data) {
        if (c.p > 0.0f) entropy -= c.p * std::log(static_cast<double>(c.p));
    }
    std::vector<double> distance(data.size());  // |surprise - entropy|; infinite when p == 0
    for (size_t i = 0; i < data.size(); ++i) {
        distance[i] = std::abs(-std::log(static_cast<double>(data[i].p)) - entropy);
    }
    std::vector<size_t> order(data.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (distance[a] != distance[b]) return distance[a] < distance[b];
        return more_likely(data[a], data[b]);
    });
    size_t keep = order.size();
    double mass = 0.0;
    for (size_t i = 0; i < order.size(); ++i) {
        mass += data[order[i]].p;
        if (mass > p) {
            keep = i + 1;
            break;
        }
    }
    std::vector<TokenProb> kept(keep);
    for (size_t i = 0; i < keep; ++i) kept[i] = data[order[i]];
    data = std::move(kept);
    candidates.sorted = false;
}

void top_p(Candidates &candidates, float p) {
    auto &data = candidates.data;
    if (p >= 1.0f || data.empty()) return;
    normalize(candidates);
    // The nucleus is usually a small part of a large vocabulary, so sort only as long a prefix
    // as the walk needs, growing it 8x at a time from 256.
    size_t sorted_prefix = candidates.sorted ? data.size() : 0;
    size_t keep = 0;
    double mass = 0.0;
    do {
        if (keep == sorted_prefix) {
            const auto rest = data.begin() + sorted_prefix;
            const size_t grown = std::max<size_t>(256, 8 * sorted_prefix);
            // partial_sort is a heap sort: slower than a plain sort once the prefix is large.
            if (grown * 4 >= data.size()) {
                std::sort(rest, data.end(), more_likely);
                sorted_prefix = data.size();
            } else {
                std::partial_sort(rest, data.begin() + grown, data.end(), more_likely);
                sorted_prefix = grown;
            }
        }
        mass += data[keep++].p;
    } while (mass < p && keep < data.size());
    data.resize(keep);
    candidates.sorted = true;
}

void min_p(Candidates &candidates, float p) {
    auto &data = candidates.data;
    if (p <= 0.0f || data.empty()) return;
    // p_i >= p * p_max  <=>  logit_i >= logit_max + log(p): no softmax needed. Erasing keeps
    // the order, and the maximum itself always passes since log(min(p, 1)) <= 0.
    const float max_logit = std::max_element(data.begin(), data.end(), [](auto &a, auto &b) {
                                return a.logit < b.logit;
                            })->logit;
    const float threshold = max_logit + std::log(std::min(p, 1.0f));
    std::erase_if(data, [&](const TokenProb &c) { return c.logit < threshold; });
}

void temperature(Candidates &candidates, float t) {
    LOOM_ASSERT(t > 0.0f);
    for (auto &c : candidates.data) c.logit /= t;
}

}  // namespace loom::engine
