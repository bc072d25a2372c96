// Nomic BERT (nomic-embed-text): BERT's post-norm encoder blocks with rotary positions instead
// of a learned table (NeoX halves, base 1000 in the released files), one fused QKV projection
// and SwiGLU feed-forwards, no biases on the projections. Token and segment embeddings are
// LayerNormed as in BERT; the outputs are the last block's states, pooled per sequence.
#include "engine/graph/graph_context.h"
#include "engine/models/attention.h"
#include "engine/models/encoder.h"

namespace loom::engine {
namespace {

void read_nomic_bert_hparams(const gguf::Metadata &meta, HParams &hp) {
    hp.causal_attn = read_bool(meta, arch_key(hp, "attention.causal")).value_or(false);
}

void load_nomic_bert(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    const int64_t n_embd = hp.n_embd;
    load_encoder_embeddings(w, hp, m, true);
    m.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerWeights &l = m.layers[size_t(il)];
        auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
        load_attn_weights(w, hp, il, l);
        load_encoder_norms(w, hp, il, l);
        l.ffn_up = w.require(name("ffn_up.weight"), {n_embd, hp.n_ff});
        l.ffn_gate = w.require(name("ffn_gate.weight"), {n_embd, hp.n_ff});
        l.ffn_down = w.require(name("ffn_down.weight"), {hp.n_ff, n_embd});
    }
}

//   x = layer_norm(embed(tokens) + type_embd[0])
//   per layer: q, k, v = split(wqkv x); q, k = rope(q), rope(k)
//              x = layer_norm(x + attn(q, k, v)); x = layer_norm(x + ffn_swiglu(x))
//   outputs: x
void build_nomic_bert_graph(GraphContext &g) {
    Tensor *pos = g.build_inp_pos();
    build_encoder_layers(g, build_encoder_input(g, nullptr),
                         {.qk =
                              [&g, pos](const LayerWeights &, Qkv qkv, int64_t il) {
                                  qkv.q = g.build_rope(qkv.q, pos, il);
                                  qkv.k = g.build_rope(qkv.k, pos, il);
                                  return qkv;
                              },
                          .ffn =
                              [](const LayerWeights &l) {
                                  return FfnWeights{.up = l.ffn_up,
                                                    .gate = l.ffn_gate,
                                                    .down = l.ffn_down,
                                                    .act = Activation::silu};
                              }});
}

}  // namespace

extern const ArchDescriptor kArch_nomic_bert{.name = "nomic-bert",
                                             .rope_mode = RopeMode::neox,
                                             .lm_head = false,
                                             .read_hparams = read_nomic_bert_hparams,
                                             .load_weights = load_nomic_bert,
                                             .build_graph = build_nomic_bert_graph};

}  // namespace loom::engine
