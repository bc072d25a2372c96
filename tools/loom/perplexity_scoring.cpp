#include "tools/loom/perplexity_scoring.h"

#include <algorithm>
#include <cmath>

namespace loom::tools {
namespace {

// log sum exp(logits - max) and the max.
std::pair<double, float> log_sum_exp(std::span<const float> logits) {
    const float max = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (const float l : logits) sum += std::exp(double(l) - double(max));
    return {std::log(sum), max};
}

}  // namespace

double token_nll(std::span<const float> logits, int32_t token) {
    const auto [lse, max] = log_sum_exp(logits);
    return -(double(logits[size_t(token)]) - double(max) - lse);
}

double kl_divergence(std::span<const float> base, std::span<const float> logits) {
    const auto [lse_p, max_p] = log_sum_exp(base);
    const auto [lse_q, max_q] = log_sum_exp(logits);
    double kl = 0.0;
    for (size_t i = 0; i < base.size(); ++i) {
        const double log_p = double(base[i]) - double(max_p) - lse_p;
        const double log_q = double(logits[i]) - double(max_q) - lse_q;
        kl += std::exp(log_p) * (log_p - log_q);
    }
    return std::max(kl, 0.0);  // rounding can leave -1e-17 where the two are equal
}

double RunningMean::standard_error() const {
    if (n_ < 2) return 0.0;
    const double m = mean();
    const double var = std::max(0.0, sum_sq_ / double(n_) - m * m);
    return std::sqrt(var / double(n_ - 1));
}

Perplexity perplexity_of(const RunningMean &nll) {
    const double ppl = std::exp(nll.mean());
    return {ppl, nll.standard_error() * ppl};
}

}  // namespace loom::tools
