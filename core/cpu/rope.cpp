// Rotary position embedding with YaRN scaling (rope_ext), following ggml's arithmetic step by
// step (float throughout, the angle advanced by repeated multiplication) so that the rotated
// values match llama.cpp's to the last bit where the compiler allows.
#include <cmath>
#include <numbers>

#include "core/cpu/kernels.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

// Rows of a are (head, token, batch) with heads fastest. The cos/sin table depends only on the
// token's position, so each thread rebuilds it when its row range moves to a new token.
struct RopeTable {
    float *cos;  // [n_dims/2]
    float *sin;  // [n_dims/2]
};

// The dimension below which YaRN extrapolates and above which it interpolates, for a rotation
// count n_rot over the original context (YaRN paper, eq. 17; ggml_rope_yarn_corr_dim).
float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return float(n_dims) *
           std::log(float(n_ctx_orig) / (n_rot * 2.0f * std::numbers::pi_v<float>)) /
           (2.0f * std::log(base));
}

struct CorrDims {
    float low, high;
};

// The ternaries mirror ggml's MAX/MIN macros, so NaN and infinite inputs resolve the same way.
CorrDims yarn_corr_dims(const RopeParams &p) {
    const float start = std::floor(yarn_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_fast, p.freq_base));
    const float end = std::ceil(yarn_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_slow, p.freq_base));
    const float last = float(p.n_dims - 1);
    return {0.0f > start ? 0.0f : start, last < end ? last : end};
}

// 1 for pairs below low (extrapolated), 0 above high (interpolated), linear between.
float yarn_ramp(const CorrDims &corr, int64_t pair) {
    const float width = 0.001f > corr.high - corr.low ? 0.001f : corr.high - corr.low;
    const float y = (float(pair) - corr.low) / width;
    const float clamped = 0.0f > y ? 0.0f : y;
    return 1.0f - (1.0f < clamped ? 1.0f : clamped);
}

void fill_table(const RopeParams &p, const CorrDims &corr, float theta_scale,
                const Tensor *freq_factors, int32_t position, RopeTable table) {
    const int64_t n_pairs = p.n_dims / 2;
    float theta_extrap_base = float(position);
    for (int64_t i = 0; i < n_pairs; ++i) {
        const float factor = freq_factors != nullptr
                                 ? *static_cast<const float *>(freq_factors->element_ptr(i, 0))
                                 : 1.0f;
        const float theta_extrap = theta_extrap_base / factor;
        const float theta_interp = p.freq_scale * theta_extrap;
        float theta = theta_interp;
        float mscale = p.attn_factor;
        if (p.ext_factor != 0.0f) {
            const float ramp_mix = yarn_ramp(corr, i) * p.ext_factor;
            theta = theta_interp * (1.0f - ramp_mix) + theta_extrap * ramp_mix;
            // magnitude correction for interpolation (YaRN's sqrt(1/t) ~ 0.1 ln(s) + 1)
            mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
        }
        table.cos[i] = std::cos(theta) * mscale;
        table.sin[i] = std::sin(theta) * mscale;
        // Advanced by multiplication rather than pow(theta_scale, i), as ggml does: the rounding
        // of the product chain is part of the reference result.
        theta_extrap_base *= theta_scale;
    }
}

// Normal mode rotates adjacent pairs (x[2i], x[2i+1]).
void rotate_adjacent(const float *x, float *y, RopeTable table, int64_t n_pairs) {
    for (int64_t i = 0; i < n_pairs; ++i) {
        const float x0 = x[2 * i];
        const float x1 = x[2 * i + 1];
        y[2 * i] = x0 * table.cos[i] - x1 * table.sin[i];
        y[2 * i + 1] = x0 * table.sin[i] + x1 * table.cos[i];
    }
}

// NeoX mode rotates (x[i], x[i + n_dims/2]).
void rotate_halves(const float *x, float *y, RopeTable table, int64_t n_pairs) {
    for (int64_t i = 0; i < n_pairs; ++i) {
        const float x0 = x[i];
        const float x1 = x[i + n_pairs];
        y[i] = x0 * table.cos[i] - x1 * table.sin[i];
        y[i + n_pairs] = x0 * table.sin[i] + x1 * table.cos[i];
    }
}

// Scratch layout per thread: cos [n_pairs] | sin [n_pairs] | gathered row [ne0] (strided a only).
int64_t table_floats(const Tensor *dst) {
    const int64_t n_pairs = get_op_params<RopeParams>(dst).n_dims / 2;
    return 2 * ((n_pairs + 15) / 16 * 16);  // each half padded to 64 bytes
}

void compute_rope(const ComputeParams &params, Tensor *dst) {
    const Tensor *a = dst->src[0];             // F32 [head_dim, n_head, n_tokens, ne3]
    const Tensor *pos = dst->src[1];           // I32 [n_tokens]
    const Tensor *freq_factors = dst->src[2];  // F32 [>= n_dims/2] or null
    const RopeParams p = get_op_params<RopeParams>(dst);
    const int64_t head_dim = a->ne[0];
    const int64_t n_pairs = p.n_dims / 2;

    const float theta_scale = std::pow(p.freq_base, -2.0f / float(p.n_dims));
    const CorrDims corr = yarn_corr_dims(p);

    auto *scratch = reinterpret_cast<float *>(params.work);
    const int64_t half = table_floats(dst) / 2;
    const RopeTable table{scratch, scratch + half};
    float *gather = scratch + 2 * half;

    const Range rows = split_range(a->nrows(), params.ith, params.nth);
    int64_t table_token = -1;
    for (int64_t row = rows.begin; row < rows.end; ++row) {
        const RowIndex at = unravel_row(row, a);  // i1 head, i2 token, i3 batch
        if (at.i2 != table_token) {
            const int32_t position = *static_cast<const int32_t *>(pos->element_ptr(at.i2, 0));
            fill_table(p, corr, theta_scale, freq_factors, position, table);
            table_token = at.i2;
        }
        const float *x =
            load_row(DType::F32, a->row_ptr(at.i1, at.i2, at.i3), a->nb[0], head_dim, gather);
        auto *y = static_cast<float *>(dst->row_ptr(at.i1, at.i2, at.i3));
        if (p.mode == RopeMode::neox) {
            rotate_halves(x, y, table, n_pairs);
        } else {
            rotate_adjacent(x, y, table, n_pairs);
        }
        for (int64_t i = p.n_dims; i < head_dim; ++i) y[i] = x[i];
    }
}

bool supports_rope(const Tensor *dst) {
    const Tensor *a = dst->src[0];
    const Tensor *freq_factors = dst->src[2];
    const RopeMode mode = get_op_params<RopeParams>(dst).mode;
    return a->type == DType::F32 && dst->type == DType::F32 && dst->rows_contiguous() &&
           dst->src[1]->type == DType::I32 &&
           (freq_factors == nullptr || freq_factors->type == DType::F32) &&
           (mode == RopeMode::normal || mode == RopeMode::neox);
}

size_t rope_work_size(const Tensor *dst) {
    const Tensor *a = dst->src[0];
    const int64_t gathered = a->rows_contiguous() ? 0 : a->ne[0];
    return size_t(table_floats(dst) + gathered) * sizeof(float);
}

}  // namespace

void register_rope_kernels(KernelTable &table) {
    table[size_t(Op::rope)] = {
        .compute = compute_rope, .supports = supports_rope, .work_size = rope_work_size};
}

}  // namespace loom::cpu::inline LOOM_ISA
