#pragma once
// Picks the next token from a position's logits with llama.cpp's default chain:
//   logit bias -> penalties -> top-k -> typical -> top-p -> min-p -> temperature -> seeded draw.
// NaN logits are treated as -inf, and -inf logits are never chosen; when every logit is one of
// them, sample() throws loom::Error. Tokens at +inf share all the probability equally.
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "engine/sampling/candidates.h"
#include "engine/sampling/constraint.h"
#include "engine/sampling/penalties.h"

namespace loom::engine {

// llama.cpp's LLAMA_DEFAULT_SEED: the Sampler takes its seed from std::random_device.
inline constexpr uint64_t kRandomSeed = 0xFFFFFFFF;

// llama.cpp's defaults.
struct SamplingParams {
    float temperature = 0.8f;     // <= 0: greedy (argmax, ties to the lowest id)
    int32_t top_k = 40;           // <= 0: off
    float top_p = 0.95f;          // >= 1: off
    float min_p = 0.05f;          // <= 0: off
    float typical_p = 1.0f;       // >= 1: off
    float repeat_penalty = 1.0f;  // 1: off; must be > 0
    float frequency_penalty = 0.0f, presence_penalty = 0.0f;
    int32_t penalty_last_n = 64;  // history the penalties see; -1: every accepted token, 0: none
    uint64_t seed = kRandomSeed;  // any other value makes the draws deterministic
    // Added to the named tokens' logits before everything else (OpenAI's logit_bias); -inf bans
    // a token. A token past the logits is an error at sample().
    std::vector<std::pair<int32_t, float>> logit_bias;
};

class Sampler {
  public:
    // Throws loom::Error for a non-finite float, repeat_penalty <= 0 or penalty_last_n < -1.
    explicit Sampler(const SamplingParams &params);

    // Picks the next token from one position's logits (n_vocab floats); does not record it.
    // Greedy (temperature <= 0) takes the argmax of the penalized logits and skips the draw.
    // Under a constraint the token is one it allows: the token picked from all the logits when
    // the constraint allows it (the usual case, and the only token checked), else one picked
    // again with every token it refuses at -inf. Greedy, that is the likeliest allowed token;
    // drawn, a token the first draw would give with probability p comes out with probability
    // p / (the allowed tokens' total), as from the allowed tokens alone (exactly so when top-k,
    // top-p and min-p keep the same allowed tokens both times). Throws loom::Error when the
    // constraint allows no token.
    int32_t sample(std::span<const float> logits, const TokenConstraint *constraint = nullptr);

    // Records a token in the history the penalties use (prompt tokens too, if the caller wants).
    void accept(int32_t token) { history_.push(token); }

    // Clears the history and re-seeds: the same draws again for a fixed seed, a new random
    // seed for kRandomSeed.
    void reset();

    // The candidates left after the last sample(), most likely first, with the logits and
    // probabilities the draw used (after penalties, truncation and temperature). Greedy
    // reports the top-k (all tokens if top_k <= 0) at temperature 1.
    std::span<const TokenProb> candidates() const { return candidates_.data; }

    const SamplingParams &params() const { return params_; }
    uint64_t seed() const { return seed_; }  // the seed in use, random or not
    // The draw's generator as text, and back: a saved sequence resumes the same draws.
    // set_rng_state throws loom::Error("[state] ...") for text that is not one.
    std::string rng_state() const;
    void set_rng_state(const std::string &state);

  private:
    int32_t pick(std::span<const float> logits);
    int32_t draw();

    SamplingParams params_;
    TokenHistory history_;
    Candidates candidates_;              // reused between calls: one allocation of n_vocab entries
    std::vector<float> allowed_logits_;  // the logits a constraint left, when it refused a pick
    std::vector<uint8_t> allowed_;
    uint64_t seed_ = 0;
    std::mt19937 rng_;
};

}  // namespace loom::engine
