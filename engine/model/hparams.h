#pragma once
// A model's shape, read from the GGUF keys "<arch>.*" (llama.cpp's names).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/attn_window.h"
#include "loom/core.h"
#include "loom/gguf.h"

namespace loom::engine {

// How positions past the original training context are made to fit (<arch>.rope.scaling.type).
enum class RopeScaling {
    none,      // plain rotary embedding, any rope.scaling.factor ignored
    linear,    // positions divided by the factor (the default when the key is absent)
    yarn,      // YaRN: interpolated and extrapolated angles blended per dimension, magnitude
               // corrected
    longrope,  // LongRoPE (Phi-3): per-dimension factors, long or short by the context size
};

// How an encoder's token states become one embedding per sequence (<arch>.pooling_type, as
// llama.cpp numbers them).
enum class Pooling { none = 0, mean = 1, cls = 2, last = 3, rank = 4 };

struct HParams {
    std::string arch;  // general.architecture, the prefix of every key below
    int64_t n_vocab = 0;
    int64_t n_ctx_train = 0;    // <arch>.context_length
    int64_t n_embd = 0;         // <arch>.embedding_length
    int64_t n_layer = 0;        // <arch>.block_count
    int64_t n_ff = 0;           // <arch>.feed_forward_length
    int64_t n_head = 0;         // <arch>.attention.head_count
    int64_t n_head_kv = 0;      // <arch>.attention.head_count_kv (default n_head)
    int64_t n_embd_head_k = 0;  // <arch>.attention.key_length (default n_embd / n_head)
    int64_t n_embd_head_v = 0;  // <arch>.attention.value_length (default n_embd / n_head)
    int64_t n_rot = 0;          // <arch>.rope.dimension_count (default n_embd_head_k)
    float norm_rms_eps = 0.0f;  // <arch>.attention.layer_norm_rms_epsilon
    float norm_eps = 0.0f;      // <arch>.attention.layer_norm_epsilon
    // <arch>.attention.causal: each token sees those before it (false: an encoder's tokens see
    // their whole sequence).
    bool causal_attn = true;
    Pooling pooling = Pooling::none;  // <arch>.pooling_type
    // A reranker's classifier head outputs: the length of <arch>.classifier.output_labels, 1
    // where the file has no labels (as llama.cpp reads it).
    int64_t n_cls_out = 1;
    float rope_freq_base = 10000.0f;

    // RoPE scaling, read as llama.cpp reads it (see rope_params in engine/model/rope.h for what
    // the values become).
    RopeScaling rope_scaling = RopeScaling::linear;  // <arch>.rope.scaling.type
    float rope_freq_scale = 1.0f;   // 1 / <arch>.rope.scaling.factor (or rope.scale_linear)
    float rope_attn_factor = 1.0f;  // <arch>.rope.scaling.attn_factor: cos and sin scaled
    int64_t n_ctx_orig = 0;         // <arch>.rope.scaling.original_context_length
    // YaRN's mscale_all_dim and mscale (0 and 1: the magnitude correction of the factor alone).
    // Architectures that store them set them (ArchDescriptor::read_hparams).
    float yarn_log_mul = 0.0f;
    float yarn_mscale = 1.0f;

    // Sliding-window attention, set by the architectures that have it (ArchDescriptor::
    // read_hparams, with read_sliding_window): the window, which layers use it, and those layers'
    // rotary frequencies (<arch>.rope.freq_base_swa; the scale is not stretched by default).
    AttnWindow swa;
    std::vector<bool> swa_layers;  // per layer; empty: no layer
    float rope_freq_base_swa = 10000.0f;
    float rope_freq_scale_swa = 1.0f;
    // Layers whose Q and K get no rotary positions (Command R7B's full-attention layers): a
    // context shift leaves their cached K as it is. Empty: every layer has them.
    std::vector<bool> no_rope_layers;

    // Soft-capping (0: none): x -> cap * tanh(x / cap), of the attention scores
    // (<arch>.attn_logit_softcapping) and of the logits (<arch>.final_logit_softcapping).
    float f_attn_logit_softcap = 0.0f;
    float f_final_logit_softcap = 0.0f;
    float f_max_alibi_bias =
        0.0f;  // ALiBi's largest bias (0: none): <arch>.attention.max_alibi_bias
    // Attention temperature (Llama 4, Mistral Large 3): Q of a token at position p multiplied by
    // log(floor((p + offset) / n_attn_temp_floor_scale) + 1) * f_attn_temp_scale + 1 (0: none).
    float f_attn_temp_scale = 0.0f;
    int64_t n_attn_temp_floor_scale = 0;
    float f_attn_temp_offset = 0.0f;

    float f_logit_scale = 0.0f;  // logits multiplied by it (0: none): <arch>.logit_scale
    // Granite's multipliers (0: none): the input embeddings, each block's output before its
    // residual add, and the attention scores in place of 1/sqrt(head_dim).
    float f_embedding_scale = 0.0f;
    float f_residual_scale = 0.0f;
    float f_attention_scale = 0.0f;

    // Multi-head latent attention (DeepSeek 2/3): Q and KV through low-rank projections. With
    // key_length_mla / value_length_mla (the "absorbed" layout) the cache holds one latent KV
    // head per token: n_embd_head_k = kv_lora_rank + n_rot, n_embd_head_v = kv_lora_rank.
    int64_t n_lora_q = 0;           // <arch>.attention.q_lora_rank (0: a plain Q projection)
    int64_t n_lora_kv = 0;          // <arch>.attention.kv_lora_rank
    int64_t n_embd_head_k_mla = 0;  // <arch>.attention.key_length_mla (default n_embd_head_k)
    int64_t n_embd_head_v_mla = 0;  // <arch>.attention.value_length_mla (default n_embd_head_v)
    bool is_mla = false;            // the absorbed layout: both *_length_mla keys present

    // Mixture of experts (all 0 for a dense model)
    int64_t n_expert = 0;            // <arch>.expert_count
    int64_t n_expert_used = 0;       // <arch>.expert_used_count
    int64_t n_ff_exp = 0;            // <arch>.expert_feed_forward_length (default n_ff)
    int64_t n_ff_shexp = 0;          // <arch>.expert_shared_feed_forward_length (default n_ff_exp)
    int64_t n_expert_shared = 0;     // <arch>.expert_shared_count
    int64_t n_layer_dense_lead = 0;  // <arch>.leading_dense_block_count: dense layers first
    int64_t n_expert_groups = 0;     // <arch>.expert_group_count (0 or 1: no groups)
    int64_t n_group_used = 0;        // <arch>.expert_group_used_count
    float expert_weights_scale = 0.0f;  // <arch>.expert_weights_scale (0: none)
    bool expert_weights_norm = false;   // <arch>.expert_weights_norm
    int expert_gating_func = 0;         // <arch>.expert_gating_func: 1 softmax, 2 sigmoid, ...

    int64_t n_embd_k_gqa() const { return n_embd_head_k * n_head_kv; }
    int64_t n_embd_v_gqa() const { return n_embd_head_v * n_head_kv; }
    int64_t n_gqa() const { return n_head / n_head_kv; }
    bool is_swa(int64_t il) const {
        return size_t(il) < swa_layers.size() && swa_layers[size_t(il)];
    }
    bool has_rope(int64_t il) const {
        return size_t(il) >= no_rope_layers.size() || !no_rope_layers[size_t(il)];
    }
    // The longest context the positions are meant for: the training context, or the original
    // one stretched by YaRN where that is longer.
    int64_t n_ctx_max() const;
    // Where the rotary part of a cached K head starts: after the n_embd_head_k - n_rot latent or
    // no-position dims for DeepSeek's attention, at 0 otherwise.
    int64_t k_rope_offset() const { return n_lora_kv > 0 ? n_embd_head_k - n_rot : 0; }

    // Reads the common keys and checks them against each other; loom::fail("model", ...) names
    // the key and the value on anything missing or inconsistent.
    static HParams from_gguf(const gguf::Metadata &meta);
};

// <arch>.attention.sliding_window (default_window when absent; 0 turns it off) and which layers
// use it: <arch>.attention.sliding_window_pattern as a per-layer array, or as n (default
// default_pattern), where every n-th layer attends fully and the others through the window (0:
// every layer through it), as llama.cpp reads them. Sets hp.swa and hp.swa_layers.
void read_sliding_window(const gguf::Metadata &meta, HParams &hp, int64_t default_window,
                         int64_t default_pattern);

// "<arch>.<suffix>" for hparams' architecture.
std::string arch_key(const HParams &hp, std::string_view suffix);
// A float key (F32 or F64), nullopt when absent; loom::fail("model", ...) on another type.
std::optional<float> read_float(const gguf::Metadata &meta, const std::string &key);
// A bool key, nullopt when absent; loom::fail("model", ...) on another type.
std::optional<bool> read_bool(const gguf::Metadata &meta, const std::string &key);

}  // namespace loom::engine
