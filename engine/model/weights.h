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
    // Q and K norms: per head (Qwen3), or over the whole projection (OLMo 2)
    Tensor *attn_q_norm = nullptr, *attn_k_norm = nullptr;
    Tensor *attn_q_norm_b = nullptr, *attn_k_norm_b = nullptr;  // LayerNorms' biases (Jina)
    Tensor *attn_post_norm = nullptr;  // post_attention_norm: the attention's output normed
    // BERT's post-norms: attn_output_norm (after the attention's residual) and
    // layer_output_norm (after the feed-forward's), each with a bias.
    Tensor *attn_out_norm = nullptr, *attn_out_norm_b = nullptr;
    Tensor *attn_norm_2 = nullptr, *attn_norm_2_b = nullptr;  // a second post-attention norm
    Tensor *layer_out_norm = nullptr, *layer_out_norm_b = nullptr;
    Tensor *attn_sinks = nullptr;  // attn_sinks.weight [n_head]: a logit per head (gpt-oss)
    // Latent attention (DeepSeek 2/3): Q through attn_q_a → attn_q_a_norm → attn_q_b; K and V
    // from the latent attn_kv_a_mqa → attn_kv_a_norm, expanded by attn_kv_b, or in the absorbed
    // layout by attn_k_b (into Q) and attn_v_b (after attention).
    Tensor *wq_a = nullptr, *attn_q_a_norm = nullptr, *wq_b = nullptr;
    Tensor *wkv_a_mqa = nullptr, *attn_kv_a_norm = nullptr, *wkv_b = nullptr;
    Tensor *wk_b = nullptr, *wv_b = nullptr;

    Tensor *ffn_norm = nullptr, *ffn_norm_b = nullptr;
    Tensor *ffn_post_norm = nullptr;  // post_ffw_norm: the feed-forward's output normed
    Tensor *ffn_gate = nullptr, *ffn_up = nullptr, *ffn_down = nullptr;
    Tensor *ffn_gate_b = nullptr, *ffn_up_b = nullptr, *ffn_down_b = nullptr;

    // Mixture of experts: the router ffn_gate_inp [n_embd, n_expert], the experts stacked
    // ffn_{gate,up,down}_exps [.., .., n_expert], DeepSeek's selection bias exp_probs_b; shared
    // experts ffn_{gate,up,down}_shexp, with Qwen2-MoE's gate ffn_gate_inp_shexp [n_embd].
    Tensor *ffn_gate_inp = nullptr, *ffn_exp_probs_b = nullptr;
    Tensor *ffn_gate_exps = nullptr, *ffn_up_exps = nullptr, *ffn_down_exps = nullptr;
    // gpt-oss's router bias [n_expert] and per-expert biases [n_out, n_expert]
    Tensor *ffn_gate_inp_b = nullptr;
    Tensor *ffn_gate_exps_b = nullptr, *ffn_up_exps_b = nullptr, *ffn_down_exps_b = nullptr;
    Tensor *ffn_gate_inp_shexp = nullptr;
    Tensor *ffn_gate_shexp = nullptr, *ffn_up_shexp = nullptr, *ffn_down_shexp = nullptr;
};

struct ModelWeights {
    Tensor *tok_embd = nullptr;   // token_embd.weight [n_embd, n_vocab]
    Tensor *pos_embd = nullptr;   // position_embd.weight [n_embd, n_ctx_train]: learned positions
    Tensor *type_embd = nullptr;  // token_types.weight [n_embd, n_types] (BERT's segments)
    Tensor *tok_norm = nullptr, *tok_norm_b = nullptr;  // token_embd_norm: the input normed
    Tensor *output_norm = nullptr;                      // output_norm.weight
    Tensor *output_norm_b = nullptr;
    Tensor *output = nullptr;  // output.weight, or tok_embd when tied
    // A reranker's classifier head on the first token's state: cls.weight [n_embd, n] (+ bias),
    // tanh, cls.output.weight [n, n_cls_out] (+ bias); either may be absent.
    Tensor *cls = nullptr, *cls_b = nullptr, *cls_out = nullptr, *cls_out_b = nullptr;
    Tensor *rope_factors = nullptr;  // rope_freqs.weight: Llama 3's per-dimension frequency factors
    // LongRoPE's factors for contexts past the original one and within it,
    // rope_factors_{long,short}.weight [n_rot / 2]
    Tensor *rope_factors_long = nullptr, *rope_factors_short = nullptr;
    std::vector<LayerWeights> layers;
};

}  // namespace loom::engine
