#pragma once
// What the BERT family's encoders share (bert.cpp, nomic_bert.cpp, jina_bert_v2.cpp): token and
// segment embeddings LayerNormed, post-norm blocks whose tokens attend to their whole sequence
// (nothing cached), and a reranker's classifier head. Each architecture file says how its
// positions enter, what it does to Q and K, and its feed-forward.
#include <functional>

#include "engine/graph/graph_context.h"
#include "engine/model/weight_loader.h"
#include "engine/model/weights.h"

namespace loom::engine {

// token_embd (looked up by rows), token_types where the file has them (required with
// `types_required`), token_embd_norm and its bias.
void load_encoder_embeddings(WeightLoader &w, const HParams &hp, ModelWeights &m,
                             bool types_required);
// attn_output_norm and layer_output_norm with their biases: the two post-norms of a block; and
// attn_norm_2 (+ bias) where the file has it (some Jina models), a third after the first.
void load_encoder_norms(WeightLoader &w, const HParams &hp, int64_t il, LayerWeights &l);
// A reranker's head where the file has one, as llama.cpp binds it: cls [n_embd, cls_rows]
// (+ bias) then cls.output [cls_rows, n_cls_out] (+ bias); either may be absent.
void load_classifier_head(WeightLoader &w, const HParams &hp, ModelWeights &m, int64_t cls_rows);

// The input: token embeddings + the first segment's row (every token in segment A, as llama.cpp
// has it) + `positions` when given, LayerNormed.
Tensor *build_encoder_input(GraphContext &g, Tensor *positions);

struct EncoderBlock {
    // Q and K after the projections, before attention (rotary positions, norms); null: as they
    // are.
    std::function<Qkv(const LayerWeights &, Qkv, int64_t il)> qk;
    // The layer's feed-forward.
    std::function<FfnWeights(const LayerWeights &)> ffn;
};

// Per layer: x = layer_norm(x + attn(x)); x = layer_norm(x + ffn(x)), with the attention's
// output projection and bias, scores scaled by 1/sqrt(head size); then the last layer's states
// become the graph's embeddings (GraphContext::build_embeddings).
void build_encoder_layers(GraphContext &g, Tensor *x, const EncoderBlock &block);

}  // namespace loom::engine
