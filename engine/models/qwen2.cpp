// Qwen2: the Llama decoder with biases on the Q, K and V projections and NeoX-style rotary
// positions (dims i and i + n_rot/2 form a pair).
#include "engine/models/llama.h"

namespace loom::engine {
namespace {

void load_qwen2(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    load_llama_weights(w, hp, m, {.attn_biases = true});
}

}  // namespace

extern const ArchDescriptor kArch_qwen2{.name = "qwen2",
                                        .rope_mode = RopeMode::neox,
                                        .load_weights = load_qwen2,
                                        .build_graph = build_llama_graph};

}  // namespace loom::engine
