// OpenAI gpt-oss: pre-norm blocks (RMS norms) of grouped-query attention with biases on every
// projection, NeoX rotary positions with YaRN, a learned sink logit per head in every softmax,
// every other layer (the even ones) attending through a sliding window; the feed-forward is a
// mixture of experts with biases everywhere: a router with a bias whose top-k logits are
// softmaxed into the weights, and experts whose gate and up go through a clamped SwiGLU.
#include <cmath>

#include "engine/graph/graph_context.h"
#include "engine/models/attention.h"
#include "engine/models/embeddings.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

void read_gpt_oss_hparams(const gguf::Metadata &meta, HParams &hp) {
    if (!meta.has(arch_key(hp, "attention.sliding_window"))) {
        fail("model", "{} is missing", arch_key(hp, "attention.sliding_window"));
    }
    read_sliding_window(meta, hp, 0, 2);
    // The window's layers rotate as the others unless the file gives them their own base.
    hp.rope_freq_base_swa =
        read_float(meta, arch_key(hp, "rope.freq_base_swa")).value_or(hp.rope_freq_base);
    hp.rope_freq_scale_swa = hp.rope_freq_scale;
    if (hp.n_expert == 0) fail("model", "{} is missing", arch_key(hp, "expert_count"));
}

void load_gpt_oss(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff_exp, n_expert = hp.n_expert;
    load_embeddings(w, hp, m, OutputHead::own);
    m.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerWeights &l = m.layers[size_t(il)];
        auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
        l.attn_norm = w.require(name("attn_norm.weight"), {n_embd});
        load_attn_weights(w, hp, il, l, {.biases = true});
        l.bo = w.require(name("attn_output.bias"), {n_embd});
        l.attn_sinks = w.require(name("attn_sinks.weight"), {hp.n_head});
        l.attn_post_norm = w.require(name("post_attention_norm.weight"), {n_embd});
        l.ffn_gate_inp = w.require(name("ffn_gate_inp.weight"), {n_embd, n_expert});
        l.ffn_gate_inp_b = w.require(name("ffn_gate_inp.bias"), {n_expert});
        l.ffn_gate_exps = w.require(name("ffn_gate_exps.weight"), {n_embd, n_ff, n_expert});
        l.ffn_up_exps = w.require(name("ffn_up_exps.weight"), {n_embd, n_ff, n_expert});
        l.ffn_down_exps = w.require(name("ffn_down_exps.weight"), {n_ff, n_embd, n_expert});
        l.ffn_gate_exps_b = w.require(name("ffn_gate_exps.bias"), {n_ff, n_expert});
        l.ffn_up_exps_b = w.require(name("ffn_up_exps.bias"), {n_ff, n_expert});
        l.ffn_down_exps_b = w.require(name("ffn_down_exps.bias"), {n_embd, n_expert});
    }
}

//   x = embed(tokens)
//   per layer: x += attn_with_sinks(rms_norm(x)); x += moe(rms_norm(x))
//   logits = output(rms_norm(x))
void build_gpt_oss(GraphContext &g) {
    const HParams &hp = g.hp;
    Tensor *x = g.build_inp_embd();
    Tensor *pos = g.build_inp_pos();
    InputAttnKv *attn = g.build_attn_inp_kv();
    Tensor *out_ids = g.build_inp_out_ids();
    const float kq_scale = 1.0f / std::sqrt(float(hp.n_rot));

    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = g.w.layers[size_t(il)];
        Tensor *cur = g.build_norm(x, l.attn_norm, nullptr, NormType::rms, il);
        auto [q, k, v] = g.build_qkv(l, cur, il);
        q = g.name(g.build_rope(q, pos, il), "Qcur", il);
        k = g.name(g.build_rope(k, pos, il), "Kcur", il);
        cur = g.build_attn(attn, {q, k, v},
                           {.wo = l.wo, .wo_b = l.bo, .kq_scale = kq_scale, .sinks = l.attn_sinks},
                           il);
        if (il == hp.n_layer - 1 && out_ids != nullptr) {  // only the rows that give logits
            cur = get_rows(g.ctx0, cur, out_ids);
            x = get_rows(g.ctx0, x, out_ids);
        }
        Tensor *ffn_in = g.name(add(g.ctx0, cur, x), "ffn_inp", il);
        cur = g.build_norm(ffn_in, l.attn_post_norm, nullptr, NormType::rms, il);
        cur = g.build_moe_ffn(cur,
                              {.gate_inp = l.ffn_gate_inp,
                               .gate_inp_b = l.ffn_gate_inp_b,
                               .up_exps = l.ffn_up_exps,
                               .gate_exps = l.ffn_gate_exps,
                               .down_exps = l.ffn_down_exps,
                               .up_exps_b = l.ffn_up_exps_b,
                               .gate_exps_b = l.ffn_gate_exps_b,
                               .down_exps_b = l.ffn_down_exps_b},
                              {.n_expert = hp.n_expert,
                               .n_expert_used = hp.n_expert_used,
                               .act = Activation::swiglu_oai,
                               .gating = MoeGating::softmax_weight,
                               .weights_scale = hp.expert_weights_scale},
                              il);
        x = g.name(add(g.ctx0, cur, ffn_in), "l_out", il);
    }
    g.build_logits(g.build_norm(x, g.w.output_norm, nullptr, NormType::rms, -1));
}

}  // namespace

extern const ArchDescriptor kArch_gpt_oss{.name = "gpt-oss",
                                          .rope_mode = RopeMode::neox,
                                          .read_hparams = read_gpt_oss_hparams,
                                          .load_weights = load_gpt_oss,
                                          .build_graph = build_gpt_oss};

}  // namespace loom::engine
