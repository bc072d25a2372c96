// The mixture-of-experts feed-forward block: a router picks k experts per token, each expert is
// a feed-forward network stored as one slice of stacked weights, and the token's output is the
// weighted sum of its experts' outputs.
#include <cmath>

#include "engine/graph/graph_context.h"
#include "loom/error.h"

namespace loom::engine {

// The smallest normal F16, the floor of a sum of expert weights before dividing by it: weights
// that all underflowed must not become 0/0.
constexpr float kMinWeightSum = 6.103515625e-5f;

std::pair<Tensor *, Tensor *> GraphContext::build_moe_routing(Tensor *cur, const MoeWeights &moe,
                                                              const MoeOptions &o, int64_t il) {
    const int64_t n_expert = o.n_expert, n_tokens_cur = cur->ne[1];
    Tensor *logits = o.probs_in != nullptr ? o.probs_in : mul_mat(ctx0, moe.gate_inp, cur);
    if (moe.gate_inp_b != nullptr) logits = add(ctx0, logits, moe.gate_inp_b);
    name(logits, "ffn_moe_logits", il);  // [n_expert, n_tokens]

    Tensor *probs = nullptr;
    switch (o.gating) {
        case MoeGating::softmax:
            probs = soft_max(ctx0, logits);
            break;
        case MoeGating::sigmoid:
            probs = sigmoid(ctx0, logits);
            break;
        case MoeGating::softmax_weight:
            probs = logits;
            break;
        case MoeGating::sqrt_softplus:
            probs = sqrt(ctx0, softplus(ctx0, logits));
            break;
    }
    name(probs, "ffn_moe_probs", il);

    // The selection bias (DeepSeek V3's load balancing) changes which experts win, not how much
    // they weigh: the weights below come from the unbiased probs.
    Tensor *selection = probs;
    if (moe.exp_probs_b != nullptr) {
        selection = name(add(ctx0, probs, moe.exp_probs_b), "ffn_moe_probs_biased", il);
    }

    if (o.n_groups > 1) {
        // Each group scores the sum of its two best experts; the experts of all but the
        // n_group_used best groups are masked with -inf before the top-k.
        const int64_t per_group = n_expert / o.n_groups;
        Tensor *groups = reshape(ctx0, selection, {per_group, o.n_groups, n_tokens_cur});
        Tensor *best_two = argsort_top_k(ctx0, groups, 2);  // [2, n_groups, n_tokens]
        Tensor *scores = get_rows(
            ctx0, reshape(ctx0, groups, {1, per_group, o.n_groups, n_tokens_cur}), best_two);
        scores = sum_rows(ctx0, reshape(ctx0, scores, {2, o.n_groups, n_tokens_cur}));
        scores = reshape(ctx0, scores, {o.n_groups, n_tokens_cur});
        Tensor *kept = name(argsort_top_k(ctx0, scores, int(o.n_group_used)), "ffn_moe_group_topk",
                            il);  // [n_group_used, n_tokens]
        Tensor *kept_scores = get_rows(ctx0, groups, kept);
        Tensor *masked = set_rows(ctx0, fill(ctx0, groups, -INFINITY), kept_scores, kept);
        selection =
            name(reshape(ctx0, masked, {n_expert, n_tokens_cur}), "ffn_moe_probs_masked", il);
    }

    Tensor *selected = o.selected_in != nullptr
                           ? o.selected_in
                           : argsort_top_k(ctx0, selection, int(o.n_expert_used));
    return {probs, name(selected, "ffn_moe_topk", il)};  // [n_expert_used, n_tokens]
}

Tensor *GraphContext::build_moe_ffn(Tensor *cur, const MoeWeights &moe, const MoeOptions &o,
                                    int64_t il) {
    const int64_t n_embd = cur->ne[0], n_tok = cur->ne[1], k = o.n_expert_used;
    if (k < 1 || k > o.n_expert) {
        fail("graph", "{} experts used of {}", k, o.n_expert);
    }
    auto [probs, selected] = build_moe_routing(cur, moe, o, il);

    // The chosen experts' probabilities: [1, k, n_tokens]
    Tensor *weights = get_rows(ctx0, reshape(ctx0, probs, {1, o.n_expert, n_tok}), selected);
    if (o.gating == MoeGating::softmax_weight) {
        weights = soft_max(ctx0, reshape(ctx0, weights, {k, n_tok}));
        weights = reshape(ctx0, weights, {1, k, n_tok});
    }
    if (o.norm_weights) {
        Tensor *w2 = reshape(ctx0, weights, {k, n_tok});
        Tensor *sum = clamp(ctx0, sum_rows(ctx0, w2), kMinWeightSum, INFINITY);
        weights = reshape(ctx0, div(ctx0, w2, sum), {1, k, n_tok});
    }
    if (o.weights_scale != 0.0f && o.weights_scale != 1.0f) {
        weights = scale(ctx0, weights, o.weights_scale);
    }
    name(weights, "ffn_moe_weights", il);

    // Each chosen expert's bias row added to its output t [n_out, k, n_tokens] (ggml's add_id).
    // (a copy of the structured binding: C++20 lets a lambda capture one, clang 14 does not)
    Tensor *const chosen = selected;
    Tensor *selected_flat = nullptr;
    auto add_bias = [&](Tensor *t, Tensor *bias) {
        if (bias == nullptr) return t;
        if (selected_flat == nullptr) {
            selected_flat = reshape(ctx0, contiguous(ctx0, chosen), {k * n_tok});
        }
        Tensor *rows = get_rows(ctx0, bias, selected_flat);  // [n_out, k * n_tokens]
        return add(ctx0, t, reshape(ctx0, rows, {t->ne[0], k, n_tok}));
    };

    // Every chosen expert on its token: mul_mat_id reads b [n_embd, 1, n_tokens] for each slot.
    Tensor *x = reshape(ctx0, cur, {n_embd, 1, n_tok});
    Tensor *up, *gate = nullptr;
    if (moe.gate_up_exps != nullptr) {
        Tensor *gate_up = name(mul_mat_id(ctx0, moe.gate_up_exps, x, selected), "ffn_moe_gate_up",
                               il);  // [2 * n_ff, k, n_tokens]: gate, then up
        const int64_t n_ff = gate_up->ne[0] / 2;
        gate = view_3d(ctx0, gate_up, n_ff, k, n_tok, gate_up->nb[1], gate_up->nb[2], 0);
        up = view_3d(ctx0, gate_up, n_ff, k, n_tok, gate_up->nb[1], gate_up->nb[2],
                     size_t(n_ff) * gate_up->nb[0]);
    } else {
        up = name(add_bias(mul_mat_id(ctx0, moe.up_exps, x, selected), moe.up_exps_b), "ffn_moe_up",
                  il);
        if (moe.gate_exps != nullptr) {
            gate = name(add_bias(mul_mat_id(ctx0, moe.gate_exps, x, selected), moe.gate_exps_b),
                        "ffn_moe_gate", il);
        }
    }
    Tensor *act = name(build_activation(gate, up, o.act), "ffn_moe_act", il);
    Tensor *experts =
        name(add_bias(mul_mat_id(ctx0, moe.down_exps, act, selected), moe.down_exps_b),
             "ffn_moe_down", il);
    experts = name(mul(ctx0, experts, weights), "ffn_moe_weighted", il);  // [n_embd, k, n_tokens]

    // Sum over the k slots in slot order.
    Tensor *out = nullptr;
    for (int64_t i = 0; i < k; ++i) {
        Tensor *slot =
            view_2d(ctx0, experts, n_embd, n_tok, experts->nb[2], size_t(i) * experts->nb[1]);
        out = out == nullptr ? slot : add(ctx0, out, slot);
    }
    if (k == 1) out = cont(ctx0, out);
    return name(out, "ffn_moe_out", il);
}

}  // namespace loom::engine
