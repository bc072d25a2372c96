// The Walsh-Hadamard rotation (hadamard): each run of n values of a row times H_n / sqrt(n), as
// a fast transform in ggml's order, so that a rotated KV cache holds llama.cpp's bytes: the
// values scaled by 1 / sqrt(n) first, then butterflies (u, v) -> (u + v, u - v) over pairs 1,
// 2, 4, ... apart. Each output is exact for its inputs up to those roundings; the order of the
// passes fixes which.
#include <cmath>

#include "core/cpu/kernels.h"
#include "core/op_params.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

void rotate_block(const float *x, float *y, int64_t n, float scale) {
    for (int64_t j = 0; j < n; ++j) y[j] = x[j] * scale;
    for (int64_t len = 1; len < n; len *= 2) {
        for (int64_t i = 0; i < n; i += 2 * len) {
            for (int64_t j = i; j < i + len; ++j) {
                const float u = y[j], v = y[j + len];
                y[j] = u + v;
                y[j + len] = u - v;
            }
        }
    }
}

void compute_hadamard(const ComputeParams &params, Tensor *dst) {
    const Tensor *a = dst->src[0];
    const int64_t n = get_op_params<int32_t>(dst);
    const float scale = 1.0f / std::sqrt(float(n));
    const Range rows = split_range(a->nrows(), params.ith, params.nth);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex i = unravel_row(r, a);
        const auto *x = static_cast<const float *>(a->row_ptr(i.i1, i.i2, i.i3));
        auto *y = static_cast<float *>(dst->row_ptr(i.i1, i.i2, i.i3));
        for (int64_t b = 0; b < a->ne[0]; b += n) rotate_block(x + b, y + b, n, scale);
    }
}

bool supports_hadamard(const Tensor *dst) {
    return dst->src[0]->type == DType::F32 && dst->src[0]->rows_contiguous() &&
           dst->type == DType::F32 && dst->rows_contiguous();
}

}  // namespace

void register_hadamard_kernels(KernelTable &table) {
    table[size_t(Op::hadamard)] = {.compute = compute_hadamard, .supports = supports_hadamard};
}

}  // namespace loom::cpu::inline LOOM_ISA
