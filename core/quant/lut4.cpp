// The table-indexed 4-bit formats (lut4_formats.h): reference quantizers, dequantizers, the
// generic dot products and their rows of the dtype traits table.
//
// The quantizers reproduce ggml's float arithmetic step for step, without fused multiply-adds
// (core/quant is built with -ffp-contract=off, as ggml's base library is for baseline x86-64).

#include <algorithm>
#include <cmath>

#include "core/quant/lut4_formats.h"
#include "core/quant/quant.h"
#include "loom/fp16.h"

namespace loom::quant::inline LOOM_ISA {
namespace {

constexpr int QK = kLut4Block;

// The 32 values of one block's 16 bytes of code pairs (element j in the low nibble of byte j,
// element j + 16 in the high one), each table value times d.
void decode_codes(const uint8_t *qs, const int8_t *values, float d, float *out) {
    for (int j = 0; j < QK / 2; ++j) {
        out[j] = d * float(values[qs[j] & 0x0f]);
        out[j + QK / 2] = d * float(values[qs[j] >> 4]);
    }
}
// The integer dot product of one block's codes (as table values) with 32 Q8 quants.
int dot_codes(const uint8_t *qs, const int8_t *values, const int8_t *q8) {
    int s = 0;
    for (int j = 0; j < QK / 2; ++j) {
        s += int(q8[j]) * values[qs[j] & 0x0f] + int(q8[j + QK / 2]) * values[qs[j] >> 4];
    }
    return s;
}

// The code of the table value nearest to x at scale d; of equally near values the first, so the
// negative zero (code 8) never replaces code 0.
uint8_t nearest_mxfp4(float x, float d) {
    uint8_t best = 0;
    float best_err = std::fabs(float(kValuesMxfp4[0]) * d - x);
    for (uint8_t i = 1; i < 16; ++i) {
        const float err = std::fabs(float(kValuesMxfp4[i]) * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return best;
}

}  // namespace

void quantize_mxfp4(const float *x, void *dst, int64_t n) {
    auto *y = blocks<BlockMXFP4>(dst);
    for (int64_t i = 0; i < n / QK; ++i) {
        const float *xb = x + i * QK;
        float amax = 0.0f;  // NaNs never compare greater, so they do not set the scale
        for (int j = 0; j < QK; ++j) {
            if (amax < std::fabs(xb[j])) amax = std::fabs(xb[j]);
        }
        // The largest magnitude's binary exponent, less 2: E2M1's largest value, 6, is 1.5 * 2^2,
        // so amax lands in the top binade of the table. log2f is the C library's, as in ggml
        // (float in, float out), whose rounding decides the exponent just below a power of two.
        // The cast is x86's (through int32; a value past it becomes 0x80000000).
        const float e_float = std::floor(log2f(amax)) - 2.0f + 127.0f;
        const uint8_t e = amax > 0.0f ? uint8_t(to_int8(e_float)) : 0;
        const float d = e8m0_half_to_f32(e);
        y[i].e = e;
        for (int j = 0; j < QK / 2; ++j) {
            y[i].qs[j] = uint8_t(nearest_mxfp4(xb[j], d) | nearest_mxfp4(xb[j + QK / 2], d) << 4);
        }
    }
}

void dequantize_mxfp4(const void *src, float *y, int64_t n) {
    const auto *x = blocks<BlockMXFP4>(src);
    for (int64_t i = 0; i < n / QK; ++i) {
        decode_codes(x[i].qs, kValuesMxfp4, e8m0_half_to_f32(x[i].e), y + i * QK);
    }
}

float dot_mxfp4_q8_0_generic(int64_t n, const void *vx, const void *vy) {
    const auto *x = blocks<BlockMXFP4>(vx);
    const auto *y = blocks<BlockQ8_0>(vy);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK; ++i) {
        const int s = dot_codes(x[i].qs, kValuesMxfp4, y[i].qs);
        sum += fp16_to_f32(y[i].d) * e8m0_half_to_f32(x[i].e) * float(s);
    }
    return sum;
}

// ---------------------------------------------------------------------------------------------
// IQ4_NL and IQ4_XS

namespace {

// The index of the table value nearest to x (a binary search of the sorted table; a tie goes to
// the larger value), ggml's best_index_int8.
int nearest_iq4(float x) {
    const int8_t *v = kValuesIq4nl;
    if (x <= v[0]) return 0;
    if (x >= v[15]) return 15;
    int lo = 0, hi = 15;
    while (hi - lo > 1) {
        const int mid = (lo + hi) / 2;
        if (x < v[mid]) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    return x - v[hi - 1] < v[hi] - x ? hi - 1 : hi;
}

// Below this largest magnitude a 32-block is taken as zero.
constexpr float kGroupMaxEps = 1e-15f;

// The scale of one 32-block (ggml's quantize_row_iq4_nl_impl without an importance matrix, whose
// weights are then x^2, with 7 trials either side): the block's signed largest value mapped to
// the table's end (-127), then 15 scales that map it to -134 .. -120, keeping the least-squares
// scale sum(w q x) / sum(w q^2) of whichever codes fit best. The codes themselves are chosen
// afresh for the final scale by the callers.
float fit_block_scale(const float *x) {
    constexpr int kTries = 7;
    const int8_t *values = kValuesIq4nl;
    float weight[kLut4Block];
    for (int j = 0; j < kLut4Block; ++j) weight[j] = x[j] * x[j];
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kLut4Block; ++j) {
        const float ax = std::fabs(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    if (amax < kGroupMaxEps) return 0.0f;
    // sum(w q x) and sum(w q^2) for the codes nearest to x at 1 / id.
    auto sums = [&](float id, float &sumqx, float &sumq2) {
        sumqx = sumq2 = 0.0f;
        for (int j = 0; j < kLut4Block; ++j) {
            const float q = values[nearest_iq4(id * x[j])];
            sumqx += weight[j] * q * x[j];
            sumq2 += weight[j] * q * q;
        }
    };
    float sumqx, sumq2;
    sums(1.0f / (-max / values[0]), sumqx, sumq2);
    float d = sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
    float best = d * sumqx;
    for (int itry = -kTries; itry <= kTries; ++itry) {
        sums(float(itry + values[0]) / max, sumqx, sumq2);
        if (sumq2 > 0.0f && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

// Codes of 32 values at scale d (0: all map to 0's neighbour), packed two to a byte: element j
// in the low nibble of byte j, element j + 16 in the high one.
void pack_codes(const float *x, float d, uint8_t *qs) {
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < kLut4Block / 2; ++j) {
        qs[j] = uint8_t(nearest_iq4(id * x[j]) | nearest_iq4(id * x[j + kLut4Block / 2]) << 4);
    }
}

}  // namespace

void quantize_iq4_nl(const float *x, void *dst, int64_t n) {
    auto *y = blocks<BlockIQ4NL>(dst);
    for (int64_t i = 0; i < n / QK; ++i) {
        const float d = fit_block_scale(x + i * QK);
        y[i].d = f32_to_fp16(d);
        pack_codes(x + i * QK, d, y[i].qs);  // for the scale as fitted, not as rounded to F16
    }
}

void quantize_row_iq4_nl(const float *x, void *dst, int64_t n) {
    auto *y = blocks<BlockIQ4NL>(dst);
    for (int64_t i = 0; i < n / QK; ++i) {
        const float *xb = x + i * QK;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < QK; ++j) {
            if (std::fabs(xb[j]) > amax) {
                amax = std::fabs(xb[j]);
                max = xb[j];
            }
        }
        // The codes for max at the table's end (-127), kept; the scale is the least-squares
        // one for them, weights x^2.
        const float id = amax < kGroupMaxEps ? 0.0f : 1.0f / (max / kValuesIq4nl[0]);
        float sumqx = 0.0f, sumq2 = 0.0f;
        uint8_t codes[QK];
        for (int j = 0; j < QK; ++j) {
            codes[j] = uint8_t(nearest_iq4(id * xb[j]));
            const float q = kValuesIq4nl[codes[j]], w = xb[j] * xb[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        const float d = amax >= kGroupMaxEps && sumq2 > 0.0f ? sumqx / sumq2 : 0.0f;
        y[i].d = f32_to_fp16(d);
        for (int j = 0; j < QK / 2; ++j) y[i].qs[j] = uint8_t(codes[j] | codes[j + QK / 2] << 4);
    }
}

void quantize_iq4_xs(const float *x, void *dst, int64_t n) {
    auto *y = blocks<BlockIQ4XS>(dst);
    constexpr int kSub = QK_K / QK;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float *xs = x + i * QK_K;
        float scales[kSub];
        float amax_scale = 0.0f, max_scale = 0.0f;
        for (int ib = 0; ib < kSub; ++ib) {
            scales[ib] = fit_block_scale(xs + ib * QK);
            if (std::fabs(scales[ib]) > amax_scale) {
                amax_scale = std::fabs(scales[ib]);
                max_scale = scales[ib];
            }
        }
        // The super-block scale puts the largest sub-block scale at -32 (so an all-zero block
        // gets d = -0, F16 0x8000, as in ggml); each sub-block's codes are then chosen for its
        // scale as stored, d * l.
        const float d = -max_scale / 32;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        y[i].d = f32_to_fp16(d);
        y[i].scales_h = 0;
        for (int ib = 0; ib < kSub; ++ib) {
            const int l = std::clamp(nearest_int(id * scales[ib]), -32, 31);
            pack_codes(xs + ib * QK, d * float(l), y[i].qs + ib * (QK / 2));
            const int ls = l + 32;
            if (ib % 2 == 0) {
                y[i].scales_l[ib / 2] = uint8_t(ls & 0x0f);
            } else {
                y[i].scales_l[ib / 2] |= uint8_t((ls & 0x0f) << 4);
            }
            y[i].scales_h = uint16_t(y[i].scales_h | (ls >> 4) << (2 * ib));
        }
    }
}

void dequantize_iq4_nl(const void *src, float *y, int64_t n) {
    const auto *x = blocks<BlockIQ4NL>(src);
    for (int64_t i = 0; i < n / QK; ++i) {
        decode_codes(x[i].qs, kValuesIq4nl, fp16_to_f32(x[i].d), y + i * QK);
    }
}

void dequantize_iq4_xs(const void *src, float *y, int64_t n) {
    const auto *x = blocks<BlockIQ4XS>(src);
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_f32(x[i].d);
        for (int ib = 0; ib < QK_K / QK; ++ib) {
            const float dl = d * float(iq4xs_scale(x[i], ib));
            decode_codes(x[i].qs + ib * (QK / 2), kValuesIq4nl, dl, y + i * QK_K + ib * QK);
        }
    }
}

float dot_iq4_nl_q8_0_generic(int64_t n, const void *vx, const void *vy) {
    const auto *x = blocks<BlockIQ4NL>(vx);
    const auto *y = blocks<BlockQ8_0>(vy);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK; ++i) {
        const int s = dot_codes(x[i].qs, kValuesIq4nl, y[i].qs);
        sum += fp16_to_f32(y[i].d) * fp16_to_f32(x[i].d) * float(s);
    }
    return sum;
}

float dot_iq4_xs_q8_k_generic(int64_t n, const void *vx, const void *vy) {
    const auto *x = blocks<BlockIQ4XS>(vx);
    const auto *y = blocks<BlockQ8K>(vy);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK_K; ++i) {
        const float d = fp16_to_f32(x[i].d) * y[i].d;
        for (int ib = 0; ib < QK_K / QK; ++ib) {
            const int s = dot_codes(x[i].qs + ib * (QK / 2), kValuesIq4nl, y[i].qs + ib * QK);
            sum += d * float(iq4xs_scale(x[i], ib)) * float(s);
        }
    }
    return sum;
}

void fill_lut4_traits(TraitsTable &table) {
    DTypeTraits &mxfp4 = table[size_t(DType::MXFP4)];
    mxfp4.to_float = dequantize_mxfp4;
    mxfp4.from_float = quantize_mxfp4;
    mxfp4.vec_dot_type = DType::Q8_0;
    mxfp4.vec_dot = vec_dot_mxfp4_q8_0;
    mxfp4.vec_dot_scalar = dot_mxfp4_q8_0_generic;

    DTypeTraits &nl = table[size_t(DType::IQ4_NL)];
    nl.to_float = dequantize_iq4_nl;
    nl.from_float = quantize_iq4_nl;
    nl.from_float_in_ops = quantize_row_iq4_nl;
    nl.vec_dot_type = DType::Q8_0;
    nl.vec_dot = vec_dot_iq4_nl_q8_0;
    nl.vec_dot_scalar = dot_iq4_nl_q8_0_generic;

    DTypeTraits &xs = table[size_t(DType::IQ4_XS)];
    xs.to_float = dequantize_iq4_xs;
    xs.from_float = quantize_iq4_xs;
    xs.vec_dot_type = DType::Q8_K;
    xs.vec_dot = vec_dot_iq4_xs_q8_k;
    xs.vec_dot_scalar = dot_iq4_xs_q8_k_generic;
}

}  // namespace loom::quant::inline LOOM_ISA
