#pragma once
// The legacy GGUF block formats (32 elements per block, one or two F16 scales), laid out byte
// for byte as GGUF stores them, and the dot products of core/quant/legacy_dot.cpp.
#include <cstdint>

#include "core/isa.h"
#include "loom/tensor.h"

namespace loom::quant::inline LOOM_ISA {

inline constexpr int kLegacyBlock = 32;  // elements per block of every legacy format

// A float to int8 as ggml's casts compile on x86 (truncated to int32, then the low byte), without
// C++'s undefined behaviour for NaN, infinities and values past int8 (x86 then gives 0x80000000,
// whose low byte is 0). In range, it is a plain truncation; the quantizers leave it only for
// weights or activations that are not finite.
inline int8_t to_int8(float v) {
    if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
    return int8_t(int32_t(v));  // int32 to int8 wraps (C++20)
}

// x = d * (q - 8); byte j holds element j (low nibble) and element j + 16 (high nibble).
struct BlockQ4_0 {
    uint16_t d;  // F16
    uint8_t qs[kLegacyBlock / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// x = d * q + m; nibbles as Q4_0.
struct BlockQ4_1 {
    uint16_t d, m;  // F16
    uint8_t qs[kLegacyBlock / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// x = d * (q - 16); the 5th bit of element j is bit j of qh (little-endian), the low 4 bits
// are nibbles as Q4_0.
struct BlockQ5_0 {
    uint16_t d;  // F16
    uint8_t qh[4];
    uint8_t qs[kLegacyBlock / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// x = d * q + m; bits as Q5_0.
struct BlockQ5_1 {
    uint16_t d, m;  // F16
    uint8_t qh[4];
    uint8_t qs[kLegacyBlock / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// x = d * q.
struct BlockQ8_0 {
    uint16_t d;  // F16
    int8_t qs[kLegacyBlock];
};
static_assert(sizeof(BlockQ8_0) == 34);

// x = d * q; s = d * sum(q), so formats with a minimum (Q4_1, Q5_1) add m * s per block.
struct BlockQ8_1 {
    uint16_t d, s;  // F16
    int8_t qs[kLegacyBlock];
};
static_assert(sizeof(BlockQ8_1) == 36);

// Activation quantizers of llama.cpp's x86 CPU backend (core/quant/legacy_activations.cpp), which
// mul_mat uses for the columns: id = 127 / amax (not 1 / d) and ties rounded to even (not away
// from zero), so a few values land one step apart from the reference quantizer's.
void quantize_activations_q8_0(const float *x, void *y, int64_t n);
void quantize_activations_q8_1(const float *x, void *y, int64_t n);

// Dot products of n elements (a multiple of 32) in the order of ggml's AVX2 kernels, which
// produced llama.cpp's reference numbers: per block, 8 lanes each hold the exact integer sum of
// 4 consecutive products, and lane l of the accumulator becomes fma(d_x * d_y, sum_l, acc_l);
// the 8 lanes are added as a pairwise tree at the end, then (Q4_1, Q5_1) the sum over blocks
// of fma(m_x, s_y, .). AVX2 where the build has it, the same arithmetic in plain C++ otherwise,
// so every build gives the same bits.
float vec_dot_q4_0_q8_0(int64_t n, const void *x, const void *y);
float vec_dot_q4_1_q8_1(int64_t n, const void *x, const void *y);
float vec_dot_q5_0_q8_0(int64_t n, const void *x, const void *y);
float vec_dot_q5_1_q8_1(int64_t n, const void *x, const void *y);
float vec_dot_q8_0_q8_0(int64_t n, const void *x, const void *y);

// out[c] = vec_dot(n, x, ys[c]) for c < n_cols <= kMaxDotColumns, bit for bit, with each weight
// block decoded once for all the columns; null for types other than the five above.
inline constexpr int kMaxDotColumns = 4;
using DotColumns = void (*)(int64_t n, const void *x, const void *const *ys, int n_cols,
                            float *out);
DotColumns legacy_dot_columns(DType type);

// out[c][r] = vec_dot(n, xs[r], ys[c]) for c < n_cols <= kMaxDotColumns and r < n_rows, bit for
// bit: a few activation rows against many weight rows that lie anywhere in memory (the queries of
// an attention tile against the keys of a quantized cache). With AVX-512 VNNI two weight rows
// share a vector; elsewhere it is dot_columns row after row. Null for types other than the five
// above.
using DotGrid = void (*)(int64_t n, const void *const *xs, int64_t n_rows, const void *const *ys,
                         int n_cols, float *const *out);
DotGrid legacy_dot_grid(DType type);

}  // namespace loom::quant::inline LOOM_ISA
