// OLMo 2 (AI2): no pre-norms; Q and K RMS-normed over the whole projection (all heads at once)
// before NeoX rotary positions; the attention's and the feed-forward's outputs RMS-normed before
// each residual add; SwiGLU; an untied output.
#include <cmath>

#include "engine/graph/graph_context.h"
#include "engine/models/attention.h"
#include "engine/models/embeddings.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

// OLMo 3's sliding-window layers need the iSWA cache Loom does not have yet.
void read_olmo2_hparams(const gguf::Metadata &meta, HParams &hp) {
    const std::string key = arch_key(hp, "attention.sliding_window");
    if (meta.get_integer_optional<int64_t>(key).value_or(0) > 0) {
        fail("model", "{}: sliding-window attention (OLMo 3) is not supported yet", key);
    }
}

void load_olmo2(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    const int64_t n_embd = hp.n_embd;
    load_embeddings(w, hp, m, OutputHead::own);
    m.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerWeights &l = m.layers[size_t(il)];
        auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
        load_attn_weights(w, hp, il, l);
        l.attn_q_norm = w.require(name("attn_q_norm.weight"), {hp.n_embd_head_k * hp.n_head});
        l.attn_k_norm = w.require(name("attn_k_norm.weight"), {hp.n_embd_k_gqa()});
        l.attn_post_norm = w.require(name("post_attention_norm.weight"), {n_embd});
        l.ffn_gate = w.require(name("ffn_gate.weight"), {n_embd, hp.n_ff});
        l.ffn_up = w.require(name("ffn_up.weight"), {n_embd, hp.n_ff});
        l.ffn_down = w.require(name("ffn_down.weight"), {hp.n_ff, n_embd});
        l.ffn_post_norm = w.require(name("post_ffw_norm.weight"), {n_embd});
    }
}

// An RMS norm of t [head_dim, n_heads, n_tokens] over all its heads at once.
Tensor *norm_whole_projection(GraphContext &g, Tensor *t, Tensor *weight, int64_t il) {
    const std::vector<int64_t> heads(t->ne, t->ne + 3);
    Tensor *flat = reshape(g.ctx0, contiguous(g.ctx0, t), {t->ne[0] * t->ne[1], t->ne[2]});
    return reshape(g.ctx0, g.build_norm(flat, weight, nullptr, NormType::rms, il),
                   {heads[0], heads[1], heads[2]});
}

//   x = embed(tokens)
//   per layer: x += rms_norm(attn(x)); x += rms_norm(ffn(x))
//   logits = output(rms_norm(x))
void build_olmo2(GraphContext &g) {
    const HParams &hp = g.hp;
    Tensor *x = g.build_inp_embd();
    Tensor *pos = g.build_inp_pos();
    InputAttnKv *attn = g.build_attn_inp_kv();
    Tensor *out_ids = g.build_inp_out_ids();
    const float kq_scale = 1.0f / std::sqrt(float(hp.n_embd_head_k));

    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = g.w.layers[size_t(il)];
        auto [q, k, v] = g.build_qkv(l, x, il);
        q = norm_whole_projection(g, q, l.attn_q_norm, il);
        k = norm_whole_projection(g, k, l.attn_k_norm, il);
        q = g.name(g.build_rope(q, pos, il), "Qcur", il);
        k = g.name(g.build_rope(k, pos, il), "Kcur", il);
        Tensor *cur =
            g.build_attn(attn, {q, k, v}, {.wo = l.wo, .wo_b = l.bo, .kq_scale = kq_scale}, il);
        if (il == hp.n_layer - 1 && out_ids != nullptr) {  // only the rows that give logits
            cur = get_rows(g.ctx0, cur, out_ids);
            x = get_rows(g.ctx0, x, out_ids);
        }
        cur = g.build_norm(cur, l.attn_post_norm, nullptr, NormType::rms, il);
        Tensor *ffn_in = g.name(add(g.ctx0, cur, x), "ffn_inp", il);
        cur = g.build_ffn(ffn_in, {.up = l.ffn_up, .gate = l.ffn_gate, .down = l.ffn_down}, il);
        cur = g.build_norm(cur, l.ffn_post_norm, nullptr, NormType::rms, il);
        x = g.name(add(g.ctx0, cur, ffn_in), "l_out", il);
    }
    g.build_logits(g.build_norm(x, g.w.output_norm, nullptr, NormType::rms, -1));
}

}  // namespace

extern const ArchDescriptor kArch_olmo2{.name = "olmo2",
                                        .rope_mode = RopeMode::neox,
                                        .read_hparams = read_olmo2_hparams,
                                        .load_weights = load_olmo2,
                                        .build_graph = build_olmo2};

}  // namespace loom::engine
