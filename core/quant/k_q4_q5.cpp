// Q4_K and Q5_K: 8 sub-blocks of 32 with a 6-bit scale and a 6-bit min each, quants of 4 (5)
// bits: x = d * scale * q - dmin * min. Reference quantizers as ggml's quantize_row_q4_K_ref and
// quantize_row_q5_K_ref, operation for operation (no fused multiply-adds).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant/k_blocks.h"
#include "core/quant/k_fit.h"
#include "loom/fp16.h"

namespace loom::quant::inline LOOM_ISA {
namespace {

// Fits the 8 sub-blocks of one super-block with an offset (levels 0 .. nmax), then stores the
// 6-bit scales and mins with their two F16 super-scales. L gets each element's level.
template <typename Block>
void quantize_scales_and_levels(const float *x, Block &y, int nmax, float rmin, float rdelta,
                                int nstep, uint8_t *L) {
    float scales[QK_K / 32];
    float mins[QK_K / 32];
    float weights[32];
    float max_scale = 0;  // scales are positive: the min is taken out first
    float max_min = 0;
    for (int j = 0; j < QK_K / 32; ++j) {
        const float *xj = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += xj[l] * xj[l];
        const float av_x = std::sqrt(sum_x2 / 32);
        // weight large elements more, with the group's RMS as a floor
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(xj[l]);
        scales[j] =
            fit_with_min(32, nmax, xj, weights, L + 32 * j, mins[j], rmin, rdelta, nstep, false);
        max_scale = std::max(max_scale, scales[j]);
        max_min = std::max(max_min, mins[j]);
    }

    // 6 bits: the largest scale (min) becomes 63
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < QK_K / 32; ++j) {
        const uint8_t ls = std::min<uint8_t>(63, uint8_t(nearest_int(inv_scale * scales[j])));
        const uint8_t lm = std::min<uint8_t>(63, uint8_t(nearest_int(inv_min * mins[j])));
        if (j < 4) {
            y.scales[j] = ls;
            y.scales[j + 4] = lm;
        } else {  // low nibbles in bytes 8-11, top two bits in the spare bits of bytes 0-7
            y.scales[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
            y.scales[j - 4] |= uint8_t((ls >> 4) << 6);
            y.scales[j] |= uint8_t((lm >> 4) << 6);
        }
    }
    y.d = f32_to_fp16(max_scale / 63.f);
    y.dmin = f32_to_fp16(max_min / 63.f);

    // Requantize against the rounded scales and mins the file will hold.
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc, m;
        scale_min_k4(j, y.scales, sc, m);
        const float d = fp16_to_f32(y.d) * sc;
        if (!d) continue;
        const float dm = fp16_to_f32(y.dmin) * m;
        for (int i = 0; i < 32; ++i) {
            const int l = nearest_int((x[32 * j + i] + dm) / d);
            L[32 * j + i] = uint8_t(std::max(0, std::min(nmax, l)));
        }
    }
}

}  // namespace

void quantize_q4_k(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<BlockQ4K *>(vy);
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        quantize_scales_and_levels(x, y[b], 15, -1.f, 0.1f, 20, L);
        // each 64 elements share 32 bytes: the first 32 in the low nibbles, the next in the high
        uint8_t *q = y[b].qs;
        for (int j = 0; j < QK_K; j += 64, q += 32) {
            for (int l = 0; l < 32; ++l) q[l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
        }
    }
}

void quantize_q5_k(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<BlockQ5K *>(vy);
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        quantize_scales_and_levels(x, y[b], 31, -0.5f, 0.1f, 15, L);
        // low nibbles as Q4_K; the fifth bit of element 64 * k + 32 * h + j is bit 2k + h of qh[j]
        uint8_t *qh = y[b].qh;
        uint8_t *ql = y[b].qs;
        std::memset(qh, 0, QK_K / 8);
        uint8_t m1 = 1, m2 = 2;
        for (int k = 0; k < QK_K; k += 64, ql += 32, m1 <<= 2, m2 <<= 2) {
            for (int j = 0; j < 32; ++j) {
                int l1 = L[k + j];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                int l2 = L[k + j + 32];
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = uint8_t(l1 | (l2 << 4));
            }
        }
    }
}

void dequantize_q4_k(const void *vx, float *y, int64_t n) {
    const auto *x = static_cast<const BlockQ4K *>(vx);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = fp16_to_f32(x[b].d);
        const float min = fp16_to_f32(x[b].dmin);
        const uint8_t *q = x[b].qs;
        for (int j = 0; j < QK_K / 32; j += 2, q += 32) {
            uint8_t sc, m;
            scale_min_k4(j, x[b].scales, sc, m);
            const float d1 = d * sc, m1 = min * m;
            scale_min_k4(j + 1, x[b].scales, sc, m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; ++l) *y++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

void dequantize_q5_k(const void *vx, float *y, int64_t n) {
    const auto *x = static_cast<const BlockQ5K *>(vx);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = fp16_to_f32(x[b].d);
        const float min = fp16_to_f32(x[b].dmin);
        const uint8_t *ql = x[b].qs;
        const uint8_t *qh = x[b].qh;
        uint8_t u1 = 1, u2 = 2;
        for (int j = 0; j < QK_K / 32; j += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            uint8_t sc, m;
            scale_min_k4(j, x[b].scales, sc, m);
            const float d1 = d * sc, m1 = min * m;
            scale_min_k4(j + 1, x[b].scales, sc, m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; ++l) *y++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; ++l) *y++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        }
    }
}

}  // namespace loom::quant::inline LOOM_ISA
