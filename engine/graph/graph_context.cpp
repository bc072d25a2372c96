#include "engine/graph/graph_context.h"

#include <fmt/format.h>
#include <cmath>

#include "loom/error.h"

namespace loom::engine {

GraphContext::GraphContext(const GraphParams &params, GraphResult &result)
    : model(*params.model),
      hp(params.model->hparams()),
      w(params.model->weights()),
      memory(params.memory),
      ubatch(params.ubatch),
      n_tokens(params.ubatch.n_tokens()),
      n_outputs(params.n_outputs),
      flash_attn(params.cparams.flash_attn),
      keep_embeddings(params.cparams.embeddings),
      rope_factors(engine::rope_factors(*params.model, params.cparams.n_ctx_seq)),
      ctx0(result.ctx()),
      gf(new_graph(result.ctx(), kGraphNodes)),
      res_(result),
      params_(params) {
    res_.set_graph(gf);
}

Tensor *GraphContext::name(Tensor *t, const char *base, int64_t il) const {
    return set_name(t, il < 0 ? std::string(base) : fmt::format("{}-{}", base, il));
}

Tensor *GraphContext::build_inp_embd(float token_scale) {
    // Three ways to the first layer's input: token ids looked up in tok_embd, raw embeddings, or
    // a mix of both (each row taken from one or the other). All three are in every graph and a
    // select flags the one this ubatch uses, so a graph's shape does not depend on the batch's
    // contents.
    auto *inp = res_.add_input(std::make_unique<InputEmbd>());
    inp->tokens = name(set_input(ctx0.new_tensor(DType::I32, {n_tokens})), "inp_tokens");
    inp->embd = name(set_input(ctx0.new_tensor(DType::F32, {hp.n_embd, n_tokens})), "inp_embd_raw");
    inp->rows = name(set_input(ctx0.new_tensor(DType::I32, {n_tokens})), "inp_embd_rows");
    Tensor *looked_up = name(get_rows(ctx0, w.tok_embd, inp->tokens), "inp_embd");
    Tensor *lookup = looked_up;
    if (token_scale != 0.0f) looked_up = name(scale(ctx0, looked_up, token_scale), "inp_scaled");
    // Row t of the mix: row t of the lookup or row n_tokens + t of the raw embeddings.
    Tensor *both = concat(ctx0, looked_up, inp->embd, 1);
    Tensor *mixed = name(get_rows(ctx0, both, inp->rows), "inp_embd_mixed");
    Tensor *const branches[] = {looked_up, inp->embd, mixed};
    const size_t chosen = ubatch.is_mixed() ? 2 : ubatch.has_embd() ? 1 : 0;
    Tensor *cur = build_forward_select(gf, branches, chosen);
    // The lookup depends only on an input: scheduled first, where its (large) weight is.
    if (chosen != 1) build_forward_order(gf, lookup);
    if (hp.f_embedding_scale != 0.0f) cur = scale(ctx0, cur, hp.f_embedding_scale);
    return cur;
}

Tensor *GraphContext::build_inp_pos() {
    auto *inp = res_.add_input(std::make_unique<InputPos>());
    inp->n_pos_per_embd = model.arch().n_pos_per_embd;
    inp->pos =
        name(set_input(ctx0.new_tensor(DType::I32, {n_tokens * inp->n_pos_per_embd})), "inp_pos");
    return inp->pos;
}

Tensor *GraphContext::build_inp_out_ids() {
    if (n_outputs == n_tokens) return nullptr;
    auto *inp = res_.add_input(std::make_unique<InputOutIds>());
    inp->ids = name(set_input(ctx0.new_tensor(DType::I32, {n_outputs})), "inp_out_ids");
    return inp->ids;
}

InputAttnKv *GraphContext::build_attn_inp_kv() {
    if (memory == nullptr) fail("graph", "{} needs a KV cache", hp.arch);
    auto *inp = res_.add_input(std::make_unique<InputAttnKv>());
    const int64_t ns = ubatch.n_stream;
    for (int i = 0; i < memory->n_caches(); ++i) {
        const KvCache &kv = memory->cache(i);
        const int64_t n_kv = params_.slots.slots.at(size_t(i)).n_kv;
        const std::string tag = i == 0 ? "" : "_" + std::to_string(i);
        InputAttnKv::PerCache c;
        c.k_idxs =
            name(set_input(ctx0.new_tensor(DType::I64, {n_tokens})), ("inp_k_idxs" + tag).c_str());
        if (!kv.k_only()) {
            c.v_idxs = name(set_input(ctx0.new_tensor(DType::I64, {kv.v_idxs_count(n_tokens)})),
                            ("inp_v_idxs" + tag).c_str());
        }
        c.kq_mask = name(set_input(ctx0.new_tensor(DType::F32, {n_kv, n_tokens / ns, 1, ns})),
                         ("kq_mask" + tag).c_str());
        inp->caches.push_back(c);
    }
    return inp;
}

InputAttnKv *GraphContext::build_attn_inp_k() {
    if (memory == nullptr) fail("graph", "{} needs a K-only cache", hp.arch);
    for (int i = 0; i < memory->n_caches(); ++i) {
        if (!memory->cache(i).k_only()) fail("graph", "{} needs a K-only cache", hp.arch);
    }
    return build_attn_inp_kv();
}

Tensor *GraphContext::build_inp_attn_scale() {
    auto *inp = res_.add_input(std::make_unique<InputAttnScale>());
    inp->temp_scale = hp.f_attn_temp_scale;
    inp->floor_scale = hp.n_attn_temp_floor_scale;
    inp->offset = hp.f_attn_temp_offset;
    inp->scale = name(set_input(ctx0.new_tensor(DType::F32, {1, 1, n_tokens})), "inp_attn_scale");
    return inp->scale;
}

InputAttnNoCache *GraphContext::build_attn_inp_no_cache() {
    auto *inp = res_.add_input(std::make_unique<InputAttnNoCache>());
    inp->causal = params_.cparams.causal;
    inp->alibi = hp.f_max_alibi_bias > 0.0f;
    inp->kq_mask = name(set_input(ctx0.new_tensor(DType::F32, {n_tokens, n_tokens})), "kq_mask");
    return inp;
}

Tensor *GraphContext::build_norm(Tensor *cur, Tensor *weight, Tensor *bias, NormType type,
                                 int64_t il) {
    cur =
        type == NormType::rms ? rms_norm(ctx0, cur, hp.norm_rms_eps) : norm(ctx0, cur, hp.norm_eps);
    if (weight != nullptr) cur = mul(ctx0, cur, weight);
    if (bias != nullptr) cur = add(ctx0, cur, bias);
    return name(cur, "norm", il);
}

Tensor *GraphContext::build_linear(Tensor *weight, Tensor *x, Tensor *bias) {
    Tensor *cur = mul_mat(ctx0, weight, x);
    // In the graph as soon as it is made, so that products of the same input built one after
    // another (Q, K, V; gate, up) are adjacent nodes, which the CPU backend runs as one.
    build_forward_expand(gf, cur);
    return bias != nullptr ? add(ctx0, cur, bias) : cur;
}

Qkv GraphContext::build_qkv(const LayerWeights &l, Tensor *cur, int64_t il) {
    const int64_t d_k = hp.n_embd_head_k, d_v = hp.n_embd_head_v;
    if (l.wqkv != nullptr) {
        Tensor *qkv = name(build_linear(l.wqkv, cur, l.bqkv), "wqkv", il);
        const size_t elt = qkv->nb[0];
        const size_t k_offset = size_t(d_k * hp.n_head) * elt;
        const size_t v_offset = k_offset + size_t(hp.n_embd_k_gqa()) * elt;
        return {.q = view_3d(ctx0, qkv, d_k, hp.n_head, n_tokens, size_t(d_k) * elt, qkv->nb[1], 0),
                .k = view_3d(ctx0, qkv, d_k, hp.n_head_kv, n_tokens, size_t(d_k) * elt, qkv->nb[1],
                             k_offset),
                .v = view_3d(ctx0, qkv, d_v, hp.n_head_kv, n_tokens, size_t(d_v) * elt, qkv->nb[1],
                             v_offset)};
    }
    return {.q = reshape(ctx0, build_linear(l.wq, cur, l.bq), {d_k, hp.n_head, n_tokens}),
            .k = reshape(ctx0, build_linear(l.wk, cur, l.bk), {d_k, hp.n_head_kv, n_tokens}),
            .v = reshape(ctx0, build_linear(l.wv, cur, l.bv), {d_v, hp.n_head_kv, n_tokens})};
}

Tensor *GraphContext::build_activation(Tensor *gate, Tensor *up, Activation act) {
    // OpenAI's constants for gpt-oss (its reference implementation's swiglu).
    constexpr float kOaiAlpha = 1.702f, kOaiLimit = 7.0f;
    if (gate == nullptr) {
        switch (act) {
            case Activation::silu:
                return silu(ctx0, up);
            case Activation::gelu:
                return gelu(ctx0, up);
            case Activation::relu:
                return relu(ctx0, up);
            case Activation::swiglu_oai:
                fail("graph", "swiglu_oai needs a gate");
        }
    }
    switch (act) {
        case Activation::silu:
            return swiglu_split(ctx0, gate, up);
        case Activation::gelu:
            return geglu_split(ctx0, gate, up);
        case Activation::relu:
            return mul(ctx0, relu(ctx0, gate), up);
        case Activation::swiglu_oai:
            return swiglu_oai(ctx0, gate, up, kOaiAlpha, kOaiLimit);
    }
    fail("graph", "unknown activation");
}

Tensor *GraphContext::build_ffn(Tensor *cur, const FfnWeights &ffn, int64_t il) {
    Tensor *up = name(build_linear(ffn.up, cur, ffn.up_b), "ffn_up", il);
    Tensor *gate = ffn.gate == nullptr
                       ? nullptr
                       : name(build_linear(ffn.gate, cur, ffn.gate_b), "ffn_gate", il);
    if (ffn.up_holds_gate) {  // [2 n_ff, n_tokens]: the gate's half, then the up half
        const int64_t n_ff = up->ne[0] / 2;
        gate = view_2d(ctx0, up, n_ff, up->ne[1], up->nb[1], 0);
        up = view_2d(ctx0, up, n_ff, up->ne[1], up->nb[1], size_t(n_ff) * up->nb[0]);
    }
    Tensor *act = name(build_activation(gate, up, ffn.act), "ffn_act", il);
    return name(build_linear(ffn.down, act, ffn.down_b), "ffn_out", il);
}

Tensor *GraphContext::build_rope(Tensor *x, Tensor *pos, int64_t il) {
    return rope_ext(ctx0, x, pos, rope_params(model, il), rope_factors);
}

Tensor *GraphContext::build_attn_mha(Tensor *q, Tensor *k, Tensor *v, bool v_trans, bool cached,
                                     Tensor *kq_mask, const AttnOptions &o, int64_t il) {
    Tensor *cur;
    if (flash_attn && o.kq_b == nullptr) {
        // [head_dim_v, n_head, n_q, ns]
        cur = flash_attn_ext(
            ctx0, q, k, v, kq_mask,
            {.scale = o.kq_scale, .max_bias = hp.f_max_alibi_bias, .logit_softcap = o.softcap},
            o.sinks);
        if (o.v_mla != nullptr) {  // as a matrix product with the queries in dim 1
            cur = mul_mat(ctx0, o.v_mla, permute(ctx0, cur, 0, 2, 1, 3));
            cur = cont(ctx0, permute(ctx0, cur, 0, 2, 1, 3));
        }
    } else {
        // The query heads that share a KV head (head h uses KV head h / n_gqa) become columns
        // of one product, [head_dim, n_q · n_gqa, n_head_kv, ns], so each KV head's K and V are
        // read once rather than once per query head. Every output is the same dot product in
        // the same order as with one product per head, only fewer passes over the cache.
        const int64_t n_q = q->ne[1], n_head = q->ne[2], n_head_kv = k->ne[2], ns = q->ne[3];
        const int64_t n_gqa = n_head / n_head_kv;
        Tensor *q_grouped =
            reshape(ctx0, contiguous(ctx0, q), {q->ne[0], n_q * n_gqa, n_head_kv, ns});
        // Both products sum as llama.cpp's do (SumOrder), so the probabilities are its own. Its
        // Q is a permuted view, which tinyBLAS declines, so F32 scores take ggml_vec_dot's
        // order; an F16 K has Q converted to contiguous F16 first, which tinyBLAS takes. The
        // probabilities are contiguous for the V product, which tinyBLAS takes where the cells
        // are a multiple of 8: always in a cache, whose size llama.cpp pads (masked cells past
        // n_kv add nothing), not always for the batch's own keys.
        const int64_t n_kv = k->ne[1];
        const SumOrder kq_order =
            k->type == DType::F32 ? SumOrder::four_chains : SumOrder::eight_lanes;
        const SumOrder kqv_order =
            cached || n_kv % 8 == 0 ? SumOrder::eight_lanes : SumOrder::four_chains;
        Tensor *kq = mul_mat(ctx0, k, q_grouped, kq_order);
        kq = name(reshape(ctx0, kq, {kq->ne[0], n_q, n_head, ns}), "kq",
                  il);  // [n_kv, n_q, n_head, ns]
        if (o.softcap != 0.0f) {
            kq = scale(ctx0, tanh(ctx0, scale(ctx0, kq, 1.0f / o.softcap)), o.softcap);
            name(kq, "kq_softcapped", il);
        }
        if (o.kq_b != nullptr) kq = name(add(ctx0, kq, o.kq_b), "kq_plus_kq_b", il);
        kq = soft_max_ext(ctx0, kq, kq_mask, {.scale = o.kq_scale, .max_bias = hp.f_max_alibi_bias},
                          o.sinks);
        name(kq, "kq_soft_max", il);
        // V as [n_kv, head_dim_v, n_head_kv, ns]: each output a dot product over the cells
        if (!v_trans) v = cont(ctx0, permute(ctx0, v, 1, 0, 2, 3));
        Tensor *kqv =
            mul_mat(ctx0, v, reshape(ctx0, kq, {kq->ne[0], n_q * n_gqa, n_head_kv, ns}), kqv_order);
        kqv = reshape(ctx0, kqv, {kqv->ne[0], n_q, n_head, ns});  // [head_dim_v, n_q, n_head, ns]
        if (o.v_mla != nullptr) kqv = name(mul_mat(ctx0, o.v_mla, kqv), "kqv_mla", il);
        cur = contiguous(ctx0, permute(ctx0, kqv, 0, 2, 1, 3));  // [head_dim_v, n_head, n_q, ns]
    }
    // the tokens back in the ubatch's order
    return name(reshape(ctx0, cur, {cur->ne[0] * cur->ne[1], n_tokens}), "kqv_out", il);
}

Tensor *GraphContext::build_attn(InputAttnKv *inp, Qkv cur, const AttnOptions &o, int64_t il) {
    const int i = memory->cache_of_layer(il);
    const KvCache &kv = memory->cache(i);
    const InputAttnKv::PerCache &in = inp->caches.at(size_t(i));
    const int64_t n_kv = params_.slots.slots.at(size_t(i)).n_kv;
    // A quantized cache holds K and V rotated (KvCache::k_rotation): the queries turn alike,
    // and the attention's output turns back.
    if (kv.k_rotation() != 0) {
        cur.q = name(hadamard(ctx0, cur.q, kv.k_rotation()), "q_rotated", il);
        cur.k = name(hadamard(ctx0, cur.k, kv.k_rotation()), "k_rotated", il);
    }
    if (kv.v_rotation() != 0) {
        cur.v = name(hadamard(ctx0, cur.v, kv.v_rotation()), "v_rotated", il);
    }
    // The writes come first in the graph, so the reads below see this ubatch's K and V.
    Tensor *k_2d = reshape(ctx0, contiguous(ctx0, cur.k), {hp.n_embd_k_gqa(), n_tokens});
    build_forward_expand(gf, name(kv.store_k(ctx0, il, k_2d, in.k_idxs), "k_store", il));
    if (in.v_idxs != nullptr) {
        Tensor *v_2d = reshape(ctx0, contiguous(ctx0, cur.v), {hp.n_embd_v_gqa(), n_tokens});
        build_forward_expand(gf, name(kv.store_v(ctx0, il, v_2d, in.v_idxs), "v_store", il));
    }

    // The ubatch's tokens are n_stream runs of n_tps, one per KV stream: the streams become
    // dimension 3 of every product, each attending over its own cells.
    const int ns = ubatch.n_stream;
    const int64_t n_tps = n_tokens / ns;
    Tensor *q_cur = contiguous(ctx0, cur.q);
    q_cur = reshape(ctx0, q_cur, {q_cur->ne[0], q_cur->ne[1], n_tps, ns});
    Tensor *q = permute(ctx0, q_cur, 0, 2, 1, 3);               // [head_dim, n_tps, n_head, ns]
    Tensor *k = kv.k_view(ctx0, il, n_kv, ubatch.stream0, ns);  // [head_dim, n_kv, n_head_kv, ns]
    Tensor *v = kv.v_view(ctx0, il, n_kv, ubatch.stream0, ns);
    Tensor *out = build_attn_mha(q, k, v, kv.v_trans(), true, in.kq_mask, o, il);
    if (kv.v_rotation() != 0)
        out = name(hadamard(ctx0, out, kv.v_rotation()), "kqv_out_turned", il);
    return o.wo == nullptr ? out : name(build_linear(o.wo, out, o.wo_b), "attn_out", il);
}

Tensor *GraphContext::build_attn(InputAttnNoCache *inp, Qkv cur, const AttnOptions &o, int64_t il) {
    Tensor *q = permute(ctx0, cur.q, 0, 2, 1, 3);  // [head_dim, n_tokens, n_head]
    Tensor *k = permute(ctx0, cur.k, 0, 2, 1, 3);  // [head_dim, n_tokens, n_head_kv]
    Tensor *v = permute(ctx0, cur.v, 0, 2, 1, 3);
    Tensor *out = build_attn_mha(q, k, v, false, false, inp->kq_mask, o, il);
    return o.wo == nullptr ? out : name(build_linear(o.wo, out, o.wo_b), "attn_out", il);
}

void GraphContext::build_logits(Tensor *cur) {
    // An output (when asked for) so that the allocator does not reuse its memory for the logits.
    res_.embd = name(keep_embeddings ? set_output(cur) : cur, "result_norm");
    Tensor *logits = build_linear(w.output, cur);
    if (hp.f_logit_scale != 0.0f) logits = scale(ctx0, logits, hp.f_logit_scale);
    if (hp.f_final_logit_softcap != 0.0f) {
        const float cap = hp.f_final_logit_softcap;
        logits = scale(ctx0, tanh(ctx0, scale(ctx0, logits, 1.0f / cap)), cap);
    }
    res_.logits = name(set_output(logits), "result_output");
    build_forward_expand(gf, res_.logits);
}

void GraphContext::build_embeddings(Tensor *cur) {
    res_.embd = name(set_output(cur), "result_embd");
    res_.logits = nullptr;
    build_forward_expand(gf, res_.embd);
    if (w.cls == nullptr && w.cls_out == nullptr) return;
    // A reranker's head, on every output row (rank pooling asks for the first token's alone):
    // cls_out(tanh(cls · x + b)) + b, as llama.cpp's rank pooling computes it.
    if (w.cls != nullptr) cur = tanh(ctx0, build_linear(w.cls, cur, w.cls_b));
    if (w.cls_out != nullptr) cur = build_linear(w.cls_out, cur, w.cls_out_b);
    res_.scores = name(set_output(cur), "result_scores");
    build_forward_expand(gf, res_.scores);
}

}  // namespace loom::engine
