// Gemma 2: pre- and post-norms around attention and the feed-forward (RMS norms), a GELU-gated
// feed-forward, NeoX rotary positions, every other layer attending through a sliding window
// (the even ones, window 4096 by default), the attention scores and the logits soft-capped with
// tanh, and the output tied to the token embeddings.
#include <cmath>

#include "engine/models/attention.h"
#include "engine/models/embeddings.h"
#include "engine/models/gemma.h"

namespace loom::engine {

void load_gemma_weights(WeightLoader &w, const HParams &hp, ModelWeights &m,
                        const GemmaOptions &options) {
    const int64_t n_embd = hp.n_embd;
    load_embeddings(w, hp, m, options.tied_output ? OutputHead::tied : OutputHead::own_or_tied);
    m.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerWeights &l = m.layers[size_t(il)];
        auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
        l.attn_norm = w.require(name("attn_norm.weight"), {n_embd});
        load_attn_weights(w, hp, il, l);
        if (options.qk_norm) {
            l.attn_q_norm = w.require(name("attn_q_norm.weight"), {hp.n_embd_head_k});
            l.attn_k_norm = w.require(name("attn_k_norm.weight"), {hp.n_embd_head_k});
        }
        l.attn_post_norm = w.require(name("post_attention_norm.weight"), {n_embd});
        l.ffn_norm = w.require(name("ffn_norm.weight"), {n_embd});
        l.ffn_gate = w.require(name("ffn_gate.weight"), {n_embd, hp.n_ff});
        l.ffn_up = w.require(name("ffn_up.weight"), {n_embd, hp.n_ff});
        l.ffn_down = w.require(name("ffn_down.weight"), {hp.n_ff, n_embd});
        l.ffn_post_norm = w.require(name("post_ffw_norm.weight"), {n_embd});
    }
}

float gemma_query_scale(const HParams &hp, int64_t n_layer_27b) {
    const int64_t scalar = hp.n_layer == n_layer_27b ? hp.n_embd / hp.n_head : hp.n_embd_head_k;
    return 1.0f / std::sqrt(float(scalar));
}

void build_gemma_graph(GraphContext &g, const GemmaOptions &options) {
    const HParams &hp = g.hp;
    const float embd_scale = std::sqrt(float(hp.n_embd));
    // Gemma 3 scales its tokens' embeddings only; Gemma 2 takes no other input.
    Tensor *x = options.qk_norm ? g.build_inp_embd(embd_scale)
                                : scale(g.ctx0, g.build_inp_embd(), embd_scale);
    Tensor *pos = g.build_inp_pos();
    InputAttnKv *attn = g.build_attn_inp_kv();
    Tensor *out_ids = g.build_inp_out_ids();
    const float q_scale = gemma_query_scale(hp, options.n_layer_27b);

    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = g.w.layers[size_t(il)];
        Tensor *cur = g.build_norm(x, l.attn_norm, nullptr, NormType::rms, il);
        auto [q, k, v] = g.build_qkv(l, cur, il);
        if (options.qk_norm) {
            q = g.build_norm(q, l.attn_q_norm, nullptr, NormType::rms, il);
            k = g.build_norm(k, l.attn_k_norm, nullptr, NormType::rms, il);
        }
        q = g.name(g.build_rope(q, pos, il), "Qcur", il);
        k = g.name(g.build_rope(k, pos, il), "Kcur", il);
        q = scale(g.ctx0, q, q_scale);  // Q scaled, the scores not (they are capped as they are)
        cur = g.build_attn(attn, {q, k, v},
                           {.wo = l.wo, .kq_scale = 1.0f, .softcap = hp.f_attn_logit_softcap}, il);
        if (il == hp.n_layer - 1 && out_ids != nullptr) {  // only the rows that give logits
            cur = get_rows(g.ctx0, cur, out_ids);
            x = get_rows(g.ctx0, x, out_ids);
        }
        cur = g.build_norm(cur, l.attn_post_norm, nullptr, NormType::rms, il);
        Tensor *ffn_in = g.name(add(g.ctx0, cur, x), "sa_out", il);
        cur = g.build_norm(ffn_in, l.ffn_norm, nullptr, NormType::rms, il);
        cur = g.build_ffn(
            cur, {.up = l.ffn_up, .gate = l.ffn_gate, .down = l.ffn_down, .act = Activation::gelu},
            il);
        cur = g.build_norm(cur, l.ffn_post_norm, nullptr, NormType::rms, il);
        x = g.name(add(g.ctx0, cur, ffn_in), "l_out", il);
    }
    g.build_logits(g.build_norm(x, g.w.output_norm, nullptr, NormType::rms, -1));
}

namespace {

constexpr GemmaOptions kGemma2{.n_layer_27b = 46};

// Gemma 2 caps the scores (default 50) and the logits (default 30) always; its window's layers
// take the model's rotary frequencies unless the file gives their own base.
void read_gemma2_hparams(const gguf::Metadata &meta, HParams &hp) {
    read_sliding_window(meta, hp, 4096, 2);
    hp.rope_freq_base_swa =
        read_float(meta, arch_key(hp, "rope.freq_base_swa")).value_or(hp.rope_freq_base);
    hp.rope_freq_scale_swa = hp.rope_freq_scale;
    hp.f_attn_logit_softcap = read_float(meta, arch_key(hp, "attn_logit_softcapping")).value_or(50);
    hp.f_final_logit_softcap =
        read_float(meta, arch_key(hp, "final_logit_softcapping")).value_or(30);
}

void load_gemma2(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    load_gemma_weights(w, hp, m, kGemma2);
}

void build_gemma2(GraphContext &g) {
    build_gemma_graph(g, kGemma2);
}

}  // namespace

extern const ArchDescriptor kArch_gemma2{.name = "gemma2",
                                         .rope_mode = RopeMode::neox,
                                         .read_hparams = read_gemma2_hparams,
                                         .load_weights = load_gemma2,
                                         .build_graph = build_gemma2};

}  // namespace loom::engine
