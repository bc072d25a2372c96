// Builders for elementwise ops, gated units, row reductions and sorting.
#include "core/op_builder.h"

namespace loom {
namespace {

Tensor *binary(Context &ctx, Op op, Tensor *a, Tensor *b) {
    require_not_null(op, {a, b});
    require(is_float_type(a->type), op, {a, b}, "a must be F32, F16 or BF16");
    require(b->type == DType::F32 || b->type == a->type, op, {a, b}, "b must be F32 or a's dtype");
    require(can_repeat(b, a), op, {a, b}, "b cannot be broadcast over a");
    return new_result(ctx, op, a->type, shape_of(a), {a, b});
}

Tensor *unary(Context &ctx, Op op, Tensor *a) {
    require_not_null(op, {a});
    require(is_float_type(a->type), op, {a}, "a must be F32, F16 or BF16");
    return new_result(ctx, op, a->type, shape_of(a), {a});
}

Tensor *gated(Context &ctx, Op op, Tensor *a, Tensor *b) {
    require_not_null(op, {a, b});
    require(is_float_type(a->type) && b->type == a->type, op, {a, b}, "a and b: one float dtype");
    require(same_shape(a, b), op, {a, b}, "shapes differ");
    return new_result(ctx, op, a->type, shape_of(a), {a, b});
}

Tensor *row_reduction(Context &ctx, Op op, Tensor *a) {
    require_not_null(op, {a});
    require(a->type == DType::F32, op, {a}, "F32 only");
    return new_result(ctx, op, DType::F32, {1, a->ne[1], a->ne[2], a->ne[3]}, {a});
}

}  // namespace

Tensor *add(Context &ctx, Tensor *a, Tensor *b) {
    return binary(ctx, Op::add, a, b);
}
Tensor *sub(Context &ctx, Tensor *a, Tensor *b) {
    return binary(ctx, Op::sub, a, b);
}
Tensor *mul(Context &ctx, Tensor *a, Tensor *b) {
    return binary(ctx, Op::mul, a, b);
}
Tensor *div(Context &ctx, Tensor *a, Tensor *b) {
    return binary(ctx, Op::div, a, b);
}

Tensor *scale(Context &ctx, Tensor *a, float s, float bias) {
    Tensor *t = unary(ctx, Op::scale, a);
    set_op_params(t, ScaleOpParams{s, bias});
    return t;
}

Tensor *clamp(Context &ctx, Tensor *a, float min, float max) {
    Tensor *t = unary(ctx, Op::clamp, a);
    require(!(min > max), Op::clamp, {a}, "min {} > max {}", min, max);
    set_op_params(t, ClampOpParams{min, max});
    return t;
}

Tensor *fill(Context &ctx, Tensor *a, float value) {
    Tensor *t = unary(ctx, Op::fill, a);
    set_op_params(t, FillOpParams{value});
    return t;
}

Tensor *sqrt(Context &ctx, Tensor *a) {
    return unary(ctx, Op::sqrt, a);
}
Tensor *exp(Context &ctx, Tensor *a) {
    return unary(ctx, Op::exp, a);
}
Tensor *tanh(Context &ctx, Tensor *a) {
    return unary(ctx, Op::tanh, a);
}
Tensor *gelu(Context &ctx, Tensor *a) {
    return unary(ctx, Op::gelu, a);
}
Tensor *silu(Context &ctx, Tensor *a) {
    return unary(ctx, Op::silu, a);
}
Tensor *sigmoid(Context &ctx, Tensor *a) {
    return unary(ctx, Op::sigmoid, a);
}
Tensor *softplus(Context &ctx, Tensor *a) {
    return unary(ctx, Op::softplus, a);
}
Tensor *relu(Context &ctx, Tensor *a) {
    return unary(ctx, Op::relu, a);
}

Tensor *swiglu_split(Context &ctx, Tensor *a, Tensor *b) {
    return gated(ctx, Op::swiglu, a, b);
}
Tensor *geglu_split(Context &ctx, Tensor *a, Tensor *b) {
    return gated(ctx, Op::geglu, a, b);
}
Tensor *swiglu_oai(Context &ctx, Tensor *a, Tensor *b, float alpha, float limit) {
    Tensor *t = gated(ctx, Op::swiglu_oai, a, b);
    require(limit > 0.0f, Op::swiglu_oai, {a, b}, "limit {} must be positive", limit);
    set_op_params(t, SwiGluOaiOpParams{alpha, limit});
    return t;
}

Tensor *sum_rows(Context &ctx, Tensor *a) {
    return row_reduction(ctx, Op::sum_rows, a);
}
Tensor *mean(Context &ctx, Tensor *a) {
    return row_reduction(ctx, Op::mean, a);
}

Tensor *argmax(Context &ctx, Tensor *a) {
    require_not_null(Op::argmax, {a});
    require(a->type == DType::F32, Op::argmax, {a}, "F32 only");
    require(a->ne[2] == 1 && a->ne[3] == 1, Op::argmax, {a}, "a must be 2-d");
    return new_result(ctx, Op::argmax, DType::I32, {a->ne[1], 1, 1, 1}, {a});
}

Tensor *argsort(Context &ctx, Tensor *a, SortOrder order) {
    require_not_null(Op::argsort, {a});
    require(a->type == DType::F32, Op::argsort, {a}, "F32 only");
    Tensor *t = new_result(ctx, Op::argsort, DType::I32, shape_of(a), {a});
    set_op_params(t, SortOpParams{order});
    return t;
}

Tensor *argsort_top_k(Context &ctx, Tensor *a, int k) {
    require_not_null(Op::argsort_top_k, {a});
    require(a->type == DType::F32, Op::argsort_top_k, {a}, "F32 only");
    require(k >= 1 && k <= a->ne[0], Op::argsort_top_k, {a}, "k = {} outside [1, {}]", k, a->ne[0]);
    return new_result(ctx, Op::argsort_top_k, DType::I32, {k, a->ne[1], a->ne[2], a->ne[3]}, {a});
}

}  // namespace loom
