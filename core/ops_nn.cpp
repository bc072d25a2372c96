// Builders for matrix products, normalisation, rotary embedding and attention.
#include <cmath>

#include "core/op_builder.h"

namespace loom {
namespace {

bool is_mask_type(DType t) {
    return t == DType::F32 || t == DType::F16;
}

// mask [n_kv, >= n_q, m2, m3] broadcasts over scores [n_kv, n_q, n_head, ne3].
void check_mask(Op op, const Tensor *scores_like, int64_t n_kv, int64_t n_q, int64_t n_head,
                int64_t ne3, const Tensor *mask) {
    require(is_mask_type(mask->type), op, {scores_like, mask}, "mask must be F32 or F16");
    require(mask->rows_contiguous(), op, {scores_like, mask}, "mask rows must be contiguous");
    require(mask->ne[0] == n_kv && mask->ne[1] >= n_q, op, {scores_like, mask},
            "mask must be [{}, >= {}, ...]", n_kv, n_q);
    require(n_head % mask->ne[2] == 0 && ne3 % mask->ne[3] == 0, op, {scores_like, mask},
            "mask dims 2, 3 must divide {} and {}", n_head, ne3);
}

// Float types, or block formats with a dot product (their rows must be contiguous; K, a's ne0,
// is a whole number of blocks by construction).
bool is_matmul_weight_type(const Tensor *a) {
    if (is_float_type(a->type)) return true;
    return traits(a->type).is_quantized && traits(a->type).vec_dot != nullptr &&
           a->rows_contiguous();
}

}  // namespace

Tensor *mul_mat(Context &ctx, Tensor *a, Tensor *b, SumOrder order) {
    require_not_null(Op::mul_mat, {a, b});
    require(a->ne[0] == b->ne[0], Op::mul_mat, {a, b}, "inner dims differ");
    require(b->ne[2] % a->ne[2] == 0 && b->ne[3] % a->ne[3] == 0, Op::mul_mat, {a, b},
            "b's dims 2 and 3 must be multiples of a's");
    require(is_matmul_weight_type(a), Op::mul_mat, {a, b},
            "a must be F32, F16, BF16 or a block format with a dot product and contiguous rows");
    require(b->type == DType::F32, Op::mul_mat, {a, b}, "b must be F32");
    require(order >= SumOrder::k_blocks && order <= SumOrder::eight_lanes, Op::mul_mat, {a, b},
            "unknown sum order {}", int(order));
    Tensor *t =
        new_result(ctx, Op::mul_mat, DType::F32, {a->ne[1], b->ne[1], b->ne[2], b->ne[3]}, {a, b});
    set_op_params(t, MulMatOpParams{order});
    return t;
}

Tensor *mul_mat_id(Context &ctx, Tensor *as, Tensor *b, Tensor *ids) {
    require_not_null(Op::mul_mat_id, {as, b, ids});
    require(is_matmul_weight_type(as) && as->rows_contiguous(), Op::mul_mat_id, {as, b, ids},
            "experts must be F32, F16, BF16 or a block format with a dot product, with contiguous "
            "rows");
    require(b->type == DType::F32 && ids->type == DType::I32, Op::mul_mat_id, {as, b, ids},
            "b must be F32 and ids I32");
    require(as->ne[0] == b->ne[0] && as->ne[3] == 1 && b->ne[3] == 1, Op::mul_mat_id, {as, b, ids},
            "experts [K, M, n_expert] and b [K, n, n_tokens] expected");
    require(ids->ne[1] == b->ne[2] && ids->ne[2] == 1 && (b->ne[1] == 1 || b->ne[1] == ids->ne[0]),
            Op::mul_mat_id, {as, b, ids},
            "ids must be [n_used, n_tokens] and b [K, 1 or n_used, n_tokens]");
    return new_result(ctx, Op::mul_mat_id, DType::F32, {as->ne[1], ids->ne[0], ids->ne[1], 1},
                      {as, b, ids});
}

Tensor *norm(Context &ctx, Tensor *a, float eps) {
    require_not_null(Op::norm, {a});
    require(a->type == DType::F32, Op::norm, {a}, "F32 only");
    require(eps >= 0.0f, Op::norm, {a}, "eps must not be negative");
    Tensor *t = new_result(ctx, Op::norm, DType::F32, shape_of(a), {a});
    set_op_params(t, NormOpParams{eps});
    return t;
}

Tensor *rms_norm(Context &ctx, Tensor *a, float eps) {
    Tensor *t = norm(ctx, a, eps);
    t->op = Op::rms_norm;
    return t;
}

Tensor *rope_ext(Context &ctx, Tensor *a, Tensor *pos, const RopeParams &params,
                 Tensor *freq_factors) {
    require_not_null(Op::rope, {a, pos});
    require(a->type == DType::F32, Op::rope, {a, pos}, "a must be F32");
    require(pos->type == DType::I32 && pos->ne[0] == a->ne[2], Op::rope, {a, pos},
            "positions must be I32 [n_tokens = a->ne[2]]");
    require(params.n_dims > 0 && params.n_dims % 2 == 0 && params.n_dims <= a->ne[0], Op::rope,
            {a, pos}, "n_dims {} must be even and within the head size", params.n_dims);
    require(params.mode == RopeMode::normal || params.mode == RopeMode::neox, Op::rope, {a, pos},
            "unknown mode {}", int(params.mode));
    if (freq_factors != nullptr) {
        require(freq_factors->type == DType::F32 && freq_factors->ne[0] >= params.n_dims / 2,
                Op::rope, {a, freq_factors}, "freq_factors must be F32 [>= n_dims/2]");
    }
    Tensor *t = new_result(ctx, Op::rope, DType::F32, shape_of(a), {a, pos, freq_factors});
    set_op_params(t, params);
    return t;
}

Tensor *hadamard(Context &ctx, Tensor *a, int64_t n) {
    require_not_null(Op::hadamard, {a});
    require(a->type == DType::F32 && a->rows_contiguous(), Op::hadamard, {a},
            "a must be F32 with contiguous rows");
    require(n >= 2 && (n & (n - 1)) == 0 && a->ne[0] % n == 0, Op::hadamard, {a},
            "the block {} must be a power of two that divides the row of {}", n, a->ne[0]);
    Tensor *t = new_result(ctx, Op::hadamard, DType::F32, shape_of(a), {a});
    set_op_params(t, int32_t(n));
    return t;
}

Tensor *soft_max_ext(Context &ctx, Tensor *a, Tensor *mask, const SoftMaxParams &params,
                     Tensor *sinks) {
    require_not_null(Op::soft_max, {a});
    require(a->type == DType::F32 && a->rows_contiguous(), Op::soft_max, {a},
            "a must be F32 with contiguous rows");
    if (mask != nullptr) check_mask(Op::soft_max, a, a->ne[0], a->ne[1], a->ne[2], a->ne[3], mask);
    if (sinks != nullptr) {
        require(sinks->type == DType::F32 && sinks->ne[0] == a->ne[2], Op::soft_max, {a, sinks},
                "sinks must be F32 [n_head]");
    }
    Tensor *t = new_result(ctx, Op::soft_max, DType::F32, shape_of(a), {a, mask, sinks});
    set_op_params(t, params);
    return t;
}

Tensor *soft_max(Context &ctx, Tensor *a) {
    return soft_max_ext(ctx, a, nullptr, {});
}

Tensor *diag_mask_inf(Context &ctx, Tensor *a, int n_past) {
    require_not_null(Op::diag_mask_inf, {a});
    require(a->type == DType::F32, Op::diag_mask_inf, {a}, "F32 only");
    Tensor *t = new_result(ctx, Op::diag_mask_inf, DType::F32, shape_of(a), {a});
    set_op_params(t, DiagMaskOpParams{n_past});
    return t;
}

Tensor *flash_attn_ext(Context &ctx, Tensor *q, Tensor *k, Tensor *v, Tensor *mask,
                       const FlashAttnParams &params, Tensor *sinks) {
    const Op op = Op::flash_attn_ext;
    require_not_null(op, {q, k, v});
    require(q->type == DType::F32, op, {q, k, v}, "q must be F32");
    // K and V: a float type, or a block format (a quantized KV cache) in whole blocks per head.
    const auto kv_type_ok = [](const Tensor *t) {
        return is_float_type(t->type) ||
               (traits(t->type).is_quantized && t->ne[0] % traits(t->type).block_size == 0);
    };
    require(kv_type_ok(k) && kv_type_ok(v), op, {q, k, v},
            "k and v must be F32, F16, BF16 or a block format in whole blocks per head");
    require(q->rows_contiguous() && k->rows_contiguous() && v->rows_contiguous(), op, {q, k, v},
            "rows must be contiguous");
    require(k->ne[0] == q->ne[0], op, {q, k, v}, "q and k head sizes differ");
    require(v->ne[1] == k->ne[1] && v->ne[2] == k->ne[2] && v->ne[3] == k->ne[3], op, {q, k, v},
            "k and v must have the same kv length and heads");
    require(q->ne[2] % k->ne[2] == 0, op, {q, k, v}, "n_head must be a multiple of n_head_kv");
    require(q->ne[3] % k->ne[3] == 0, op, {q, k, v}, "dim 3 of q must be a multiple of k's");
    if (mask != nullptr) check_mask(op, q, k->ne[1], q->ne[1], q->ne[2], q->ne[3], mask);
    if (sinks != nullptr) {
        require(sinks->type == DType::F32 && sinks->ne[0] == q->ne[2], op, {q, sinks},
                "sinks must be F32 [n_head]");
    }
    Tensor *t = new_result(ctx, op, DType::F32, {v->ne[0], q->ne[2], q->ne[1], q->ne[3]},
                           {q, k, v, mask, sinks});
    set_op_params(t, params);
    return t;
}

float alibi_slope(float max_bias, int64_t h, int64_t n_head) {
    if (max_bias <= 0.0f) return 1.0f;
    // Heads up to the largest power of two get slopes m0^(h+1); the rest interleave between
    // them with m1^(2(h - n)+1) (the ALiBi paper's recipe for head counts not a power of two).
    const int64_t n_head_log2 = int64_t(1) << int64_t(std::floor(std::log2(double(n_head))));
    const float m0 = std::pow(2.0f, -max_bias / float(n_head_log2));
    const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / float(n_head_log2));
    return h < n_head_log2 ? std::pow(m0, float(h + 1))
                           : std::pow(m1, float(2 * (h - n_head_log2) + 1));
}

}  // namespace loom
