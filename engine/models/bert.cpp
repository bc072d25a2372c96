// BERT (and BGE, MiniLM and the other encoders of its shape): the token, segment and learned
// position embeddings summed and LayerNormed, then post-norm encoder blocks: every token
// attends to its whole sequence (no causal mask, nothing cached), the residual added before each
// LayerNorm, a GELU feed-forward, biases on every projection. No LM head: the outputs are the
// last block's states, pooled per sequence as the file's pooling_type says (engine/context/).
#include <cmath>

#include "engine/graph/graph_context.h"
#include "engine/models/attention.h"

namespace loom::engine {
namespace {

void read_bert_hparams(const gguf::Metadata &meta, HParams &hp) {
    // An encoder: llama.cpp reads bert.attention.causal, absent in older files, as false.
    hp.causal_attn = read_bool(meta, arch_key(hp, "attention.causal")).value_or(false);
}

void load_bert(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    const int64_t n_embd = hp.n_embd;
    m.tok_embd = w.require("token_embd.weight", {n_embd, hp.n_vocab});
    w.read_by_rows(m.tok_embd);
    m.type_embd = w.optional("token_types.weight", {n_embd, 2});
    if (m.type_embd == nullptr) m.type_embd = w.optional("token_types.weight", {n_embd, 1});
    m.pos_embd = w.require("position_embd.weight", {n_embd, hp.n_ctx_train});
    w.read_by_rows(m.pos_embd);
    m.tok_norm = w.require("token_embd_norm.weight", {n_embd});
    m.tok_norm_b = w.require("token_embd_norm.bias", {n_embd});
    m.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerWeights &l = m.layers[size_t(il)];
        auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
        load_attn_weights(w, hp, il, l, {.biases = true});
        l.attn_out_norm = w.require(name("attn_output_norm.weight"), {n_embd});
        l.attn_out_norm_b = w.require(name("attn_output_norm.bias"), {n_embd});
        l.ffn_up = w.require(name("ffn_up.weight"), {n_embd, hp.n_ff});
        l.ffn_up_b = w.require(name("ffn_up.bias"), {hp.n_ff});
        l.ffn_down = w.require(name("ffn_down.weight"), {hp.n_ff, n_embd});
        l.ffn_down_b = w.require(name("ffn_down.bias"), {n_embd});
        l.layer_out_norm = w.require(name("layer_output_norm.weight"), {n_embd});
        l.layer_out_norm_b = w.require(name("layer_output_norm.bias"), {n_embd});
    }
}

//   x = layer_norm(embed(tokens) + type_embd[0] + pos_embd[positions])
//   per layer: x = layer_norm(x + attn(x)); x = layer_norm(x + ffn_gelu(x))
//   outputs: x
void build_bert_graph(GraphContext &g) {
    const HParams &hp = g.hp;
    Tensor *x = g.build_inp_embd();
    if (g.w.type_embd != nullptr) {  // every token in the first segment, as llama.cpp has it
        x = add(g.ctx0, x, view_1d(g.ctx0, g.w.type_embd, hp.n_embd, 0));
    }
    Tensor *pos_embd = g.name(get_rows(g.ctx0, g.w.pos_embd, g.build_inp_pos()), "pos_embd");
    x = g.name(add(g.ctx0, x, pos_embd), "inp_embd");
    x = g.build_norm(x, g.w.tok_norm, g.w.tok_norm_b, NormType::layer, -1);
    InputAttnNoCache *attn = g.build_attn_inp_no_cache();
    Tensor *out_ids = g.build_inp_out_ids();
    const float kq_scale = 1.0f / std::sqrt(float(hp.n_embd_head_k));

    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = g.w.layers[size_t(il)];
        const Qkv qkv = g.build_qkv(l, x, il);
        Tensor *cur = g.build_attn(attn, qkv, {.wo = l.wo, .wo_b = l.bo, .kq_scale = kq_scale}, il);
        if (il == hp.n_layer - 1 && out_ids != nullptr) {  // only the rows that are outputs
            cur = get_rows(g.ctx0, cur, out_ids);
            x = get_rows(g.ctx0, x, out_ids);
        }
        cur = g.build_norm(add(g.ctx0, cur, x), l.attn_out_norm, l.attn_out_norm_b, NormType::layer,
                           il);
        Tensor *ffn_in = g.name(cur, "ffn_inp", il);
        cur = g.build_ffn(cur,
                          {.up = l.ffn_up,
                           .up_b = l.ffn_up_b,
                           .down = l.ffn_down,
                           .down_b = l.ffn_down_b,
                           .act = Activation::gelu},
                          il);
        x = g.build_norm(add(g.ctx0, cur, ffn_in), l.layer_out_norm, l.layer_out_norm_b,
                         NormType::layer, il);
        x = g.name(x, "l_out", il);
    }
    g.build_embeddings(x);
}

}  // namespace

extern const ArchDescriptor kArch_bert{.name = "bert",
                                       .positions = PositionEncoding::learned,
                                       .lm_head = false,
                                       .read_hparams = read_bert_hparams,
                                       .load_weights = load_bert,
                                       .build_graph = build_bert_graph};

}  // namespace loom::engine
