#pragma once
// The Llama decoder, which Qwen2 (attention biases) and Qwen3 (per-head Q/K norms) share: their
// files bind their own weights and reuse this body.
#include "engine/graph/graph_context.h"

namespace loom::engine {

struct LlamaWeightOptions {
    bool attn_biases = false;  // bq, bk, bv required (else optional)
    bool qk_norm = false;      // attn_q_norm, attn_k_norm required
};

void load_llama_weights(WeightLoader &w, const HParams &hp, ModelWeights &m,
                        const LlamaWeightOptions &options);

//   x = embed(tokens)
//   per layer: x += attn(rms_norm(x)); x += ffn_swiglu(rms_norm(x))
//   logits = output(rms_norm(x))
void build_llama_graph(GraphContext &g);

}  // namespace loom::engine
