// Llama (1, 2, 3), Mistral, TinyLlama: pre-norm decoder blocks of grouped-query attention with
// rotary positions (adjacent pairs) and a SwiGLU feed-forward, RMS norms throughout.
#include "engine/models/llama.h"
#include "engine/models/embeddings.h"

#include <cmath>

#include "engine/models/attention.h"
#include "engine/models/experts.h"

namespace loom::engine {

namespace {

void load_llama_ffn(WeightLoader &w, const HParams &hp, int64_t il,
                    const LlamaWeightOptions &options, LayerWeights &l) {
    auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
    const int64_t n_embd = hp.n_embd;
    // Mixtral's layers (llama architecture) are MoE where the file has a router.
    const bool moe = hp.n_expert > 0 &&
                     (options.ffn == FfnKind::moe ||
                      w.optional(name("ffn_gate_inp.weight"), {n_embd, hp.n_expert}) != nullptr);
    if (!moe) {
        l.ffn_gate = w.require(name("ffn_gate.weight"), {n_embd, hp.n_ff});
        l.ffn_up = w.require(name("ffn_up.weight"), {n_embd, hp.n_ff});
        l.ffn_down = w.require(name("ffn_down.weight"), {hp.n_ff, n_embd});
        return;
    }
    load_routed_experts(w, hp, il, l);
    if (options.shared_expert) {
        l.ffn_gate_inp_shexp = w.require(name("ffn_gate_inp_shexp.weight"), {n_embd});
        load_shared_expert(w, hp, il, hp.n_ff_shexp, l);
    }
}

}  // namespace

void load_llama_weights(WeightLoader &w, const HParams &hp, ModelWeights &m,
                        const LlamaWeightOptions &options) {
    const int64_t n_embd = hp.n_embd;
    load_embeddings(w, hp, m, OutputHead::own_or_tied);
    if (hp.rope_scaling == RopeScaling::longrope) {
        m.rope_factors_long = w.optional("rope_factors_long.weight", {hp.n_rot / 2});
        m.rope_factors_short = w.optional("rope_factors_short.weight", {hp.n_rot / 2});
    } else {
        m.rope_factors = w.optional("rope_freqs.weight", {hp.n_rot / 2});
    }
    m.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerWeights &l = m.layers[size_t(il)];
        auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
        l.attn_norm = w.require(name("attn_norm.weight"), {n_embd});
        load_attn_weights(w, hp, il, l, {.biases = options.attn_biases});
        if (options.qk_norm) {
            l.attn_q_norm = w.require(name("attn_q_norm.weight"), {hp.n_embd_head_k});
            l.attn_k_norm = w.require(name("attn_k_norm.weight"), {hp.n_embd_head_k});
        }
        l.ffn_norm = w.require(name("ffn_norm.weight"), {n_embd});
        load_llama_ffn(w, hp, il, options, l);
    }
}

void build_llama_graph(GraphContext &g) {
    build_llama_graph(g, {});
}

void build_llama_graph(GraphContext &g, const LlamaGraphOptions &options) {
    const HParams &hp = g.hp;
    Tensor *x = g.build_inp_embd();
    Tensor *pos = g.build_inp_pos();
    InputAttnKv *attn = g.build_attn_inp_kv();
    Tensor *out_ids = g.build_inp_out_ids();
    // Granite gives its own score scale, and scales each block's output before its residual add.
    const float kq_scale = hp.f_attention_scale != 0.0f ? hp.f_attention_scale
                                                        : 1.0f / std::sqrt(float(hp.n_embd_head_k));
    auto residual_scaled = [&](Tensor *t) {
        return hp.f_residual_scale != 0.0f ? scale(g.ctx0, t, hp.f_residual_scale) : t;
    };

    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = g.w.layers[size_t(il)];
        Tensor *cur = g.build_norm(x, l.attn_norm, nullptr, NormType::rms, il);

        auto [q, k, v] = g.build_qkv(l, cur, il);
        if (l.attn_q_norm != nullptr)
            q = g.build_norm(q, l.attn_q_norm, nullptr, NormType::rms, il);
        if (l.attn_k_norm != nullptr)
            k = g.build_norm(k, l.attn_k_norm, nullptr, NormType::rms, il);
        q = g.name(g.build_rope(q, pos, il), "Qcur", il);
        k = g.name(g.build_rope(k, pos, il), "Kcur", il);
        cur = g.build_attn(attn, {q, k, v}, {.wo = l.wo, .wo_b = l.bo, .kq_scale = kq_scale}, il);

        if (il == hp.n_layer - 1 && out_ids != nullptr) {  // only the rows that give logits
            cur = get_rows(g.ctx0, cur, out_ids);
            x = get_rows(g.ctx0, x, out_ids);
        }
        Tensor *ffn_in = g.name(add(g.ctx0, residual_scaled(cur), x), "ffn_inp", il);
        cur = g.build_norm(ffn_in, l.ffn_norm, nullptr, NormType::rms, il);
        cur = build_layer_ffn(
            g, l, cur,
            {.norm_weights = options.moe_norm_weights, .weights_scale = hp.expert_weights_scale},
            il);
        x = g.name(add(g.ctx0, residual_scaled(cur), ffn_in), "l_out", il);
    }
    g.build_logits(g.build_norm(x, g.w.output_norm, nullptr, NormType::rms, -1));
}

namespace {

void load_llama(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    load_llama_weights(w, hp, m, {});
}

}  // namespace

extern const ArchDescriptor kArch_llama{.name = "llama",
                                        .rope_mode = RopeMode::normal,
                                        .load_weights = load_llama,
                                        .build_graph = build_llama_graph};

}  // namespace loom::engine
