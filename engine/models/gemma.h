#pragma once
// Google's Gemma 2 and Gemma 3 share one decoder body; their files bind their options.
#include "engine/graph/graph_context.h"

namespace loom::engine {

struct GemmaOptions {
    bool qk_norm = false;     // RMS norms over each head of Q and K (Gemma 3)
    bool tied_output = true;  // output.weight is always token_embd (Gemma 2), else optional
    int64_t n_layer_27b = 0;  // the 27B model's layer count (gemma_query_scale)
};

void load_gemma_weights(WeightLoader &w, const HParams &hp, ModelWeights &m,
                        const GemmaOptions &options);

// The scale of Q: 1/sqrt(head_dim), but 1/sqrt(n_embd / n_head) for the 27B models (the layer
// count given), as Google's reference configurations set query_pre_attn_scalar and llama.cpp
// follows them (the file has no key for it).
float gemma_query_scale(const HParams &hp, int64_t n_layer_27b);

//   x = embed(tokens) * sqrt(n_embd)
//   per layer: x += rms_norm(attn(rms_norm(x))); x += rms_norm(ffn_geglu(rms_norm(x)))
//   logits = output(rms_norm(x)), soft-capped where the file says
// where attention scales Q rather than the scores, caps the scores where the file says, and the
// window's layers attend over the last n_swa positions only.
void build_gemma_graph(GraphContext &g, const GemmaOptions &options);

}  // namespace loom::engine
