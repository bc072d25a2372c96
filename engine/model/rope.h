#pragma once
// What a model's rotary embedding computes: its architecture's mode, its frequencies and their
// scaling (engine/model/hparams.h, RopeScaling), turned into rope_ext's parameters as llama.cpp's
// context turns them.
#include <cstdint>

#include "engine/model/model.h"

namespace loom::engine {

// For YaRN: ext_factor 1, and attn_factor such that the kernel's magnitude correction
// (1 + 0.1 ln(1/freq_scale)) ends up as YaRN's mscale (mscale_all_dim in the ratio where the
// architecture stores it), times the file's own rope.scaling.attn_factor. A sliding-window
// layer il takes rope.freq_base_swa and its own frequency scale (the magnitude stays the
// model's, as in llama.cpp); il < 0: the full-attention layers' parameters.
RopeParams rope_params(const Model &model, int64_t il = -1);

// The rotation of cached K by a position delta (a context shift): rope_params with the magnitude
// left at 1, since K got YaRN's mscale and attn_factor when it was computed. (llama.cpp passes
// its attn_factor here too, and so scales K once more at every shift.)
RopeParams rope_shift_params(const Model &model, int64_t il);

// The per-dimension frequency factors F32 [n_rot / 2] for a context of n_ctx_seq cells per
// sequence: Llama 3's rope_freqs, or LongRoPE's long factors where the context is longer than
// the original one and its short factors where not; null when the model has none.
Tensor *rope_factors(const Model &model, int64_t n_ctx_seq);

// DeepSeek's attention scale for YaRN: mscale = attn_factor_orig * (1 + 0.1 * mscale_all_dim *
// ln(1/freq_scale)), where attn_factor_orig undoes the correction rope_params took out; the
// scores are multiplied by mscale^2 (1 without scaling).
float yarn_kq_mscale2(const Model &model);

}  // namespace loom::engine
