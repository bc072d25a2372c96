// Q2_K: 16 sub-blocks of 16 with a 4-bit scale and a 4-bit min each, 2-bit quants:
// x = d * scale * q - dmin * min. Q3_K: 16 sub-blocks of 16 with a signed 6-bit scale each, 3-bit
// quants: x = d * (scale - 32) * (q - 4). Reference quantizers as ggml's quantize_row_q2_K_ref and
// quantize_row_q3_K_ref, operation for operation (no fused multiply-adds).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/quant/k_blocks.h"
#include "core/quant/k_fit.h"
#include "loom/fp16.h"

namespace loom::quant::inline LOOM_ISA {
namespace {

// Per 128 elements, byte l of 32 holds elements l, l + 32, l + 64, l + 96 in bits 0-1 ... 6-7.
void pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < QK_K; j += 128) {
        for (int l = 0; l < 32; ++l) {
            qs[j / 4 + l] = uint8_t(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) |
                                    (L[j + l + 96] << 6));
        }
    }
}

// Q3_K's scale of sub-block j (0..15) from its 12 packed bytes, still offset by 32: low nibbles
// in bytes 0-7 (j and j - 8 share a byte), the top two bits in bytes 8-11.
int q3_k_scale(const uint8_t *scales, int j) {
    const int low = j < 8 ? scales[j] & 0xF : scales[j - 8] >> 4;
    return low | (((scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
}

}  // namespace

void quantize_q2_k(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<BlockQ2K *>(vy);
    uint8_t L[QK_K];
    float weights[16];
    float scales[QK_K / 16];
    float mins[QK_K / 16];
    constexpr float kLevels4 = 15.f;  // 4-bit scales and mins: the largest becomes 15
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        float max_scale = 0;  // scales are positive: the min is taken out first
        float max_min = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
            scales[j] = fit_with_min(16, 3, x + 16 * j, weights, L + 16 * j, mins[j], -0.5f, 0.1f,
                                     15, true);
            max_scale = std::max(max_scale, scales[j]);
            max_min = std::max(max_min, mins[j]);
        }
        if (max_scale > 0) {
            const float iscale = kLevels4 / max_scale;
            for (int j = 0; j < QK_K / 16; ++j)
                y[b].scales[j] = uint8_t(nearest_int(iscale * scales[j]));
            y[b].d = f32_to_fp16(max_scale / kLevels4);
        } else {
            std::memset(y[b].scales, 0, sizeof y[b].scales);
            y[b].d = f32_to_fp16(0.f);
        }
        if (max_min > 0) {
            const float iscale = kLevels4 / max_min;
            for (int j = 0; j < QK_K / 16; ++j) {
                y[b].scales[j] |= uint8_t(nearest_int(iscale * mins[j]) << 4);
            }
            y[b].dmin = f32_to_fp16(max_min / kLevels4);
        } else {
            y[b].dmin = f32_to_fp16(0.f);
        }
        // Requantize against the rounded scales and mins the file will hold.
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = fp16_to_f32(y[b].d) * (y[b].scales[j] & 0xF);
            if (!d) continue;
            const float dm = fp16_to_f32(y[b].dmin) * (y[b].scales[j] >> 4);
            for (int i = 0; i < 16; ++i) {
                const int l = nearest_int((x[16 * j + i] + dm) / d);
                L[16 * j + i] = uint8_t(std::max(0, std::min(3, l)));
            }
        }
        pack_2bit(L, y[b].qs);
    }
}

void quantize_q3_k(const float *x, void *vy, int64_t n) {
    auto *y = static_cast<BlockQ3K *>(vy);
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t b = 0; b < n / QK_K; ++b, x += QK_K) {
        float max_scale = 0;
        float amax = 0;
        for (int j = 0; j < QK_K / 16; ++j) {
            scales[j] = fit_symmetric_refined(16, 4, x + 16 * j, L + 16 * j);
            const float scale = std::fabs(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }
        std::memset(y[b].scales, 0, 12);
        if (max_scale) {
            // the signed largest scale becomes -32, so the others fit in 6 signed bits
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < QK_K / 16; ++j) {
                int8_t l = int8_t(nearest_int(iscale * scales[j]));
                l = int8_t(std::max<int>(-32, std::min<int>(31, l)) + 32);
                if (j < 8) {
                    y[b].scales[j] = l & 0xF;
                } else {
                    y[b].scales[j - 8] |= uint8_t((l & 0xF) << 4);
                }
                l = int8_t(l >> 4);
                y[b].scales[j % 4 + 8] |= uint8_t(l << (2 * (j / 4)));
            }
            y[b].d = f32_to_fp16(1 / iscale);
        } else {
            y[b].d = f32_to_fp16(0.f);
        }
        // Requantize against the rounded scales the file will hold.
        for (int j = 0; j < QK_K / 16; ++j) {
            const float d = fp16_to_f32(y[b].d) * int8_t(q3_k_scale(y[b].scales, j) - 32);
            if (!d) continue;
            for (int i = 0; i < 16; ++i) {
                const int l = nearest_int(x[16 * j + i] / d);
                L[16 * j + i] = int8_t(std::max(-4, std::min(3, l)) + 4);
            }
        }
        // The high bit of element j goes to bit j / 32 of hmask[j % 32].
        std::memset(y[b].hmask, 0, QK_K / 8);
        uint8_t low[QK_K];
        for (int j = 0; j < QK_K; ++j) {
            low[j] = uint8_t(L[j] & 3);
            if (L[j] > 3) y[b].hmask[j % 32] |= uint8_t(1 << (j / 32));
        }
        pack_2bit(low, y[b].qs);
    }
}

void dequantize_q2_k(const void *vx, float *y, int64_t n) {
    const auto *x = static_cast<const BlockQ2K *>(vx);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = fp16_to_f32(x[b].d);
        const float min = fp16_to_f32(x[b].dmin);
        const uint8_t *q = x[b].qs;
        int is = 0;
        for (int k = 0; k < QK_K; k += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int half = 0; half < 2; ++half) {  // 16 bytes per sub-block of 16
                    const uint8_t sc = x[b].scales[is++];
                    const float dl = d * (sc & 0xF), ml = min * (sc >> 4);
                    for (int l = 0; l < 16; ++l) *y++ = dl * ((q[16 * half + l] >> shift) & 3) - ml;
                }
            }
        }
    }
}

void dequantize_q3_k(const void *vx, float *y, int64_t n) {
    const auto *x = static_cast<const BlockQ3K *>(vx);
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d_all = fp16_to_f32(x[b].d);
        const uint8_t *q = x[b].qs;
        const uint8_t *hm = x[b].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int k = 0; k < QK_K; k += 128, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int half = 0; half < 2; ++half) {
                    const float dl = d_all * (q3_k_scale(x[b].scales, is++) - 32);
                    for (int l = 16 * half; l < 16 * half + 16; ++l) {
                        *y++ = dl * (((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4));
                    }
                }
            }
        }
    }
}

}  // namespace loom::quant::inline LOOM_ISA
