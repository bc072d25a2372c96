// The table-indexed 4-bit formats (lut4_formats.h): reference quantizers, dequantizers, the
// generic dot products and their rows of the dtype traits table.
//
// The quantizers reproduce ggml's float arithmetic step for step, without fused multiply-adds
// (core/quant is built with -ffp-contract=off, as ggml's base library is for baseline x86-64).

#include <cmath>

#include "core/quant/lut4_formats.h"
#include "core/quant/quant.h"
#include "loom/fp16.h"

namespace loom::quant {
namespace {

constexpr int QK = kLut4Block;

template <typename Block>
const Block *blocks(const void *p) {
    return static_cast<const Block *>(p);
}
template <typename Block>
Block *blocks(void *p) {
    return static_cast<Block *>(p);
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
        const float d = e8m0_half_to_f32(x[i].e);
        for (int j = 0; j < QK / 2; ++j) {
            y[i * QK + j] = float(kValuesMxfp4[x[i].qs[j] & 0x0f]) * d;
            y[i * QK + j + QK / 2] = float(kValuesMxfp4[x[i].qs[j] >> 4]) * d;
        }
    }
}

float dot_mxfp4_q8_0_generic(int64_t n, const void *vx, const void *vy) {
    const auto *x = blocks<BlockMXFP4>(vx);
    const auto *y = blocks<BlockQ8_0>(vy);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK; ++i) {
        int s = 0;
        for (int j = 0; j < QK / 2; ++j) {
            s += int(y[i].qs[j]) * kValuesMxfp4[x[i].qs[j] & 0x0f] +
                 int(y[i].qs[j + QK / 2]) * kValuesMxfp4[x[i].qs[j] >> 4];
        }
        sum += fp16_to_f32(y[i].d) * e8m0_half_to_f32(x[i].e) * float(s);
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
}

}  // namespace loom::quant
