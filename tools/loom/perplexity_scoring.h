#pragma once
// The arithmetic of `loom perplexity`: the negative log-likelihood of a token under a row of
// logits, running perplexity with llama-perplexity's uncertainty, and the KL divergence of one
// model's next-token distribution from another's.
#include <cstdint>
#include <span>

namespace loom::tools {

// -log softmax(logits)[token], summed in double.
double token_nll(std::span<const float> logits, int32_t token);

// KL(p || q) for p = softmax(base), q = softmax(logits), in double.
double kl_divergence(std::span<const float> base, std::span<const float> logits);

// Sums of per-token values, giving their mean and the standard error of the mean.
class RunningMean {
  public:
    void add(double x) {
        sum_ += x;
        sum_sq_ += x * x;
        ++n_;
    }
    int64_t count() const { return n_; }
    double mean() const { return n_ > 0 ? sum_ / double(n_) : 0.0; }
    // sqrt(var / (n - 1)), 0 with fewer than two values
    double standard_error() const;

  private:
    double sum_ = 0.0, sum_sq_ = 0.0;
    int64_t n_ = 0;
};

// exp(mean NLL), and its ± as llama-perplexity reports it: the standard error of the mean NLL
// times the perplexity.
struct Perplexity {
    double value, error;
};
Perplexity perplexity_of(const RunningMean &nll);

}  // namespace loom::tools
