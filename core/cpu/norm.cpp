// Row normalisations: norm ((x - mean) / sqrt(var + eps)) and rms_norm (x / sqrt(mean(x^2) + eps)).
//
// The sums are accumulated in double, as ggml does (its ggml_float), so that long rows keep the
// precision llama.cpp's results have. Each sum runs in kLanes independent partial sums combined
// in a fixed order: the compiler keeps them in vector registers, and the result depends only on
// the row, never on how rows are split between threads.
#include <cmath>

#include "core/cpu/kernels.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

constexpr int kLanes = 8;  // one AVX-512 register of doubles

double combine(const double (&partial)[kLanes]) {
    double total = 0.0;
    for (double p : partial) total += p;
    return total;
}

double sum(const float *x, int64_t n) {
    double partial[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) partial[j] += double(x[i + j]);
    }
    for (; i < n; ++i) partial[i % kLanes] += double(x[i]);
    return combine(partial);
}

// Sum of x^2, each square taken in float first as ggml does: (ggml_float)(x * x).
double sum_of_squares(const float *x, int64_t n) {
    double partial[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) partial[j] += double(x[i + j] * x[i + j]);
    }
    for (; i < n; ++i) partial[i % kLanes] += double(x[i] * x[i]);
    return combine(partial);
}

// Writes y = x - mean and returns the sum of y^2 (squares in float, as above).
double center_and_sum_squares(const float *x, float mean, float *y, int64_t n) {
    double partial[kLanes] = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        for (int j = 0; j < kLanes; ++j) {
            const float v = x[i + j] - mean;
            y[i + j] = v;
            partial[j] += double(v * v);
        }
    }
    for (; i < n; ++i) {
        const float v = x[i] - mean;
        y[i] = v;
        partial[i % kLanes] += double(v * v);
    }
    return combine(partial);
}

void scale_in_place(float *y, float s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] *= s;
}

// The source row as contiguous floats: the row itself, or a copy in scratch when its elements
// are strided (a permuted view).
const float *source_row(const ComputeParams &params, const Tensor *src, const RowIndex &at) {
    return load_row(DType::F32, src->row_ptr(at.i1, at.i2, at.i3), src->nb[0], src->ne[0],
                    reinterpret_cast<float *>(params.work));
}

// The mean is rounded to float before centering, and var + eps to float before the square
// root, matching ggml's order of conversions.
void norm_row(const float *x, float *y, int64_t n, float eps) {
    const float mean = float(sum(x, n) / double(n));
    const double variance = center_and_sum_squares(x, mean, y, n) / double(n);
    scale_in_place(y, 1.0f / std::sqrt(float(variance + eps)), n);
}

void rms_norm_row(const float *x, float *y, int64_t n, float eps) {
    const float mean_square = float(sum_of_squares(x, n) / double(n));
    const float s = 1.0f / std::sqrt(mean_square + eps);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
}

// Applies normalise to every row of the source, rows split across threads.
template <void (*normalise)(const float *x, float *y, int64_t n, float eps)>
void compute_rows(const ComputeParams &params, Tensor *dst) {
    const Tensor *src = dst->src[0];
    const float eps = get_op_params<NormOpParams>(dst).eps;
    const Range rows = split_range(src->nrows(), params.ith, params.nth);
    for (int64_t row = rows.begin; row < rows.end; ++row) {
        const RowIndex at = unravel_row(row, src);
        normalise(source_row(params, src, at),
                  static_cast<float *>(dst->row_ptr(at.i1, at.i2, at.i3)), src->ne[0], eps);
    }
}

bool supports_norm(const Tensor *dst) {
    return dst->type == DType::F32 && dst->src[0]->type == DType::F32 && dst->rows_contiguous();
}

// Scratch for one gathered row, needed only when the source's elements are strided.
size_t norm_work_size(const Tensor *dst) {
    const Tensor *src = dst->src[0];
    return src->rows_contiguous() ? 0 : size_t(src->ne[0]) * sizeof(float);
}

}  // namespace

void register_norm_kernels(KernelTable &table) {
    table[size_t(Op::norm)] = {
        .compute = compute_rows<norm_row>, .supports = supports_norm, .work_size = norm_work_size};
    table[size_t(Op::rms_norm)] = {.compute = compute_rows<rms_norm_row>,
                                   .supports = supports_norm,
                                   .work_size = norm_work_size};
}

}  // namespace loom::cpu::inline LOOM_ISA
