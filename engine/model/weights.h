#pragma once
// The weight tensors a model may have, by role (GGUF names in the comments). Each architecture
// fills the ones it uses (engine/models/); the rest stay null.
#include <vector>

#include "loom/tensor.h"

namespace loom::engine {

struct LayerWeights {
    Tensor *attn_norm = nullptr;                                        // blk.N.attn_norm.weight
    Tensor *attn_norm_b = nullptr;                                      // blk.N.attn_norm.bias
    Tensor *wq = nullptr, *wk = nullptr, *wv = nullptr, *wo = nullptr;  // attn_q/k/v/output
    Tensor *wqkv = nullptr;                                             // attn_qkv (fused)
    Tensor *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr, *bqkv = nullptr;
    Tensor *attn_q_norm = nullptr, *attn_k_norm = nullptr;  // per-head RMS norms (Qwen3)

    Tensor *ffn_norm = nullptr, *ffn_norm_b = nullptr;
    Tensor *ffn_gate = nullptr, *ffn_up = nullptr, *ffn_down = nullptr;
    Tensor *ffn_gate_b = nullptr, *ffn_up_b = nullptr, *ffn_down_b = nullptr;
};

struct ModelWeights {
    Tensor *tok_embd = nullptr;     // token_embd.weight [n_embd, n_vocab]
    Tensor *output_norm = nullptr;  // output_norm.weight
    Tensor *output_norm_b = nullptr;
    Tensor *output = nullptr;        // output.weight, or tok_embd when tied
    Tensor *rope_factors = nullptr;  // rope_freqs.weight: Llama 3's per-dimension frequency factors
    std::vector<LayerWeights> layers;
};

}  // namespace loom::engine
