#include "engine/context/pooling.h"

#include <cmath>

#include "loom/error.h"

namespace loom::engine {

std::vector<float> pool(std::span<const float> rows, int64_t n_embd, Pooling pooling) {
    if (n_embd <= 0 || rows.empty() || rows.size() % size_t(n_embd) != 0) {
        fail("pooling", "{} floats are no whole rows of {}", rows.size(), n_embd);
    }
    const size_t n = rows.size() / size_t(n_embd), width = size_t(n_embd);
    switch (pooling) {
        case Pooling::mean: {
            // Summed in double, then divided: the order of n rows does not round the result.
            std::vector<double> sum(width, 0.0);
            for (size_t r = 0; r < n; ++r) {
                for (size_t i = 0; i < width; ++i) sum[i] += rows[r * width + i];
            }
            std::vector<float> out(width);
            for (size_t i = 0; i < width; ++i) out[i] = float(sum[i] / double(n));
            return out;
        }
        case Pooling::cls:
            return {rows.begin(), rows.begin() + long(width)};
        case Pooling::last:
            return {rows.end() - long(width), rows.end()};
        case Pooling::none:
            fail("pooling", "pooling 'none' keeps one embedding per token");
        case Pooling::rank:
            fail("pooling", "rank pooling (a reranker's classifier head) is not supported yet");
    }
    fail("pooling", "unknown pooling type {}", int(pooling));
}

void l2_normalize(std::span<float> v) {
    double sum = 0.0;
    for (const float x : v) sum += double(x) * double(x);
    if (sum == 0.0) return;
    const double scale = 1.0 / std::sqrt(sum);
    for (float &x : v) x = float(double(x) * scale);
}

}  // namespace loom::engine
