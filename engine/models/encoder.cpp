#include "engine/models/encoder.h"

#include <cmath>

#include "engine/models/attention.h"

namespace loom::engine {

void load_encoder_embeddings(WeightLoader &w, const HParams &hp, ModelWeights &m,
                             bool types_required) {
    const int64_t n_embd = hp.n_embd;
    m.tok_embd = w.require("token_embd.weight", {n_embd, hp.n_vocab});
    w.read_by_rows(m.tok_embd);
    // Two segments (sentence A and B), or one in files converted without the second.
    m.type_embd = w.optional("token_types.weight", {n_embd, 2});
    if (m.type_embd == nullptr) m.type_embd = w.optional("token_types.weight", {n_embd, 1});
    if (m.type_embd == nullptr && types_required) {
        m.type_embd = w.require("token_types.weight", {n_embd, 2});  // fails naming it
    }
    m.tok_norm = w.require("token_embd_norm.weight", {n_embd});
    m.tok_norm_b = w.require("token_embd_norm.bias", {n_embd});
}

void load_encoder_norms(WeightLoader &w, const HParams &hp, int64_t il, LayerWeights &l) {
    auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
    l.attn_out_norm = w.require(name("attn_output_norm.weight"), {hp.n_embd});
    l.attn_out_norm_b = w.require(name("attn_output_norm.bias"), {hp.n_embd});
    l.layer_out_norm = w.require(name("layer_output_norm.weight"), {hp.n_embd});
    l.layer_out_norm_b = w.require(name("layer_output_norm.bias"), {hp.n_embd});
    l.attn_norm_2 = w.optional(name("attn_norm_2.weight"), {hp.n_embd});
    if (l.attn_norm_2 != nullptr)
        l.attn_norm_2_b = w.require(name("attn_norm_2.bias"), {hp.n_embd});
}

void load_classifier_head(WeightLoader &w, const HParams &hp, ModelWeights &m, int64_t cls_rows) {
    m.cls = w.optional("cls.weight", {hp.n_embd, cls_rows});
    if (m.cls != nullptr) m.cls_b = w.optional("cls.bias", {cls_rows});
    m.cls_out = w.optional("cls.output.weight", {cls_rows, hp.n_cls_out});
    if (m.cls_out != nullptr) m.cls_out_b = w.optional("cls.output.bias", {hp.n_cls_out});
}

Tensor *build_encoder_input(GraphContext &g, Tensor *positions) {
    Tensor *x = g.build_inp_embd();
    if (g.w.type_embd != nullptr)
        x = add(g.ctx0, x, view_1d(g.ctx0, g.w.type_embd, g.hp.n_embd, 0));
    if (positions != nullptr) x = add(g.ctx0, x, positions);
    x = g.name(x, "inp_embd");
    return g.build_norm(x, g.w.tok_norm, g.w.tok_norm_b, NormType::layer, -1);
}

void build_encoder_layers(GraphContext &g, Tensor *x, const EncoderBlock &block) {
    const HParams &hp = g.hp;
    InputAttnNoCache *attn = g.build_attn_inp_no_cache();
    Tensor *out_ids = g.build_inp_out_ids();
    const float kq_scale = 1.0f / std::sqrt(float(hp.n_embd_head_k));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = g.w.layers[size_t(il)];
        Qkv qkv = g.build_qkv(l, x, il);
        if (block.qk) qkv = block.qk(l, qkv, il);
        Tensor *cur = g.build_attn(attn, qkv, {.wo = l.wo, .wo_b = l.bo, .kq_scale = kq_scale}, il);
        if (il == hp.n_layer - 1 && out_ids != nullptr) {  // only the rows that are outputs
            cur = get_rows(g.ctx0, cur, out_ids);
            x = get_rows(g.ctx0, x, out_ids);
        }
        cur = g.build_norm(add(g.ctx0, cur, x), l.attn_out_norm, l.attn_out_norm_b, NormType::layer,
                           il);
        if (l.attn_norm_2 != nullptr) {  // the layer's input added once more, normed again
            cur = g.build_norm(add(g.ctx0, cur, x), l.attn_norm_2, l.attn_norm_2_b, NormType::layer,
                               il);
        }
        Tensor *ffn_in = g.name(cur, "ffn_inp", il);
        cur = g.build_ffn(cur, block.ffn(l), il);
        x = g.build_norm(add(g.ctx0, cur, ffn_in), l.layer_out_norm, l.layer_out_norm_b,
                         NormType::layer, il);
        x = g.name(x, "l_out", il);
    }
    g.build_embeddings(x);
}

}  // namespace loom::engine
