// The sampler chain and the seeded draw.
#include "engine/sampling/sampler.h"

#include <cmath>
#include <limits>
#include <sstream>

#include "engine/sampling/stages.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

const SamplingParams &validated(const SamplingParams &params) {
    const float floats[] = {params.temperature,     params.top_p,          params.min_p,
                            params.typical_p,       params.repeat_penalty, params.frequency_penalty,
                            params.presence_penalty};
    for (float value : floats) {
        if (!std::isfinite(value)) fail("sampling", "parameter is not a finite number: {}", value);
    }
    if (params.repeat_penalty <= 0.0f) {
        fail("sampling", "repeat_penalty must be > 0, got {}", params.repeat_penalty);
    }
    if (params.penalty_last_n < -1) {
        fail("sampling", "penalty_last_n must be >= -1, got {}", params.penalty_last_n);
    }
    for (const auto &[token, bias] : params.logit_bias) {
        if (token < 0) fail("sampling", "logit bias of token {}: ids start at 0", token);
        if (std::isnan(bias) || bias == std::numeric_limits<float>::infinity()) {
            fail("sampling", "logit bias of token {} is {}: a number or -inf", token, bias);
        }
    }
    return params;
}

}  // namespace

Sampler::Sampler(const SamplingParams &params)
    : params_(validated(params)), history_(params.penalty_last_n) {
    reset();
}

void Sampler::reset() {
    history_.clear();
    seed_ = params_.seed == kRandomSeed ? std::random_device{}() : params_.seed;
    // Both halves of the 64-bit seed matter: seeds differing only above bit 32 differ.
    std::seed_seq sequence{static_cast<uint32_t>(seed_), static_cast<uint32_t>(seed_ >> 32)};
    rng_.seed(sequence);
}

int32_t Sampler::sample(std::span<const float> logits, const TokenConstraint *constraint) {
    const int32_t token = pick(logits);
    if (constraint == nullptr || constraint->allows(token)) return token;
    allowed_.assign(logits.size(), 0);
    constraint->mark_allowed(allowed_);
    allowed_logits_.assign(logits.begin(), logits.end());
    bool any = false;
    for (size_t id = 0; id < allowed_logits_.size(); ++id) {
        if (allowed_[id] != 0) {
            any = true;
        } else {
            allowed_logits_[id] = -std::numeric_limits<float>::infinity();
        }
    }
    if (!any) fail("grammar", "no token of the {} can continue the text", logits.size());
    return pick(allowed_logits_);
}

int32_t Sampler::pick(std::span<const float> logits) {
    if (logits.empty()) fail("sampling", "no logits to sample from");
    fill_candidates(candidates_, logits);
    // First in the chain, as llama.cpp's; a ban stays a ban on a +inf logit (not NaN).
    constexpr float kBanned = -std::numeric_limits<float>::infinity();
    for (const auto &[token, bias] : params_.logit_bias) {
        if (size_t(token) >= logits.size()) {
            fail("sampling", "logit bias of token {}: the vocabulary has {} tokens", token,
                 logits.size());
        }
        float &logit = candidates_.data[size_t(token)].logit;
        logit = bias == kBanned ? kBanned : logit + bias;
    }
    const PenaltyParams penalties{.repeat = params_.repeat_penalty,
                                  .frequency = params_.frequency_penalty,
                                  .presence = params_.presence_penalty};
    // Before drop_impossible, while data[id].id == id makes each lookup direct.
    if (penalties.any()) apply_penalties(candidates_, history_.counts(), penalties);
    drop_impossible(candidates_);
    if (candidates_.data.empty()) {
        fail("sampling", "all {} logits are -inf or NaN: no token can be chosen", logits.size());
    }

    top_k(candidates_, params_.top_k);
    if (params_.temperature <= 0.0f) {
        softmax(candidates_);  // sorted by more_likely(): the lowest id wins a tie
        return candidates_.data.front().id;
    }
    typical(candidates_, params_.typical_p);
    top_p(candidates_, params_.top_p);
    min_p(candidates_, params_.min_p);
    temperature(candidates_, params_.temperature);
    softmax(candidates_);
    return draw();
}

// Inverse CDF over the candidates, most likely first. u comes from one raw 32-bit output of the
// generator rather than a std:: distribution, whose algorithms differ between standard
// libraries, so a seed gives the same tokens everywhere.
int32_t Sampler::draw() {
    const auto &data = candidates_.data;
    double total = 0.0;
    for (const auto &c : data) total += c.p;
    const double target = static_cast<double>(rng_()) * 0x1p-32 * total;  // in [0, total)
    // Summed in the same order as total, so the walk ends at or before the last candidate, on
    // one with p > 0.
    size_t i = 0;
    double mass = data[0].p;
    while (mass <= target && i + 1 < data.size()) mass += data[++i].p;
    return data[i].id;
}

std::string Sampler::rng_state() const {
    std::ostringstream out;
    out << rng_;
    return out.str();
}

void Sampler::set_rng_state(const std::string &state) {
    std::istringstream in(state);
    std::mt19937 rng;
    in >> rng;
    if (in.fail()) fail("state", "the saved sampler state is not a generator's");
    rng_ = rng;
}

}  // namespace loom::engine
