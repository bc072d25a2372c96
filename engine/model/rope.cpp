#include "engine/model/rope.h"

#include <cmath>

namespace loom::engine {
namespace {

// YaRN's magnitude for a scale s: 0.1 * mscale * ln(s) + 1, 1 for no stretch.
float yarn_mscale(float scale, float mscale) {
    return scale <= 1.0f ? 1.0f : 0.1f * mscale * std::log(scale) + 1.0f;
}

}  // namespace

RopeParams rope_params(const Model &model, int64_t il) {
    const HParams &hp = model.hparams();
    RopeParams p{.n_dims = int32_t(hp.n_rot),
                 .mode = model.arch().rope_mode,
                 .n_ctx_orig = int32_t(hp.n_ctx_orig),
                 .freq_base = hp.rope_freq_base,
                 .freq_scale = hp.rope_freq_scale,
                 .ext_factor = hp.rope_scaling == RopeScaling::yarn ? 1.0f : 0.0f};
    if (p.ext_factor != 0.0f) {
        const float factor = 1.0f / p.freq_scale;
        p.attn_factor = hp.yarn_log_mul != 0.0f ? yarn_mscale(factor, hp.yarn_mscale) /
                                                      yarn_mscale(factor, hp.yarn_log_mul)
                                                : yarn_mscale(factor, 1.0f);
        // The kernel multiplies cos and sin by 1 + 0.1 ln(factor) wherever ext_factor is set
        // (ggml's rope_yarn); llama.cpp divides it out here, and so must Loom to match.
        p.attn_factor *= 1.0f / (1.0f + 0.1f * std::log(factor));
    }
    p.attn_factor *= hp.rope_attn_factor;
    if (il >= 0 && hp.is_swa(il)) {
        p.freq_base = hp.rope_freq_base_swa;
        p.freq_scale = hp.rope_freq_scale_swa;
    }
    return p;
}

RopeParams rope_shift_params(const Model &model, int64_t il) {
    RopeParams p = rope_params(model, il);
    // The kernel's own correction where ext_factor is set, divided out.
    p.attn_factor =
        p.ext_factor != 0.0f ? 1.0f / (1.0f + 0.1f * std::log(1.0f / p.freq_scale)) : 1.0f;
    return p;
}

Tensor *rope_factors(const Model &model, int64_t n_ctx_seq) {
    const ModelWeights &w = model.weights();
    if (w.rope_factors != nullptr) return w.rope_factors;
    return n_ctx_seq > model.hparams().n_ctx_orig ? w.rope_factors_long : w.rope_factors_short;
}

float yarn_kq_mscale2(const Model &model) {
    const RopeParams p = rope_params(model);
    const float attn_factor_orig = p.attn_factor * (1.0f + 0.1f * std::log(1.0f / p.freq_scale));
    const float mscale = attn_factor_orig * (1.0f + 0.1f * model.hparams().yarn_log_mul *
                                                        std::log(1.0f / p.freq_scale));
    return mscale * mscale;
}

}  // namespace loom::engine
