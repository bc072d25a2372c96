#pragma once
// A model's shape, read from the GGUF keys "<arch>.*" (llama.cpp's names).
#include <cstdint>
#include <string>
#include <vector>

#include "loom/core.h"
#include "loom/gguf.h"

namespace loom::engine {

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
    float rope_freq_base = 10000.0f;
    float rope_freq_scale = 1.0f;  // 1 / <arch>.rope.scaling.factor for linear scaling
    int64_t n_ctx_orig = 0;        // <arch>.rope.scaling.original_context_length
    float f_logit_scale = 0.0f;    // <arch>.logit_scale (0: none)

    int64_t n_embd_k_gqa() const { return n_embd_head_k * n_head_kv; }
    int64_t n_embd_v_gqa() const { return n_embd_head_v * n_head_kv; }
    int64_t n_gqa() const { return n_head / n_head_kv; }

    // Reads the common keys and checks them against each other; loom::fail("model", ...) names
    // the key and the value on anything missing or inconsistent.
    static HParams from_gguf(const gguf::Metadata &meta);
};

// "<arch>.<suffix>" for hparams' architecture.
std::string arch_key(const HParams &hp, std::string_view suffix);

}  // namespace loom::engine
