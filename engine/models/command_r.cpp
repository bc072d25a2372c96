// Cohere Command R: parallel blocks, attention and feed-forward both read one LayerNorm (weight
// only, no bias) of the input and both add to the residual; rotary positions in adjacent pairs;
// the output tied to the token embeddings and the logits multiplied by logit_scale.
// Command R+ (64 layers and more) adds per-head LayerNorms of Q and K.
#include <cmath>

#include "engine/models/attention.h"
#include "engine/models/cohere.h"
#include "engine/models/embeddings.h"

namespace loom::engine {

void load_cohere_weights(WeightLoader &w, const HParams &hp, ModelWeights &m,
                         const CohereOptions &options) {
    const int64_t n_embd = hp.n_embd;
    load_embeddings(w, hp, m, OutputHead::tied);
    m.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerWeights &l = m.layers[size_t(il)];
        auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
        l.attn_norm = w.require(name("attn_norm.weight"), {n_embd});
        load_attn_weights(w, hp, il, l);
        if (options.qk_norm) {
            l.attn_q_norm = w.optional(name("attn_q_norm.weight"), {hp.n_embd_head_k, hp.n_head});
            l.attn_k_norm =
                w.optional(name("attn_k_norm.weight"), {hp.n_embd_head_k, hp.n_head_kv});
        }
        l.ffn_gate = w.require(name("ffn_gate.weight"), {n_embd, hp.n_ff});
        l.ffn_up = w.require(name("ffn_up.weight"), {n_embd, hp.n_ff});
        l.ffn_down = w.require(name("ffn_down.weight"), {hp.n_ff, n_embd});
    }
}

void build_cohere_graph(GraphContext &g) {
    const HParams &hp = g.hp;
    Tensor *x = g.build_inp_embd();
    Tensor *pos = g.build_inp_pos();
    InputAttnKv *attn = g.build_attn_inp_kv();
    Tensor *out_ids = g.build_inp_out_ids();
    const float kq_scale = 1.0f / std::sqrt(float(hp.n_embd_head_k));

    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = g.w.layers[size_t(il)];
        Tensor *h = g.build_norm(x, l.attn_norm, nullptr, NormType::layer, il);
        auto [q, k, v] = g.build_qkv(l, h, il);
        if (l.attn_q_norm != nullptr)
            q = g.build_norm(q, l.attn_q_norm, nullptr, NormType::layer, il);
        if (l.attn_k_norm != nullptr)
            k = g.build_norm(k, l.attn_k_norm, nullptr, NormType::layer, il);
        if (hp.has_rope(il)) {
            q = g.build_rope(q, pos, il);
            k = g.build_rope(k, pos, il);
        }
        q = g.name(q, "Qcur", il);
        k = g.name(k, "Kcur", il);
        Tensor *attn_out =
            g.build_attn(attn, {q, k, v}, {.wo = l.wo, .wo_b = l.bo, .kq_scale = kq_scale}, il);
        if (il == hp.n_layer - 1 && out_ids != nullptr) {  // only the rows that give logits
            attn_out = get_rows(g.ctx0, attn_out, out_ids);
            x = get_rows(g.ctx0, x, out_ids);
            h = get_rows(g.ctx0, h, out_ids);
        }
        Tensor *ffn_out =
            g.build_ffn(h, {.up = l.ffn_up, .gate = l.ffn_gate, .down = l.ffn_down}, il);
        // llama.cpp's order of the two adds (float addition is not associative)
        x = g.name(add(g.ctx0, add(g.ctx0, ffn_out, x), attn_out), "l_out", il);
    }
    g.build_logits(g.build_norm(x, g.w.output_norm, nullptr, NormType::layer, -1));
}

namespace {

constexpr CohereOptions kCommandR{.qk_norm = true};

void load_command_r(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    load_cohere_weights(w, hp, m, kCommandR);
}

}  // namespace

extern const ArchDescriptor kArch_command_r{.name = "command-r",
                                            .rope_mode = RopeMode::normal,
                                            .load_weights = load_command_r,
                                            .build_graph = build_cohere_graph};

}  // namespace loom::engine
