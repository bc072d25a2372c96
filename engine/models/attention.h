#pragma once
// The attention projections as most architectures name them: a fused attn_qkv or separate
// attn_q / attn_k / attn_v (llama.cpp's converters write either), their biases, and attn_output.
#include "engine/model/weight_loader.h"
#include "engine/model/weights.h"

namespace loom::engine {

struct AttnWeightOptions {
    bool biases = false;  // Q, K, V biases required (else bound where the file has them)
};

// attn_qkv [n_embd, n_q + n_k + n_v] (+ attn_qkv.bias) where the file has it, else attn_q,
// attn_k, attn_v (+ biases); attn_output [n_head * head_dim_v, n_embd] (+ bias).
void load_attn_weights(WeightLoader &w, const HParams &hp, int64_t il, LayerWeights &l,
                       const AttnWeightOptions &options = {});

}  // namespace loom::engine
