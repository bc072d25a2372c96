// Q6_K: 16 sub-blocks of 16 with a signed 8-bit scale each, 6-bit quants: x = d * scale * (q - 32).
// Q8_K: the activations' format, one float scale per 256 and the sums of each 16 quants.
// Reference quantizers as ggml's quantize_row_q6_K_ref and quantize_row_q8_K_ref, operation for
// operation (no fused multiply-adds).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant/k_blocks.h"
#include "core/quant/k_fit.h"
#include "loom/fp16.h"

namespace loom::quant::inline LOOM_ISA {
namespace {

// Below this largest |scale| a super-block is stored as zeros (ggml's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

void pack_q6_k(const int8_t *L, BlockQ6K &y) {
    // Per 128 elements: ql[l] holds elements l and l + 64 (low, high nibble), ql[l + 32] elements
    // l + 32 and l + 96; qh[l] holds the top two bits of l, l + 32, l + 64, l + 96.
    uint8_t *ql = y.ql;
    uint8_t *qh = y.qh;
    for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
        for (int l = 0; l < 32; ++l) {
            const uint8_t q1 = L[j + l] & 0xF;
            const uint8_t q2 = L[j + l + 32] & 0xF;
            const uint8_t q3 = L[j + l + 64] & 0xF;
            const uint8_t q4 = L[j + l + 96] & 0xF;
            ql[l] = uint8_t(q1 | (q3 << 4));
            ql[l + 32] = uint8_t(q2 | (q4 << 4));
            qh[l] = uint8_t((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                            ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
        }
    }
}

}  // namespace

void quantize_q6_k(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<BlockQ6K *>(vy);
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        float max_scale = 0;
        float max_abs_scale = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            scales[j] = fit_symmetric(16, 32, x + 16 * j, L + 16 * j);
            const float abs_scale = std::fabs(scales[j]);
            if (abs_scale > max_abs_scale) {
                max_abs_scale = abs_scale;
                max_scale = scales[j];
            }
        }
        if (max_abs_scale < kGroupMaxEps) {
            std::memset(&y[b], 0, sizeof(BlockQ6K));
            continue;
        }
        // the signed largest scale becomes -128, so the others fit in an int8
        const float iscale = -128.f / max_scale;
        y[b].d = f32_to_fp16(1 / iscale);
        for (int j = 0; j < QK_K / 16; ++j) {
            y[b].scales[j] = int8_t(std::min(127, nearest_int(iscale * scales[j])));
        }
        // Requantize against the rounded scales the file will hold.
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = fp16_to_f32(y[b].d) * y[b].scales[j];
            if (!d) continue;
            for (int i = 0; i < 16; ++i) {
                const int l = nearest_int(x[16 * j + i] / d);
                L[16 * j + i] = int8_t(std::max(-32, std::min(31, l)) + 32);
            }
        }
        pack_q6_k(L, y[b]);
    }
}

void dequantize_q6_k(const void *vx, float *y, int64_t n) {
    const auto *x = static_cast<const BlockQ6K *>(vx);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = fp16_to_f32(x[b].d);
        const uint8_t *ql = x[b].ql;
        const uint8_t *qh = x[b].qh;
        const int8_t *sc = x[b].scales;
        for (int k = 0; k < QK_K; k += 128, y += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; ++l) {
                const int is = l / 16;
                const int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                const int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                y[l] = d * sc[is] * q1;
                y[l + 32] = d * sc[is + 2] * q2;
                y[l + 64] = d * sc[is + 4] * q3;
                y[l + 96] = d * sc[is + 6] * q4;
            }
        }
    }
}

void quantize_q8_k(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<BlockQ8K *>(vy);
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        float max = 0;
        float amax = 0;
        for (int j = 0; j < QK_K; ++j) {
            const float ax = std::fabs(x[j]);
            if (ax > amax) {
                amax = ax;
                max = x[j];
            }
        }
        if (!amax) {
            std::memset(&y[b], 0, sizeof(BlockQ8K));
            continue;
        }
        // The signed largest element becomes -127, not -128: levels stay symmetric (ggml's
        // choice, which its SIMD dot products rely on).
        const float iscale = -127.f / max;
        for (int j = 0; j < QK_K; ++j) {
            y[b].qs[j] = int8_t(std::min(127, nearest_int(iscale * x[j])));
        }
        for (int j = 0; j < QK_K / 16; ++j) {
            int sum = 0;
            for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * j + i];
            y[b].bsums[j] = int16_t(sum);
        }
        y[b].d = 1 / iscale;
    }
}

void dequantize_q8_k(const void *vx, float *y, int64_t n) {
    const auto *x = static_cast<const BlockQ8K *>(vx);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        for (int j = 0; j < QK_K; ++j) *y++ = x[b].d * x[b].qs[j];
    }
}

}  // namespace loom::quant::inline LOOM_ISA
