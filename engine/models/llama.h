#pragma once
// The Llama decoder, which Qwen2 (attention biases) and Qwen3 (per-head Q/K norms) share: their
// files bind their own weights and reuse this body.
#include "engine/graph/graph_context.h"

namespace loom::engine {

// Which feed-forward a layer has: dense, or a mixture of experts (with shared experts when the
// file has them).
enum class FfnKind {
    dense_or_moe,  // MoE where the layer has a router (Mixtral in the llama architecture)
    moe,           // every layer
};

struct LlamaWeightOptions {
    bool attn_biases = false;  // bq, bk, bv required (else optional)
    bool qk_norm = false;      // attn_q_norm, attn_k_norm required
    FfnKind ffn = FfnKind::dense_or_moe;
    bool shared_expert = false;  // ffn_{gate,up,down}_shexp and the gate ffn_gate_inp_shexp
};

// How the MoE layers weigh their experts.
struct LlamaGraphOptions {
    bool moe_norm_weights = true;  // the k weights divided by their sum
};

void load_llama_weights(WeightLoader &w, const HParams &hp, ModelWeights &m,
                        const LlamaWeightOptions &options);

//   x = embed(tokens)
//   per layer: x += attn(rms_norm(x)); x += ffn(rms_norm(x))
//   logits = output(rms_norm(x))
// where ffn is a SwiGLU network, or a mixture of SwiGLU experts (+ a shared one).
void build_llama_graph(GraphContext &g, const LlamaGraphOptions &options);
void build_llama_graph(GraphContext &g);  // the default options

}  // namespace loom::engine
