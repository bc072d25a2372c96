#pragma once
// The 4-bit GGUF formats whose codes index a fixed table of 16 values instead of standing for
// evenly spaced levels: MXFP4 (the OCP microscaling format: E2M1 values and a power-of-two block
// scale; gpt-oss's expert weights) and IQ4_NL / IQ4_XS (ggml's non-linear table, with an F16
// block scale or 6-bit sub-block scales). The structs are the file's bytes.
#include <cstdint>
#include <cstring>

#include "core/quant/legacy_formats.h"

namespace loom::quant {

inline constexpr int kLut4Block = 32;  // elements per MXFP4 / IQ4_NL block, per IQ4_XS sub-block

// E2M1's values (0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives) doubled, so that they are
// integers the integer dot products can use; the block scale is halved to match.
inline constexpr int8_t kValuesMxfp4[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};
// IQ4's non-linear levels (ggml's kvalues_iq4nl): denser near zero, where weights cluster.
inline constexpr int8_t kValuesIq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

// 2^(e - 128): half the E8M0 scale 2^(e - 127), for the doubled values. e = 0 and 1 give
// subnormal floats; 255 (E8M0's NaN) gives 2^127, as in ggml, which does not treat it apart.
inline float e8m0_half_to_f32(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : uint32_t(e - 1) << 23;
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// x = kValuesMxfp4[q] * 2^(e - 128); byte j holds element j (low nibble) and element j + 16
// (high nibble), as in Q4_0.
struct BlockMXFP4 {
    uint8_t e;  // E8M0 exponent
    uint8_t qs[kLut4Block / 2];
};
static_assert(sizeof(BlockMXFP4) == 17);

// Dequantization (ggml's dequantize_row_mxfp4) and the reference quantizer (quantize_row_mxfp4_ref,
// the bytes llama-quantize writes): e from the block's largest magnitude, then each element the
// code of the nearest value (the first of equally near ones).
void quantize_mxfp4(const float *x, void *y, int64_t n);
void dequantize_mxfp4(const void *x, float *y, int64_t n);

// Dot products with Q8_0 activations, n a multiple of 32. vec_dot_*: the order of ggml's AVX2
// kernel, which produced llama.cpp's reference numbers: per block, 8 lanes each hold the exact
// integer sum of 4 consecutive products; lane l of one of two accumulators (even blocks, odd
// blocks) becomes fma(d_x * d_y, sum_l, acc_l); the two are added lane by lane and the 8 lanes
// as a pairwise tree, then an odd last block is added as fma(d_x * d_y, its sum, total). AVX2
// where the build has it, the same arithmetic lane by lane otherwise. dot_*_generic: ggml's
// generic order (one float sum, block after block), the plain reference.
float vec_dot_mxfp4_q8_0(int64_t n, const void *x, const void *y);
float dot_mxfp4_q8_0_generic(int64_t n, const void *x, const void *y);

// out[c] = vec_dot(n, x, ys[c]) for c < n_cols <= kMaxDotColumns, bit for bit, each weight block
// decoded once for all the columns; null for other types.
DotColumns lut4_dot_columns(DType type);

}  // namespace loom::quant
