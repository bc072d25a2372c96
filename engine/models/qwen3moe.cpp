// Qwen3-MoE: Qwen3's attention (per-head Q/K RMS norms, NeoX rotary positions) with a mixture of
// SwiGLU experts in every layer, weighted by the router's softmax renormalised over the chosen k.
#include "engine/models/llama.h"

namespace loom::engine {
namespace {

void load_qwen3moe(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    load_llama_weights(w, hp, m, {.qk_norm = true, .ffn = FfnKind::moe});
}

}  // namespace

extern const ArchDescriptor kArch_qwen3moe{.name = "qwen3moe",
                                           .rope_mode = RopeMode::neox,
                                           .load_weights = load_qwen3moe,
                                           .build_graph = build_llama_graph};

}  // namespace loom::engine
