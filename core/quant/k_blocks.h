#pragma once
// The K-quant super-block formats of GGUF (ggml's block_q2_K ... block_q8_K): 256 elements per
// block, split into sub-blocks of 16 or 32 that each carry a 4-, 6- or 8-bit scale. The layouts
// are the file's bytes, so every struct's size is checked against dtype.def.
#include <cstdint>
#include <cstring>

#include "core/isa.h"

namespace loom::quant::inline LOOM_ISA {

inline constexpr int QK_K = 256;

struct BlockQ2K {
    uint8_t scales[QK_K / 16];  // low nibble scale, high nibble min, per 16 elements
    uint8_t qs[QK_K / 4];       // 2-bit quants
    uint16_t d;                 // F16 super-block scale of the scales
    uint16_t dmin;              // F16 super-block scale of the mins
};
static_assert(sizeof(BlockQ2K) == 84);

struct BlockQ3K {
    uint8_t hmask[QK_K / 8];  // high bit of each 3-bit quant
    uint8_t qs[QK_K / 4];     // low 2 bits
    uint8_t scales[12];       // 16 6-bit scales, packed
    uint16_t d;               // F16 super-block scale
};
static_assert(sizeof(BlockQ3K) == 110);

struct BlockQ4K {
    uint16_t d;            // F16 super-block scale of the scales
    uint16_t dmin;         // F16 super-block scale of the mins
    uint8_t scales[12];    // 8 6-bit scales and 8 6-bit mins (scale_min_k4)
    uint8_t qs[QK_K / 2];  // 4-bit quants
};
static_assert(sizeof(BlockQ4K) == 144);

struct BlockQ5K {
    uint16_t d;
    uint16_t dmin;
    uint8_t scales[12];    // as Q4_K
    uint8_t qh[QK_K / 8];  // fifth bit of each quant
    uint8_t qs[QK_K / 2];  // low 4 bits
};
static_assert(sizeof(BlockQ5K) == 176);

struct BlockQ6K {
    uint8_t ql[QK_K / 2];      // low 4 bits
    uint8_t qh[QK_K / 4];      // high 2 bits
    int8_t scales[QK_K / 16];  // 8-bit scale per 16 elements
    uint16_t d;                // F16 super-block scale
};
static_assert(sizeof(BlockQ6K) == 210);

// The activations' format for every K-quant dot product.
struct BlockQ8K {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];  // sums of each 16 quants, for the min terms
};
static_assert(sizeof(BlockQ8K) == 292);

// Round to nearest, ties to even, for |x| <= 2^22: adding 1.5 * 2^23 leaves the integer in the
// low mantissa bits (ggml's nearest_int; the bytes depend on its tie rule).
inline int nearest_int(float x) {
    const float shifted = x + 12582912.f;
    int32_t bits;
    std::memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

// The 6-bit scale and min of sub-block j (of 8) in Q4_K/Q5_K's 12 packed bytes: bytes 0-3 hold
// scales 0-3, bytes 4-7 mins 0-3, bytes 8-11 the low nibbles of scales/mins 4-7, whose top two
// bits ride in the spare top bits of bytes 0-7.
inline void scale_min_k4(int j, const uint8_t *q, uint8_t &scale, uint8_t &min) {
    if (j < 4) {
        scale = q[j] & 63;
        min = q[j + 4] & 63;
    } else {
        scale = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        min = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

// Reference quantizers (the bytes llama-quantize writes without an importance matrix),
// dequantizers and dot products with a Q8_K row; n is a multiple of QK_K.
void quantize_q2_k(const float *x, void *y, int64_t n);
void quantize_q3_k(const float *x, void *y, int64_t n);
void quantize_q4_k(const float *x, void *y, int64_t n);
void quantize_q5_k(const float *x, void *y, int64_t n);
void quantize_q6_k(const float *x, void *y, int64_t n);
void quantize_q8_k(const float *x, void *y, int64_t n);

void dequantize_q2_k(const void *x, float *y, int64_t n);
void dequantize_q3_k(const void *x, float *y, int64_t n);
void dequantize_q4_k(const void *x, float *y, int64_t n);
void dequantize_q5_k(const void *x, float *y, int64_t n);
void dequantize_q6_k(const void *x, float *y, int64_t n);
void dequantize_q8_k(const void *x, float *y, int64_t n);

// Each dot product exists twice: with the build's vector integer arithmetic and as the plain
// reference. Both produce the same integer sums and combine them in the same float order, so
// their results are bitwise equal.
float dot_q2_k(int64_t n, const void *x, const void *y);
float dot_q3_k(int64_t n, const void *x, const void *y);
float dot_q4_k(int64_t n, const void *x, const void *y);
float dot_q5_k(int64_t n, const void *x, const void *y);
float dot_q6_k(int64_t n, const void *x, const void *y);
float dot_q2_k_scalar(int64_t n, const void *x, const void *y);
float dot_q3_k_scalar(int64_t n, const void *x, const void *y);
float dot_q4_k_scalar(int64_t n, const void *x, const void *y);
float dot_q5_k_scalar(int64_t n, const void *x, const void *y);
float dot_q6_k_scalar(int64_t n, const void *x, const void *y);

#if LOOM_X86_AVX2 && LOOM_X86_FMA
// As ggml's AVX2 kernels compute them, float order included (k_dot_avx2.cpp): the numbers
// llama.cpp's x86 backends give. Their order differs from the generic one.
float dot_q2_k_avx2(int64_t n, const void *x, const void *y);
float dot_q3_k_avx2(int64_t n, const void *x, const void *y);
float dot_q4_k_avx2(int64_t n, const void *x, const void *y);
float dot_q5_k_avx2(int64_t n, const void *x, const void *y);
float dot_q6_k_avx2(int64_t n, const void *x, const void *y);
#endif
#if LOOM_X86_AVX512VNNI && LOOM_X86_AVX512BW
// The same numbers as the AVX2 forms (the same integer lanes), a block's two halves per vector.
float dot_q2_k_avx512(int64_t n, const void *x, const void *y);
float dot_q3_k_avx512(int64_t n, const void *x, const void *y);
#endif

}  // namespace loom::quant::inline LOOM_ISA
