// Qwen3: the Llama decoder with an RMS norm on each head of Q and K before the rotary positions
// (NeoX-style), and a head size given by attention.key_length rather than n_embd / n_head.
#include "engine/models/llama.h"

namespace loom::engine {
namespace {

void load_qwen3(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    load_llama_weights(w, hp, m, {.qk_norm = true});
}

}  // namespace

extern const ArchDescriptor kArch_qwen3{.name = "qwen3",
                                        .rope_mode = RopeMode::neox,
                                        .load_weights = load_qwen3,
                                        .build_graph = build_llama_graph};

}  // namespace loom::engine
