// Qwen2-MoE: Qwen2's attention (Q/K/V biases, NeoX rotary positions) with a mixture of SwiGLU
// experts in every layer, whose weights are the router's softmax probabilities as they are (not
// renormalised over the chosen k), plus a shared expert scaled by sigmoid(gate · x).
#include "engine/models/llama.h"

namespace loom::engine {
namespace {

void load_qwen2moe(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    load_llama_weights(w, hp, m, {.attn_biases = true, .ffn = FfnKind::moe, .shared_expert = true});
}

void build_qwen2moe(GraphContext &g) {
    build_llama_graph(g, {.moe_norm_weights = false});
}

}  // namespace

extern const ArchDescriptor kArch_qwen2moe{.name = "qwen2moe",
                                           .rope_mode = RopeMode::neox,
                                           .load_weights = load_qwen2moe,
                                           .build_graph = build_qwen2moe};

}  // namespace loom::engine
