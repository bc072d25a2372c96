// BERT (and BGE, MiniLM and the other encoders of its shape): the token, segment and learned
// position embeddings summed and LayerNormed, then post-norm encoder blocks: every token
// attends to its whole sequence (no causal mask, nothing cached), the residual added before each
// LayerNorm, a GELU feed-forward, biases on every projection. No LM head: the outputs are the
// last block's states, pooled per sequence as the file's pooling_type says (engine/context/);
// a reranker (pooling rank) adds a classifier head on the first token ([CLS]).
#include "engine/graph/graph_context.h"
#include "engine/models/attention.h"
#include "engine/models/encoder.h"

namespace loom::engine {
namespace {

void read_bert_hparams(const gguf::Metadata &meta, HParams &hp) {
    // An encoder: llama.cpp reads bert.attention.causal, absent in older files, as false.
    hp.causal_attn = read_bool(meta, arch_key(hp, "attention.causal")).value_or(false);
}

void load_bert(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    const int64_t n_embd = hp.n_embd;
    load_encoder_embeddings(w, hp, m, false);
    m.pos_embd = w.require("position_embd.weight", {n_embd, hp.n_ctx_train});
    w.read_by_rows(m.pos_embd);
    load_classifier_head(w, hp, m, n_embd);
    m.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerWeights &l = m.layers[size_t(il)];
        auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
        load_attn_weights(w, hp, il, l, {.biases = true});
        load_encoder_norms(w, hp, il, l);
        l.ffn_up = w.require(name("ffn_up.weight"), {n_embd, hp.n_ff});
        l.ffn_up_b = w.require(name("ffn_up.bias"), {hp.n_ff});
        l.ffn_down = w.require(name("ffn_down.weight"), {hp.n_ff, n_embd});
        l.ffn_down_b = w.require(name("ffn_down.bias"), {n_embd});
    }
}

//   x = layer_norm(embed(tokens) + type_embd[0] + pos_embd[positions])
//   per layer: x = layer_norm(x + attn(x)); x = layer_norm(x + ffn_gelu(x))
//   outputs: x
void build_bert_graph(GraphContext &g) {
    Tensor *pos_embd = g.name(get_rows(g.ctx0, g.w.pos_embd, g.build_inp_pos()), "pos_embd");
    build_encoder_layers(g, build_encoder_input(g, pos_embd), {.ffn = [](const LayerWeights &l) {
                             return FfnWeights{.up = l.ffn_up,
                                               .up_b = l.ffn_up_b,
                                               .down = l.ffn_down,
                                               .down_b = l.ffn_down_b,
                                               .act = Activation::gelu};
                         }});
}

}  // namespace

extern const ArchDescriptor kArch_bert{.name = "bert",
                                       .positions = PositionEncoding::learned,
                                       .lm_head = false,
                                       .read_hparams = read_bert_hparams,
                                       .load_weights = load_bert,
                                       .build_graph = build_bert_graph};

}  // namespace loom::engine
