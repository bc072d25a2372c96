// Legacy block formats: the reference quantizers (the bytes llama-quantize writes), the
// dequantizers and the plain dot products, each reproducing ggml's float arithmetic.
//
// ggml compiles these functions for baseline x86-64, where a * b + c is two roundings; keep it so
// here whatever -march says (-ffp-contract=off for core/quant in CMakeLists.txt).

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/quant/legacy_formats.h"
#include "core/quant/quant.h"
#include "loom/fp16.h"

namespace loom::quant::inline LOOM_ISA {
namespace {

constexpr int QK = kLegacyBlock;

// The element of largest magnitude with its sign; the first one wins a tie.
float signed_absmax(const float *x) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < QK; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

struct MinMax {
    float min = FLT_MAX, max = -FLT_MAX;
};
MinMax min_max(const float *x) {
    MinMax r;
    for (int j = 0; j < QK; ++j) {
        r.min = x[j] < r.min ? x[j] : r.min;
        r.max = x[j] > r.max ? x[j] : r.max;
    }
    return r;
}

uint32_t load_qh(const uint8_t *qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, sizeof bits);
    return bits;
}

// Element j of a block with 4-bit quants (and, with qh, a 5th bit), unsigned.
int nibble(const uint8_t *qs, int j) {
    return j < QK / 2 ? qs[j] & 0x0f : qs[j - QK / 2] >> 4;
}
int five_bits(const uint8_t *qs, uint32_t qh, int j) {
    return nibble(qs, j) | int((qh >> j) & 1u) << 4;
}

// ---------------------------------------------------------------------------------------------
// Reference quantizers (ggml's quantize_row_*_ref)

// Q4_0 and Q5_0: d = max / -2^(bits-1) puts the largest magnitude at q = 0; q = x / d + half
// the range, +0.5 and truncation to round.
template <int Bits>
void quantize_symmetric(const float *x, uint16_t &d_out, uint8_t *qs, uint8_t *qh) {
    constexpr int offset = 1 << (Bits - 1), q_max = (1 << Bits) - 1;
    const float d = signed_absmax(x) / float(-offset);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    d_out = f32_to_fp16(d);
    uint32_t high = 0;
    for (int j = 0; j < QK / 2; ++j) {
        const int q0 = std::min(q_max, int(to_int8(x[j] * id + (float(offset) + 0.5f))));
        const int q1 = std::min(q_max, int(to_int8(x[j + QK / 2] * id + (float(offset) + 0.5f))));
        qs[j] = uint8_t((q0 & 0x0f) | (q1 & 0x0f) << 4);
        high |= uint32_t(q0 >> 4 & 1) << j | uint32_t(q1 >> 4 & 1) << (j + QK / 2);
    }
    if (qh != nullptr) std::memcpy(qh, &high, sizeof high);
}

// Q4_1 and Q5_1: d = (max - min) / (2^bits - 1), q = (x - min) / d, +0.5 and truncation.
// Q4_1 clamps q to 15; Q5_1 does not clamp (ggml's formula cannot exceed 31).
template <int Bits>
void quantize_affine(const float *x, uint16_t &d_out, uint16_t &m_out, uint8_t *qs, uint8_t *qh) {
    const MinMax r = min_max(x);
    const float d = (r.max - r.min) / float((1 << Bits) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    d_out = f32_to_fp16(d);
    m_out = f32_to_fp16(r.min);
    uint32_t high = 0;
    for (int j = 0; j < QK / 2; ++j) {
        int q0 = int(uint8_t(to_int8((x[j] - r.min) * id + 0.5f)));
        int q1 = int(uint8_t(to_int8((x[j + QK / 2] - r.min) * id + 0.5f)));
        if constexpr (Bits == 4) {
            q0 = std::min(15, q0);
            q1 = std::min(15, q1);
        }
        qs[j] = uint8_t((q0 & 0x0f) | (q1 & 0x0f) << 4);
        high |= uint32_t(q0 >> 4 & 1) << j | uint32_t(q1 >> 4 & 1) << (j + QK / 2);
    }
    if (qh != nullptr) std::memcpy(qh, &high, sizeof high);
}

// Q8_0 and Q8_1: d = amax / 127, q = roundf(x / d) (halves away from zero).
float quantize_q8(const float *x, uint16_t &d_out, int8_t *qs) {
    float amax = 0.0f;
    for (int j = 0; j < QK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    d_out = f32_to_fp16(d);
    for (int j = 0; j < QK; ++j) qs[j] = to_int8(std::roundf(x[j] * id));
    return d;
}

void quantize_q4_0(const float *x, void *dst, int64_t n) {
    auto *y = blocks<BlockQ4_0>(dst);
    for (int64_t i = 0; i < n / QK; ++i)
        quantize_symmetric<4>(x + i * QK, y[i].d, y[i].qs, nullptr);
}
void quantize_q5_0(const float *x, void *dst, int64_t n) {
    auto *y = blocks<BlockQ5_0>(dst);
    for (int64_t i = 0; i < n / QK; ++i)
        quantize_symmetric<5>(x + i * QK, y[i].d, y[i].qs, y[i].qh);
}
void quantize_q4_1(const float *x, void *dst, int64_t n) {
    auto *y = blocks<BlockQ4_1>(dst);
    for (int64_t i = 0; i < n / QK; ++i)
        quantize_affine<4>(x + i * QK, y[i].d, y[i].m, y[i].qs, nullptr);
}
void quantize_q5_1(const float *x, void *dst, int64_t n) {
    auto *y = blocks<BlockQ5_1>(dst);
    for (int64_t i = 0; i < n / QK; ++i)
        quantize_affine<5>(x + i * QK, y[i].d, y[i].m, y[i].qs, y[i].qh);
}
void quantize_q8_0(const float *x, void *dst, int64_t n) {
    auto *y = blocks<BlockQ8_0>(dst);
    for (int64_t i = 0; i < n / QK; ++i) quantize_q8(x + i * QK, y[i].d, y[i].qs);
}
void quantize_q8_1(const float *x, void *dst, int64_t n) {
    auto *y = blocks<BlockQ8_1>(dst);
    for (int64_t i = 0; i < n / QK; ++i) {
        const float d = quantize_q8(x + i * QK, y[i].d, y[i].qs);
        int sum = 0;
        for (int j = 0; j < QK; ++j) sum += y[i].qs[j];
        y[i].s = f32_to_fp16(float(sum) * d);
    }
}

// ---------------------------------------------------------------------------------------------
// Dequantizers

void dequantize_q4_0(const void *src, float *y, int64_t n) {
    const auto *x = blocks<BlockQ4_0>(src);
    for (int64_t i = 0; i < n / QK; ++i) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK; ++j) y[i * QK + j] = float(nibble(x[i].qs, j) - 8) * d;
    }
}
void dequantize_q4_1(const void *src, float *y, int64_t n) {
    const auto *x = blocks<BlockQ4_1>(src);
    for (int64_t i = 0; i < n / QK; ++i) {
        const float d = fp16_to_f32(x[i].d), m = fp16_to_f32(x[i].m);
        for (int j = 0; j < QK; ++j) y[i * QK + j] = float(nibble(x[i].qs, j)) * d + m;
    }
}
void dequantize_q5_0(const void *src, float *y, int64_t n) {
    const auto *x = blocks<BlockQ5_0>(src);
    for (int64_t i = 0; i < n / QK; ++i) {
        const float d = fp16_to_f32(x[i].d);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < QK; ++j) y[i * QK + j] = float(five_bits(x[i].qs, qh, j) - 16) * d;
    }
}
void dequantize_q5_1(const void *src, float *y, int64_t n) {
    const auto *x = blocks<BlockQ5_1>(src);
    for (int64_t i = 0; i < n / QK; ++i) {
        const float d = fp16_to_f32(x[i].d), m = fp16_to_f32(x[i].m);
        const uint32_t qh = load_qh(x[i].qh);
        for (int j = 0; j < QK; ++j) y[i * QK + j] = float(five_bits(x[i].qs, qh, j)) * d + m;
    }
}
void dequantize_q8_0(const void *src, float *y, int64_t n) {
    const auto *x = blocks<BlockQ8_0>(src);
    for (int64_t i = 0; i < n / QK; ++i) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK; ++j) y[i * QK + j] = float(x[i].qs[j]) * d;
    }
}
void dequantize_q8_1(const void *src, float *y, int64_t n) {
    const auto *x = blocks<BlockQ8_1>(src);
    for (int64_t i = 0; i < n / QK; ++i) {
        const float d = fp16_to_f32(x[i].d);
        for (int j = 0; j < QK; ++j) y[i * QK + j] = float(x[i].qs[j]) * d;
    }
}

// ---------------------------------------------------------------------------------------------
// Plain dot products (ggml's generic kernels): the exact integer sum of a block, times the
// scales, added to one float sum block after block.

template <typename Weight, typename Act>
int block_sum(const Weight &x, const Act &y, int (*weight)(const Weight &, int)) {
    // Decoding first, then summing, keeps each loop simple: GCC 12 at -O2 -march=native
    // vectorizes the fused form of this loop into wrong sums (the scalar-vs-SIMD test caught it).
    int w[QK];
    for (int j = 0; j < QK; ++j) w[j] = weight(x, j);
    int sum = 0;
    for (int j = 0; j < QK; ++j) sum += w[j] * y.qs[j];
    return sum;
}

float dot_q4_0_q8_0(int64_t n, const void *vx, const void *vy) {
    const auto *x = blocks<BlockQ4_0>(vx);
    const auto *y = blocks<BlockQ8_0>(vy);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK; ++i) {
        const int s = block_sum(
            x[i], y[i], +[](const BlockQ4_0 &b, int j) { return nibble(b.qs, j) - 8; });
        sum += float(s) * fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d);
    }
    return sum;
}
float dot_q5_0_q8_0(int64_t n, const void *vx, const void *vy) {
    const auto *x = blocks<BlockQ5_0>(vx);
    const auto *y = blocks<BlockQ8_0>(vy);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK; ++i) {
        const int s = block_sum(
            x[i], y[i],
            +[](const BlockQ5_0 &b, int j) { return five_bits(b.qs, load_qh(b.qh), j) - 16; });
        sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) * float(s);
    }
    return sum;
}
float dot_q8_0_q8_0(int64_t n, const void *vx, const void *vy) {
    const auto *x = blocks<BlockQ8_0>(vx);
    const auto *y = blocks<BlockQ8_0>(vy);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK; ++i) {
        const int s = block_sum(
            x[i], y[i], +[](const BlockQ8_0 &b, int j) { return int(b.qs[j]); });
        sum += float(s) * (fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d));
    }
    return sum;
}
float dot_q4_1_q8_1(int64_t n, const void *vx, const void *vy) {
    const auto *x = blocks<BlockQ4_1>(vx);
    const auto *y = blocks<BlockQ8_1>(vy);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK; ++i) {
        const int s = block_sum(
            x[i], y[i], +[](const BlockQ4_1 &b, int j) { return nibble(b.qs, j); });
        sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) * float(s) +
               fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
    }
    return sum;
}
float dot_q5_1_q8_1(int64_t n, const void *vx, const void *vy) {
    const auto *x = blocks<BlockQ5_1>(vx);
    const auto *y = blocks<BlockQ8_1>(vy);
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK; ++i) {
        const int s = block_sum(
            x[i], y[i],
            +[](const BlockQ5_1 &b, int j) { return five_bits(b.qs, load_qh(b.qh), j); });
        sum += fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d) * float(s) +
               fp16_to_f32(x[i].m) * fp16_to_f32(y[i].s);
    }
    return sum;
}

void set_row(TraitsTable &table, DType type, void (*to_float)(const void *, float *, int64_t),
             void (*from_float)(const float *, void *, int64_t), DType vec_dot_type,
             float (*vec_dot)(int64_t, const void *, const void *),
             float (*vec_dot_scalar)(int64_t, const void *, const void *)) {
    DTypeTraits &t = table[size_t(type)];
    t.to_float = to_float;
    t.from_float = from_float;
    t.vec_dot_type = vec_dot_type;
    t.vec_dot = vec_dot;
    t.vec_dot_scalar = vec_dot_scalar;
}

}  // namespace

void fill_legacy_traits(TraitsTable &table) {
    // ggml's pairings: the symmetric formats dot with Q8_0, those with a minimum with Q8_1
    // (whose s carries the activations' block sum). The Q8 types are activation formats, so
    // only Q8_0 has a dot product of its own (Q8_0 weights).
    set_row(table, DType::Q4_0, dequantize_q4_0, quantize_q4_0, DType::Q8_0, vec_dot_q4_0_q8_0,
            dot_q4_0_q8_0);
    set_row(table, DType::Q4_1, dequantize_q4_1, quantize_q4_1, DType::Q8_1, vec_dot_q4_1_q8_1,
            dot_q4_1_q8_1);
    set_row(table, DType::Q5_0, dequantize_q5_0, quantize_q5_0, DType::Q8_0, vec_dot_q5_0_q8_0,
            dot_q5_0_q8_0);
    set_row(table, DType::Q5_1, dequantize_q5_1, quantize_q5_1, DType::Q8_1, vec_dot_q5_1_q8_1,
            dot_q5_1_q8_1);
    set_row(table, DType::Q8_0, dequantize_q8_0, quantize_q8_0, DType::Q8_0, vec_dot_q8_0_q8_0,
            dot_q8_0_q8_0);
    set_row(table, DType::Q8_1, dequantize_q8_1, quantize_q8_1, DType::Q8_1, nullptr, nullptr);
    // The Q8 activations (and a Q8_0 KV cache) are written by ggml's SIMD quantizer.
    table[size_t(DType::Q8_0)].from_float_in_ops = quantize_activations_q8_0;
    table[size_t(DType::Q8_1)].from_float_in_ops = quantize_activations_q8_1;
}

}  // namespace loom::quant::inline LOOM_ISA
