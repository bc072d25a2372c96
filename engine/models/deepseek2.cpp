// DeepSeek 2 / 3: multi-head latent attention and a mixture of experts.
//
// Attention: Q comes through a low-rank projection (q_a → RMS norm → q_b) and K/V from a
// compressed latent of kv_lora_rank values per token (kv_a → RMS norm) plus a small rotary key
// shared by all heads. In the absorbed layout (attn_k_b / attn_v_b) the cache holds just
// [latent | rotary key] per token and attention runs as one KV head: attn_k_b moves into Q and
// attn_v_b turns each head's attended latent into its output. In the legacy layout (attn_kv_b)
// the latent is expanded to per-head K and V first. Each head's rotary dims are its last n_rot.
// Mistral Large 3 multiplies Q by a temperature that grows with the position.
//
// Feed-forward: n_layer_dense_lead dense SwiGLU layers, then MoE layers (sigmoid or softmax
// router, selection bias, expert groups, weights normalised and scaled) plus shared experts.
#include <cmath>

#include "engine/graph/graph_context.h"
#include "engine/models/embeddings.h"
#include "engine/models/experts.h"

namespace loom::engine {
namespace {

void load_attention(WeightLoader &w, const HParams &hp, int64_t il, LayerWeights &l) {
    auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
    const int64_t n_embd = hp.n_embd, n_head = hp.n_head, rank = hp.n_lora_kv;
    const int64_t k_head = hp.n_embd_head_k_mla, v_head = hp.n_embd_head_v_mla;
    const int64_t nope = k_head - hp.n_rot;
    if (hp.n_lora_q > 0) {
        l.wq_a = w.require(name("attn_q_a.weight"), {n_embd, hp.n_lora_q});
        l.attn_q_a_norm = w.require(name("attn_q_a_norm.weight"), {hp.n_lora_q});
        l.wq_b = w.require(name("attn_q_b.weight"), {hp.n_lora_q, n_head * k_head});
    } else {
        l.wq = w.require(name("attn_q.weight"), {n_embd, n_head * k_head});
    }
    l.wkv_a_mqa = w.require(name("attn_kv_a_mqa.weight"), {n_embd, rank + hp.n_rot});
    l.attn_kv_a_norm = w.require(name("attn_kv_a_norm.weight"), {rank});
    if (hp.is_mla) {
        l.wk_b = w.require(name("attn_k_b.weight"), {nope, rank, n_head});
        l.wv_b = w.require(name("attn_v_b.weight"), {rank, v_head, n_head});
    } else {
        l.wkv_b = w.require(name("attn_kv_b.weight"), {rank, n_head * (nope + v_head)});
    }
    l.wo = w.require(name("attn_output.weight"), {n_head * v_head, n_embd});
}

void load_deepseek2(WeightLoader &w, const HParams &hp, ModelWeights &m) {
    if (hp.n_lora_kv <= 0) fail("model", "{}.attention.kv_lora_rank is missing", hp.arch);
    if (hp.n_expert <= 0) fail("model", "{}.expert_count is missing", hp.arch);
    load_embeddings(w, hp, m, OutputHead::own_or_tied);
    m.layers.resize(size_t(hp.n_layer));
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        LayerWeights &l = m.layers[size_t(il)];
        auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
        l.attn_norm = w.require(name("attn_norm.weight"), {hp.n_embd});
        load_attention(w, hp, il, l);
        l.ffn_norm = w.require(name("ffn_norm.weight"), {hp.n_embd});
        if (il < hp.n_layer_dense_lead) {
            l.ffn_gate = w.require(name("ffn_gate.weight"), {hp.n_embd, hp.n_ff});
            l.ffn_up = w.require(name("ffn_up.weight"), {hp.n_embd, hp.n_ff});
            l.ffn_down = w.require(name("ffn_down.weight"), {hp.n_ff, hp.n_embd});
            continue;
        }
        load_routed_experts(w, hp, il, l);
        l.ffn_exp_probs_b = w.optional(name("exp_probs_b.bias"), {hp.n_expert});
        if (hp.n_expert_shared > 0) {
            load_shared_expert(w, hp, il, hp.n_ff_exp * hp.n_expert_shared, l);
        }
    }
}

// [n_embd, n_tokens] → the attention output [n_embd, n_tokens]. temp: each token's attention
// temperature F32 [1, 1, n_tokens] that Q is multiplied by, or null.
Tensor *build_latent_attention(GraphContext &g, const LayerWeights &l, Tensor *cur, Tensor *pos,
                               Tensor *temp, InputAttnKv *attn, int64_t il) {
    const HParams &hp = g.hp;
    loom::Context &ctx = g.ctx0;
    const int64_t n_tokens = g.n_tokens, n_head = hp.n_head, n_rot = hp.n_rot;
    const int64_t rank = hp.n_lora_kv, k_head = hp.n_embd_head_k_mla;
    const int64_t nope = k_head - n_rot;
    const size_t elt = sizeof(float);

    Tensor *q = l.wq_a != nullptr ? mul_mat(ctx, l.wq_b,
                                            g.build_norm(mul_mat(ctx, l.wq_a, cur), l.attn_q_a_norm,
                                                         nullptr, NormType::rms, il))
                                  : mul_mat(ctx, l.wq, cur);
    q = reshape(ctx, q, {k_head, n_head, n_tokens});
    Tensor *q_nope = view_3d(ctx, q, nope, n_head, n_tokens, q->nb[1], q->nb[2], 0);
    Tensor *q_pe = view_3d(ctx, q, n_rot, n_head, n_tokens, q->nb[1], q->nb[2], size_t(nope) * elt);
    q_pe = g.name(g.build_rope(q_pe, pos, il), "q_pe", il);

    // [latent | rotary key] per token
    Tensor *kv_a = g.name(mul_mat(ctx, l.wkv_a_mqa, cur), "kv_cmpr_pe", il);
    Tensor *latent = view_2d(ctx, kv_a, rank, n_tokens, kv_a->nb[1], 0);
    latent = g.build_norm(latent, l.attn_kv_a_norm, nullptr, NormType::rms, il);
    Tensor *k_pe =
        view_3d(ctx, kv_a, n_rot, 1, n_tokens, kv_a->nb[1], kv_a->nb[1], size_t(rank) * elt);
    k_pe = g.name(g.build_rope(k_pe, pos, il), "k_pe", il);

    // YaRN's magnitude correction enters the scores squared (1 without scaling).
    const float kq_scale = yarn_kq_mscale2(g.model) / std::sqrt(float(k_head));
    if (hp.is_mla) {
        // Q · K over the latent: q_nope · (k_b · latent) = (k_b^T · q_nope) · latent.
        Tensor *q_absorbed = mul_mat(ctx, l.wk_b, permute(ctx, q_nope, 0, 2, 1, 3));
        q_absorbed = permute(ctx, q_absorbed, 0, 2, 1, 3);  // [rank, n_head, n_tokens]
        Tensor *q_cur = g.name(concat(ctx, q_absorbed, q_pe, 0), "Qcur", il);
        if (temp != nullptr) q_cur = g.name(mul(ctx, q_cur, temp), "Qcur_attn_temp_scaled", il);
        latent = reshape(ctx, latent, {rank, 1, n_tokens});
        Tensor *k_cur = g.name(concat(ctx, latent, k_pe, 0), "Kcur", il);
        return g.build_attn(attn, {q_cur, k_cur, latent},
                            {.wo = l.wo, .kq_scale = kq_scale, .v_mla = l.wv_b}, il);
    }
    // Legacy layout: per-head K = [k_nope | the shared rotary key], V from the expansion.
    const int64_t v_head = hp.n_embd_head_v_mla;
    Tensor *kv = g.name(mul_mat(ctx, l.wkv_b, latent), "kv", il);
    const size_t row = size_t(nope + v_head) * elt;
    Tensor *k_nope = view_3d(ctx, kv, nope, n_head, n_tokens, row, row * size_t(n_head), 0);
    Tensor *v_cur = cont(ctx, view_3d(ctx, kv, v_head, n_head, n_tokens, row, row * size_t(n_head),
                                      size_t(nope) * elt));
    Tensor *q_cur = g.name(concat(ctx, q_nope, q_pe, 0), "Qcur", il);
    if (temp != nullptr) q_cur = g.name(mul(ctx, q_cur, temp), "Qcur_attn_temp_scaled", il);
    Tensor *k_pe_heads = repeat(ctx, k_pe, ctx.new_tensor(DType::F32, {n_rot, n_head, n_tokens}));
    Tensor *k_cur = g.name(concat(ctx, k_nope, k_pe_heads, 0), "Kcur", il);
    return g.build_attn(attn, {q_cur, k_cur, v_cur}, {.wo = l.wo, .kq_scale = kq_scale}, il);
}

MoeGating gating_of(const HParams &hp) {
    switch (hp.expert_gating_func) {
        case 0:  // files from before the key existed: DeepSeek V2's softmax
        case 1:
            return MoeGating::softmax;
        case 2:
            return MoeGating::sigmoid;
        case 3:
            return MoeGating::softmax_weight;
        case 4:
            return MoeGating::sqrt_softplus;
    }
    fail("model", "{}.expert_gating_func = {} is not a known gating function", hp.arch,
         hp.expert_gating_func);
}

//   x = embed(tokens)
//   per layer: x += latent_attn(rms_norm(x)); x += ffn_or_experts(rms_norm(x))
//   logits = output(rms_norm(x))
void build_deepseek2(GraphContext &g) {
    const HParams &hp = g.hp;
    Tensor *x = g.build_inp_embd();
    // Mistral Large 3's attention temperature: Q scaled by a factor growing with the position.
    Tensor *temp = hp.f_attn_temp_scale != 0.0f ? g.build_inp_attn_scale() : nullptr;
    Tensor *pos = g.build_inp_pos();
    InputAttnKv *attn = hp.is_mla ? g.build_attn_inp_k() : g.build_attn_inp_kv();
    Tensor *out_ids = g.build_inp_out_ids();
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const LayerWeights &l = g.w.layers[size_t(il)];
        Tensor *cur = g.build_norm(x, l.attn_norm, nullptr, NormType::rms, il);
        cur = build_latent_attention(g, l, cur, pos, temp, attn, il);
        if (il == hp.n_layer - 1 && out_ids != nullptr) {  // only the rows that give logits
            cur = get_rows(g.ctx0, cur, out_ids);
            x = get_rows(g.ctx0, x, out_ids);
        }
        Tensor *ffn_in = g.name(add(g.ctx0, cur, x), "ffn_inp", il);
        cur = g.build_norm(ffn_in, l.ffn_norm, nullptr, NormType::rms, il);
        cur = build_layer_ffn(g, l, cur,
                              {.gating = gating_of(hp),
                               .norm_weights = hp.expert_weights_norm,
                               .weights_scale = hp.expert_weights_scale,
                               .n_groups = hp.n_expert_groups,
                               .n_group_used = hp.n_group_used},
                              il);
        x = g.name(add(g.ctx0, cur, ffn_in), "l_out", il);
    }
    g.build_logits(g.build_norm(x, g.w.output_norm, nullptr, NormType::rms, -1));
}

// DeepSeek's converter stores YaRN's mscale_all_dim times 0.1 as
// rope.scaling.yarn_log_multiplier. DeepSeek V2's configs give mscale = mscale_all_dim (their
// ratio, the rotary magnitude, is then 1); V3's give 1 for both, which llama.cpp reads the same
// way.
void read_yarn_log_multiplier(const gguf::Metadata &meta, HParams &hp) {
    const auto log_mul = read_float(meta, arch_key(hp, "rope.scaling.yarn_log_multiplier"));
    if (!log_mul) return;
    if (!std::isfinite(*log_mul)) {
        fail("model", "{}.rope.scaling.yarn_log_multiplier = {} is not a number", hp.arch,
             *log_mul);
    }
    hp.yarn_log_mul = *log_mul / 0.1f;
    if (hp.yarn_log_mul != 1.0f) hp.yarn_mscale = hp.yarn_log_mul;
}

// Mistral Large 3 (Llama 4's temperature tuning): Q of position p multiplied by
// 1 + temperature_scale * ln(floor(p / temperature_length) + 1); no offset.
void read_attn_temperature(const gguf::Metadata &meta, HParams &hp) {
    const std::string scale_key = arch_key(hp, "attention.temperature_scale");
    const std::string length_key = arch_key(hp, "attention.temperature_length");
    hp.f_attn_temp_scale = read_float(meta, scale_key).value_or(0.0f);
    if (!std::isfinite(hp.f_attn_temp_scale)) {
        fail("model", "{} = {} is not a number", scale_key, hp.f_attn_temp_scale);
    }
    hp.n_attn_temp_floor_scale = meta.get_integer_optional<int64_t>(length_key).value_or(0);
    if (hp.f_attn_temp_scale != 0.0f && hp.n_attn_temp_floor_scale <= 0) {
        fail("model", "{} = {} needs a positive {}", scale_key, hp.f_attn_temp_scale, length_key);
    }
    hp.f_attn_temp_offset = 0.0f;
}

void read_deepseek2_hparams(const gguf::Metadata &meta, HParams &hp) {
    read_yarn_log_multiplier(meta, hp);
    read_attn_temperature(meta, hp);
}

}  // namespace

extern const ArchDescriptor kArch_deepseek2{.name = "deepseek2",
                                            .rope_mode = RopeMode::normal,
                                            .read_hparams = read_deepseek2_hparams,
                                            .load_weights = load_deepseek2,
                                            .build_graph = build_deepseek2};

}  // namespace loom::engine
