// Microsoft Phi-3 / Phi-3.5 / Phi-4 (dense): pre-norm blocks of grouped-query attention with a
// fused Q/K/V projection, NeoX rotary positions (LongRoPE factors for long contexts), Q scaled
// before the scores, and a SwiGLU whose gate and up halves share one merged ffn_up.
#include <cmath>

#include "engine/graph/graph_context.h"
#include "engine/models/attention.h"
#include "engine/models/embeddings.h"

namespace loom::engine {
namespace {

void load_phi3(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    const int64_t n_embd = hp.n_embd;
    load_embeddings(w, hp, m, OutputHead::own_or_tied);
    // Phi-3's 128k variants carry both sets of factors, whatever the scaling type says.
    m.rope_factors_long = w.optional("rope_factors_long.weight", {hp.n_rot / 2});
    m.rope_factors_short = w.optional("rope_factors_short.weight", {hp.n_rot / 2});
    m.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerWeights &l = m.layers[size_t(il)];
        auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
        l.attn_norm = w.require(name("attn_norm.weight"), {n_embd});
        load_attn_weights(w, hp, il, l);
        l.ffn_norm = w.require(name("ffn_norm.weight"), {n_embd});
        l.ffn_up = w.require(name("ffn_up.weight"), {n_embd, 2 * hp.n_ff});
        l.ffn_down = w.require(name("ffn_down.weight"), {hp.n_ff, n_embd});
    }
}

//   x = embed(tokens)
//   per layer: x += attn(rms_norm(x)); x += ffn_swiglu(rms_norm(x))
//   logits = output(rms_norm(x))
void build_phi3(GraphContext &g) {
    const HParams &hp = g.hp;
    Tensor *x = g.build_inp_embd();
    Tensor *pos = g.build_inp_pos();
    InputAttnKv *attn = g.build_attn_inp_kv();
    Tensor *out_ids = g.build_inp_out_ids();

    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = g.w.layers[size_t(il)];
        Tensor *cur = g.build_norm(x, l.attn_norm, nullptr, NormType::rms, il);
        auto [q, k, v] = g.build_qkv(l, cur, il);
        q = g.name(g.build_rope(q, pos, il), "Qcur", il);
        k = g.name(g.build_rope(k, pos, il), "Kcur", il);
        // Q is scaled before the product and the scores are not (llama.cpp's rounding).
        q = scale(g.ctx0, q, 1.0f / std::sqrt(float(hp.n_embd_head_k)));
        cur = g.build_attn(attn, {q, k, v}, {.wo = l.wo, .wo_b = l.bo, .kq_scale = 1.0f}, il);
        if (il == hp.n_layer - 1 && out_ids != nullptr) {  // only the rows that give logits
            cur = get_rows(g.ctx0, cur, out_ids);
            x = get_rows(g.ctx0, x, out_ids);
        }
        Tensor *ffn_in = g.name(add(g.ctx0, cur, x), "ffn_inp", il);
        cur = g.build_norm(ffn_in, l.ffn_norm, nullptr, NormType::rms, il);
        cur = g.build_ffn(cur, {.up = l.ffn_up, .down = l.ffn_down, .up_holds_gate = true}, il);
        x = g.name(add(g.ctx0, cur, ffn_in), "l_out", il);
    }
    g.build_logits(g.build_norm(x, g.w.output_norm, nullptr, NormType::rms, -1));
}

}  // namespace

extern const ArchDescriptor kArch_phi3{.name = "phi3",
                                       .rope_mode = RopeMode::neox,
                                       .load_weights = load_phi3,
                                       .build_graph = build_phi3};

}  // namespace loom::engine
