// Jina BERT v2 (jina-embeddings-v2): BERT's post-norm encoder blocks without position
// embeddings: positions enter as ALiBi biases on the attention scores (-slope · |i - j|, the
// largest slope's exponent 8 as the model fixes it), which lets the files run past their
// training length. Q and K may be LayerNormed over the whole projection; the feed-forward is
// GEGLU, its gate either a tensor of its own or the first half of a merged ffn_up. A reranker
// (jina-reranker-v1) has a one-row cls head.
#include "engine/graph/graph_context.h"
#include "engine/models/attention.h"
#include "engine/models/encoder.h"

namespace loom::engine {
namespace {

void read_jina_bert_v2_hparams(const gguf::Metadata &meta, HParams &hp) {
    hp.causal_attn = read_bool(meta, arch_key(hp, "attention.causal")).value_or(false);
    hp.f_max_alibi_bias = 8.0f;  // the model's constant, not a key in its files
}

void load_jina_bert_v2(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    const int64_t n_embd = hp.n_embd;
    load_encoder_embeddings(w, hp, m, true);
    load_classifier_head(w, hp, m, 1);
    m.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerWeights &l = m.layers[size_t(il)];
        auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
        load_attn_weights(w, hp, il, l);
        l.attn_q_norm = w.optional(name("attn_q_norm.weight"), {n_embd});
        if (l.attn_q_norm != nullptr)
            l.attn_q_norm_b = w.require(name("attn_q_norm.bias"), {n_embd});
        l.attn_k_norm = w.optional(name("attn_k_norm.weight"), {n_embd});
        if (l.attn_k_norm != nullptr)
            l.attn_k_norm_b = w.require(name("attn_k_norm.bias"), {n_embd});
        load_encoder_norms(w, hp, il, l);
        l.ffn_gate = w.optional(name("ffn_gate.weight"), {n_embd, hp.n_ff});
        // Without a gate of its own, ffn_up holds the gate's rows and then the up ones.
        const int64_t n_up = l.ffn_gate != nullptr ? hp.n_ff : 2 * hp.n_ff;
        l.ffn_up = w.require(name("ffn_up.weight"), {n_embd, n_up});
        l.ffn_up_b = w.optional(name("ffn_up.bias"), {n_up});
        l.ffn_down = w.require(name("ffn_down.weight"), {hp.n_ff, n_embd});
        l.ffn_down_b = w.require(name("ffn_down.bias"), {n_embd});
    }
}

// A [head_dim, n_heads, n_tokens] projection LayerNormed over all its heads at once.
Tensor *norm_whole(GraphContext &g, Tensor *x, Tensor *weight, Tensor *bias, int64_t il) {
    if (weight == nullptr) return x;
    Tensor *flat = reshape(g.ctx0, x, {x->ne[0] * x->ne[1], x->ne[2]});
    return reshape(g.ctx0, g.build_norm(flat, weight, bias, NormType::layer, il),
                   {x->ne[0], x->ne[1], x->ne[2]});
}

//   x = layer_norm(embed(tokens) + type_embd[0])
//   per layer: q, k = layer_norm(wq x), layer_norm(wk x); x = layer_norm(x + attn_alibi(q, k, v))
//              x = layer_norm(x + ffn_geglu(x))
//   outputs: x
void build_jina_bert_v2_graph(GraphContext &g) {
    build_encoder_layers(g, build_encoder_input(g, nullptr),
                         {.qk =
                              [&g](const LayerWeights &l, Qkv qkv, int64_t il) {
                                  qkv.q = norm_whole(g, qkv.q, l.attn_q_norm, l.attn_q_norm_b, il);
                                  qkv.k = norm_whole(g, qkv.k, l.attn_k_norm, l.attn_k_norm_b, il);
                                  return qkv;
                              },
                          .ffn =
                              [](const LayerWeights &l) {
                                  return FfnWeights{.up = l.ffn_up,
                                                    .up_b = l.ffn_up_b,
                                                    .gate = l.ffn_gate,
                                                    .down = l.ffn_down,
                                                    .down_b = l.ffn_down_b,
                                                    .act = Activation::gelu,
                                                    .up_holds_gate = l.ffn_gate == nullptr};
                              }});
}

}  // namespace

extern const ArchDescriptor kArch_jina_bert_v2{.name = "jina-bert-v2",
                                               .positions = PositionEncoding::alibi,
                                               .lm_head = false,
                                               .read_hparams = read_jina_bert_v2_hparams,
                                               .load_weights = load_jina_bert_v2,
                                               .build_graph = build_jina_bert_v2_graph};

}  // namespace loom::engine
