// GPT-2: learned position embeddings added to the token embeddings, then pre-norm decoder blocks
// of multi-head attention (one fused Q/K/V projection, no rotary positions) and a GELU
// feed-forward, LayerNorms with a bias and biases on every projection.
#include <cmath>

#include "engine/graph/graph_context.h"
#include "engine/models/embeddings.h"

namespace loom::engine {
namespace {

void load_gpt2(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_head_k * hp.n_head;
    const int64_t n_qkv = n_q + hp.n_embd_k_gqa() + hp.n_embd_v_gqa();
    load_embeddings(w, hp, m, OutputHead::own_or_tied);
    m.pos_embd = w.require("position_embd.weight", {n_embd, hp.n_ctx_train});
    w.read_by_rows(m.pos_embd);
    m.output_norm_b = w.require("output_norm.bias", {n_embd});
    m.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerWeights &l = m.layers[size_t(il)];
        auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
        l.attn_norm = w.require(name("attn_norm.weight"), {n_embd});
        l.attn_norm_b = w.require(name("attn_norm.bias"), {n_embd});
        l.wqkv = w.require(name("attn_qkv.weight"), {n_embd, n_qkv});
        l.bqkv = w.require(name("attn_qkv.bias"), {n_qkv});
        l.wo = w.require(name("attn_output.weight"), {hp.n_embd_head_v * hp.n_head, n_embd});
        l.bo = w.require(name("attn_output.bias"), {n_embd});
        l.ffn_norm = w.require(name("ffn_norm.weight"), {n_embd});
        l.ffn_norm_b = w.require(name("ffn_norm.bias"), {n_embd});
        l.ffn_up = w.require(name("ffn_up.weight"), {n_embd, hp.n_ff});
        l.ffn_up_b = w.require(name("ffn_up.bias"), {hp.n_ff});
        l.ffn_down = w.require(name("ffn_down.weight"), {hp.n_ff, n_embd});
        l.ffn_down_b = w.require(name("ffn_down.bias"), {n_embd});
    }
}

//   x = embed(tokens) + pos_embd[positions]
//   per layer: x += attn(layer_norm(x)); x += ffn_gelu(layer_norm(x))
//   logits = output(layer_norm(x))
void build_gpt2_graph(GraphContext &g) {
    const HParams &hp = g.hp;
    Tensor *tok_embd = g.build_inp_embd();
    Tensor *pos_embd = g.name(get_rows(g.ctx0, g.w.pos_embd, g.build_inp_pos()), "pos_embd");
    Tensor *x = g.name(add(g.ctx0, tok_embd, pos_embd), "inpL");
    InputAttnKv *attn = g.build_attn_inp_kv();
    Tensor *out_ids = g.build_inp_out_ids();
    const float kq_scale = 1.0f / std::sqrt(float(hp.n_embd_head_k));

    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = g.w.layers[size_t(il)];
        Tensor *cur = g.build_norm(x, l.attn_norm, l.attn_norm_b, NormType::layer, il);

        const Qkv qkv = g.build_qkv(l, cur, il);
        cur = g.build_attn(attn, qkv, {.wo = l.wo, .wo_b = l.bo, .kq_scale = kq_scale}, il);

        if (il == hp.n_layer - 1 && out_ids != nullptr) {  // only the rows that give logits
            cur = get_rows(g.ctx0, cur, out_ids);
            x = get_rows(g.ctx0, x, out_ids);
        }
        Tensor *ffn_in = g.name(add(g.ctx0, cur, x), "ffn_inp", il);
        cur = g.build_norm(ffn_in, l.ffn_norm, l.ffn_norm_b, NormType::layer, il);
        cur = g.build_ffn(cur,
                          {.up = l.ffn_up,
                           .up_b = l.ffn_up_b,
                           .down = l.ffn_down,
                           .down_b = l.ffn_down_b,
                           .act = Activation::gelu},
                          il);
        x = g.name(add(g.ctx0, cur, ffn_in), "l_out", il);
    }
    g.build_logits(g.build_norm(x, g.w.output_norm, g.w.output_norm_b, NormType::layer, -1));
}

}  // namespace

extern const ArchDescriptor kArch_gpt2{.name = "gpt2",
                                       .positions = PositionEncoding::learned,
                                       .load_weights = load_gpt2,
                                       .build_graph = build_gpt2_graph};

}  // namespace loom::engine
