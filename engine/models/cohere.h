#pragma once
// Cohere's Command R and Command R7B (cohere2) share one decoder body; their files bind their
// options.
#include "engine/graph/graph_context.h"

namespace loom::engine {

struct CohereOptions {
    // Per-head LayerNorms of Q and K where the file has them (Command R+).
    bool qk_norm = false;
};

void load_cohere_weights(WeightLoader &w, const HParams &hp, ModelWeights &m,
                         const CohereOptions &options);

//   x = embed(tokens)
//   per layer: h = layer_norm(x); x += attn(h) + ffn(h)
//   logits = output(layer_norm(x)) * logit_scale
// where each layer attends over the cache that holds it (through its window where it has one),
// with rotary positions where HParams::has_rope says.
void build_cohere_graph(GraphContext &g);

}  // namespace loom::engine
