// Row softmax with scale, broadcast mask, ALiBi slopes and attention sinks (soft_max_ext), and
// the causal mask written into a tensor (diag_mask_inf).
//
// The exponentials follow ggml's soft_max on AVX2 exactly (exp_row_in_place), so with the
// scores summed as llama.cpp sums them (SumOrder) the probabilities are its own bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/cpu/kernels.h"
#include "core/cpu/simd.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

using namespace simd;

// The largest element (compared with >, so NaN is passed over; its row's output is NaN anyway).
float row_max(const float *y, int64_t n) {
    vf lanes = splat(-INFINITY);
    int64_t i = 0;
    for (; i + VL <= n; i += VL) {
        const vf x = load(y + i);
        lanes = x > lanes ? x : lanes;
    }
    float t[VL];
    store(t, lanes);
    float max = -INFINITY;
    for (float lane : t) max = lane > max ? lane : max;
    for (; i < n; ++i) max = y[i] > max ? y[i] : max;
    return max;
}

// y[i] = e^(y[i] - max) for a row whose largest element is max; returns the sum in double.
// As llama.cpp's AVX2 build (the reference, whatever this build's width): 8 exponentials at a
// time by its ggml_v_expf (exp_any), each 8 summed in float as (lo + hi) then pairs and added to
// the double total, the elements past the last 8 by the C library's expf.
double exp_row_in_place(float *y, int64_t n, float max) {
    constexpr int kChunk = 8;
    constexpr int kStep = VL > kChunk ? VL : kChunk;  // whole vectors and whole chunks
    const auto chunk_sums = [&](int64_t i, int64_t chunks) {
        double sum = 0.0;
        for (int64_t c = 0; c < chunks; ++c) {
            floats<kChunk> e;
            std::memcpy(&e, y + i + c * kChunk, sizeof e);
            sum += double(hsum<kChunk>(e));
        }
        return sum;
    };
    double sum = 0.0;
    int64_t i = 0;
    for (; i + kStep <= n; i += kStep) {
        // A step of masked logits (a causal mask's upper half) is zeros, which add nothing.
        bool masked = true;
        for (int v = 0; v < kStep; v += VL)
            masked &= all_lanes(load(y + i + v) == splat(-INFINITY));
        if (masked) {
            std::fill(y + i, y + i + kStep, 0.0f);
            continue;
        }
        if constexpr (VL == kChunk) {
            const vf e = exp_any(load(y + i) - splat(max));
            store(y + i, e);
            sum += double(hsum(e));
            continue;
        }
        for (int v = 0; v < kStep; v += VL) store(y + i + v, exp_any(load(y + i + v) - splat(max)));
        sum += chunk_sums(i, kStep / kChunk);
    }
    if (const int64_t chunks = (n - i) / kChunk;
        chunks > 0) {  // wide vectors: a chunk or more left
        alignas(64) float t[kStep] = {};
        std::copy(y + i, y + i + chunks * kChunk, t);
        for (int v = 0; v < kStep; v += VL) store(t + v, exp_any(load(t + v) - splat(max)));
        std::copy(t, t + chunks * kChunk, y + i);
        sum += chunk_sums(i, chunks);
        i += chunks * kChunk;
    }
    for (; i < n; ++i) {
        y[i] = std::exp(y[i] - max);
        sum += double(y[i]);
    }
    return sum;
}

// The mask row for score row (i1, i2, i3): mask rows are indexed by the query directly (the
// mask may have more rows than there are queries: llama.cpp pads it), dims 2 and 3 broadcast.
const void *mask_row(const Tensor *mask, const RowIndex &at) {
    return mask->row_ptr(at.i1, at.i2 % mask->ne[2], at.i3 % mask->ne[3]);
}

void compute_soft_max(const ComputeParams &params, Tensor *dst) {
    const Tensor *a = dst->src[0];      // F32 [n_kv, n_q, n_head, ne3]
    const Tensor *mask = dst->src[1];   // F32/F16 [n_kv, >= n_q, m2, m3] or null
    const Tensor *sinks = dst->src[2];  // F32 [n_head] or null
    const SoftMaxParams p = get_op_params<SoftMaxParams>(dst);
    const int64_t n = a->ne[0];
    auto *mask_buf = reinterpret_cast<float *>(params.work);

    const Range rows = split_range(a->nrows(), params.ith, params.nth);
    for (int64_t row = rows.begin; row < rows.end; ++row) {
        const RowIndex at = unravel_row(row, a);
        const auto *x = static_cast<const float *>(a->row_ptr(at.i1, at.i2, at.i3));
        auto *y = static_cast<float *>(dst->row_ptr(at.i1, at.i2, at.i3));

        // The logits are staged in y itself (dst never aliases a).
        if (mask != nullptr) {
            const float slope = alibi_slope(p.max_bias, at.i2, a->ne[2]);
            const float *m = load_row(mask->type, mask_row(mask, at), mask->nb[0], n, mask_buf);
            for (int64_t i = 0; i < n; ++i) y[i] = x[i] * p.scale + slope * m[i];
        } else {
            for (int64_t i = 0; i < n; ++i) y[i] = x[i] * p.scale;
        }

        float max = row_max(y, n);
        // A sink is one more logit: it joins the maximum and the denominator, not the output.
        const float sink = sinks != nullptr
                               ? *static_cast<const float *>(sinks->element_ptr(at.i2, 0))
                               : -INFINITY;
        max = max > sink ? max : sink;
        if (max == -INFINITY) {
            // Every logit masked (llama.cpp's padded rows): zeros rather than 0/0.
            for (int64_t i = 0; i < n; ++i) y[i] = 0.0f;
            continue;
        }

        // The denominator is summed in double, as ggml does (ggml_float).
        double sum = exp_row_in_place(y, n, max);
        if (sinks != nullptr) sum += double(std::exp(sink - max));
        const float inv_sum = float(1.0 / sum);
        for (int64_t i = 0; i < n; ++i) y[i] *= inv_sum;
    }
}

bool supports_soft_max(const Tensor *dst) {
    const Tensor *a = dst->src[0];
    const Tensor *mask = dst->src[1];
    const Tensor *sinks = dst->src[2];
    const bool mask_ok =
        mask == nullptr ||
        ((mask->type == DType::F32 || mask->type == DType::F16) && mask->rows_contiguous());
    return a->type == DType::F32 && a->rows_contiguous() && dst->type == DType::F32 &&
           dst->rows_contiguous() && mask_ok && (sinks == nullptr || sinks->type == DType::F32);
}

// Scratch for one mask row converted from F16.
size_t soft_max_work_size(const Tensor *dst) {
    const Tensor *mask = dst->src[1];
    if (mask == nullptr || mask->type == DType::F32) return 0;
    return size_t(dst->ne[0]) * sizeof(float);
}

// a[i0, i1, ...] = -inf where i0 > n_past + i1: query i1 sees keys up to n_past + i1.
void compute_diag_mask_inf(const ComputeParams &params, Tensor *dst) {
    const Tensor *a = dst->src[0];
    const int64_t n_past = get_op_params<DiagMaskOpParams>(dst).n_past;
    const int64_t n = a->ne[0];
    const Range rows = split_range(a->nrows(), params.ith, params.nth);
    for (int64_t row = rows.begin; row < rows.end; ++row) {
        const RowIndex at = unravel_row(row, a);
        const float *x = load_row(DType::F32, a->row_ptr(at.i1, at.i2, at.i3), a->nb[0], n,
                                  reinterpret_cast<float *>(params.work));
        auto *y = static_cast<float *>(dst->row_ptr(at.i1, at.i2, at.i3));
        const int64_t visible = std::clamp<int64_t>(n_past + at.i1 + 1, 0, n);
        for (int64_t i = 0; i < visible; ++i) y[i] = x[i];
        for (int64_t i = visible; i < n; ++i) y[i] = -INFINITY;
    }
}

bool supports_diag_mask_inf(const Tensor *dst) {
    return dst->src[0]->type == DType::F32 && dst->type == DType::F32 && dst->rows_contiguous();
}

// Scratch for one gathered row, needed only when a's elements are strided.
size_t diag_mask_inf_work_size(const Tensor *dst) {
    const Tensor *a = dst->src[0];
    return a->rows_contiguous() ? 0 : size_t(a->ne[0]) * sizeof(float);
}

}  // namespace

void register_softmax_kernels(KernelTable &table) {
    table[size_t(Op::soft_max)] = {.compute = compute_soft_max,
                                   .supports = supports_soft_max,
                                   .work_size = soft_max_work_size};
    table[size_t(Op::diag_mask_inf)] = {.compute = compute_diag_mask_inf,
                                        .supports = supports_diag_mask_inf,
                                        .work_size = diag_mask_inf_work_size};
}

}  // namespace loom::cpu::inline LOOM_ISA
