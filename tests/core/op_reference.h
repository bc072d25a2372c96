#pragma once
// Plain double-precision references for the op harness. Nothing here calls the library's
// kernels or converters: tensors are read element by element through their own strides and
// decoded by the helpers below, and every op is a naive loop written from loom/core.h.
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "loom/core.h"

namespace loom::test {

using Shape4 = std::array<int64_t, 4>;

Shape4 shape_of(const Tensor *t);
int64_t count(const Shape4 &ne);

double half_to_double(uint16_t h);
double bf16_to_double(uint16_t h);
// x rounded to the nearest value of `type` (ties to even for F16 and BF16, overflow to inf for
// F16); integer types and F64-like inputs pass through unchanged.
double round_to(DType type, double x);

// Element (i0, i1, i2, i3) of t as a double, read through t's strides.
double get(const Tensor *t, int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0);

// A dense double copy of a tensor (or an expected result) in logical order, i0 fastest.
struct Dense {
    Shape4 ne = {1, 1, 1, 1};
    std::vector<double> v;

    Dense() = default;
    explicit Dense(const Shape4 &shape, double value = 0.0);
    explicit Dense(const Tensor *t);  // reads t through its strides

    size_t index(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const {
        return size_t(((i3 * ne[2] + i2) * ne[1] + i1) * ne[0] + i0);
    }
    double &at(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) {
        return v[index(i0, i1, i2, i3)];
    }
    double at(int64_t i0, int64_t i1 = 0, int64_t i2 = 0, int64_t i3 = 0) const {
        return v[index(i0, i1, i2, i3)];
    }
};

// Calls f(i0, i1, i2, i3) over every index of ne, i0 fastest.
template <typename F>
void for_each_index(const Shape4 &ne, F &&f) {
    for (int64_t i3 = 0; i3 < ne[3]; ++i3)
        for (int64_t i2 = 0; i2 < ne[2]; ++i2)
            for (int64_t i1 = 0; i1 < ne[1]; ++i1)
                for (int64_t i0 = 0; i0 < ne[0]; ++i0) f(i0, i1, i2, i3);
}

// ---------------------------------------------------------------------------------------------
// Scalar functions

// x rounded to the nearest half (ties to even); half overflow is not modelled.
double ref_round_to_half(double x);
// Tanh approximation at half precision: of x rounded to a half, rounded to a half; 0 at x <= -10
// and x at x >= 10.
double ref_gelu(double x);
double ref_silu(double x);
double ref_sigmoid(double x);
double ref_softplus(double x);
double ref_relu(double x);
// ALiBi slope of head h of n_head (1 when max_bias <= 0), derived from the ALiBi paper.
double ref_alibi_slope(double max_bias, int64_t h, int64_t n_head);

// ---------------------------------------------------------------------------------------------
// Ops. Each writes the whole of `out`, which has the result's shape.

enum class BinaryOp { add, sub, mul, div };
void ref_binary(BinaryOp op, const Tensor *a, const Tensor *b, Dense &out);
void ref_unary(const std::function<double(double)> &f, const Tensor *a, Dense &out);
// act(a) * b with act = silu or gelu.
void ref_gated(double (*act)(double), const Tensor *a, const Tensor *b, Dense &out);
// gpt-oss's clamped SwiGLU in double precision.
void ref_swiglu_oai(const Tensor *a, const Tensor *b, double alpha, double limit, Dense &out);

void ref_sum_rows(const Tensor *a, bool mean, Dense &out);
void ref_argmax(const Tensor *a, Dense &out);
void ref_argsort(const Tensor *a, bool descending, Dense &out);
void ref_top_k(const Tensor *a, int64_t k, Dense &out);

void ref_repeat(const Tensor *a, Dense &out);
void ref_concat(const Tensor *a, const Tensor *b, int dim, Dense &out);
void ref_pad(const Tensor *a, Dense &out);
// Element l of out (logical order) is element l of a: cont, cast and cpy.
void ref_copy_flat(const Tensor *a, Dense &out);
void ref_get_rows(const Tensor *a, const Tensor *idx, Dense &out);
// out starts as the destination's current contents.
void ref_set_rows(const Tensor *dst, const Tensor *b, const Tensor *idx, Dense &out);

void ref_mul_mat(const Tensor *a, const Tensor *b, Dense &out);
void ref_mul_mat_id(const Tensor *as, const Tensor *b, const Tensor *ids, Dense &out);

void ref_norm(const Tensor *a, double eps, bool rms, Dense &out);
void ref_rope(const Tensor *a, const Tensor *pos, const Tensor *freq_factors, const RopeParams &p,
              Dense &out);

// out[i] = sum_j (-1)^popcount(i & j) a[j] / sqrt(n) over each run of n values along dim 0.
void ref_hadamard(const Tensor *a, int64_t n, Dense &out);

void ref_soft_max(const Tensor *a, const Tensor *mask, double scale, double max_bias,
                  const Tensor *sinks, Dense &out);
void ref_diag_mask_inf(const Tensor *a, int64_t n_past, Dense &out);

struct RefAttnParams {
    double scale = 1.0;
    double max_bias = 0.0;
    double softcap = 0.0;
};
void ref_flash_attn(const Tensor *q, const Tensor *k, const Tensor *v, const Tensor *mask,
                    const Tensor *sinks, const RefAttnParams &p, Dense &out);

}  // namespace loom::test
