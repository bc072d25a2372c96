#pragma once
// Cohere's Command R family shares one decoder body; each architecture's file binds its options.
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
// where each layer attends over the cache that holds it (through its window where it has one).
void build_cohere_graph(GraphContext &g);

}  // namespace loom::engine
