#pragma once
// The 4-bit GGUF formats whose codes index a fixed table of 16 values instead of standing for
// evenly spaced levels: MXFP4 (the OCP microscaling format: E2M1 values and a power-of-two block
// scale; gpt-oss's expert weights) and IQ4_NL / IQ4_XS (ggml's non-linear table, with an F16
// block scale or 6-bit sub-block scales). The structs are the file's bytes.
#include <cstdint>
#include <cstring>

#include "core/isa.h"
#include "core/quant/k_blocks.h"
#include "core/quant/legacy_formats.h"

namespace loom::quant::inline LOOM_ISA {

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

// x = d * kValuesIq4nl[q]; nibbles as MXFP4.
struct BlockIQ4NL {
    uint16_t d;  // F16
    uint8_t qs[kLut4Block / 2];
};
static_assert(sizeof(BlockIQ4NL) == 18);

// 8 sub-blocks of 32: x = d * (ls - 32) * kValuesIq4nl[q], with ls the 6-bit scale of sub-block
// ib: its low 4 bits in nibble ib % 2 of scales_l[ib / 2], its high 2 bits at bit 2 * ib of
// scales_h. Sub-block ib's codes are qs[16 ib .. 16 ib + 15], nibbles as MXFP4.
struct BlockIQ4XS {
    uint16_t d;  // F16
    uint16_t scales_h;
    uint8_t scales_l[QK_K / 64];
    uint8_t qs[QK_K / 2];
};
static_assert(sizeof(BlockIQ4XS) == 136);

// Sub-block ib's scale, ls - 32, in -32 .. 31.
inline int iq4xs_scale(const BlockIQ4XS &b, int ib) {
    const int low = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0x0f;
    const int high = (b.scales_h >> (2 * ib)) & 3;
    return (low | high << 4) - 32;
}

// Dequantization (ggml's dequantize_row_mxfp4) and the reference quantizer (quantize_row_mxfp4_ref,
// the bytes llama-quantize writes): e from the block's largest magnitude, then each element the
// code of the nearest value (the first of equally near ones).
void quantize_mxfp4(const float *x, void *y, int64_t n);
void dequantize_mxfp4(const void *x, float *y, int64_t n);

// IQ4_NL and IQ4_XS: dequantization (ggml's dequantize_row_iq4_*) and the quantizers that
// llama-quantize runs without an importance matrix (quantize_iq4_nl / quantize_iq4_xs through
// ggml_quantize_chunk): each 32-block's scale fitted by least squares over 15 trial scales, then
// for IQ4_XS the 8 scales expressed in 6 bits of the super-block's F16 scale.
void quantize_iq4_nl(const float *x, void *y, int64_t n);
// The IQ4_NL rows ggml's CPU backend writes in its ops (quantize_row_iq4_nl_ref: a KV cache row):
// the codes nearest to x at the scale that maps the block's signed largest value to the table's
// end (-127), then the least-squares scale for those codes, without the trials.
void quantize_row_iq4_nl(const float *x, void *y, int64_t n);
void dequantize_iq4_nl(const void *x, float *y, int64_t n);
void quantize_iq4_xs(const float *x, void *y, int64_t n);
void dequantize_iq4_xs(const void *x, float *y, int64_t n);

// Dot products with Q8_0 activations, n a multiple of 32. vec_dot_*: the order of ggml's AVX2
// kernel, which produced llama.cpp's reference numbers: per block, 8 lanes each hold the exact
// integer sum of 4 consecutive products; lane l of one of two accumulators (even blocks, odd
// blocks) becomes fma(d_x * d_y, sum_l, acc_l); the two are added lane by lane and the 8 lanes
// as a pairwise tree, then an odd last block is added as fma(d_x * d_y, its sum, total). AVX2
// where the build has it, the same arithmetic lane by lane otherwise. dot_*_generic: ggml's
// generic order (one float sum, block after block), the plain reference.
float vec_dot_mxfp4_q8_0(int64_t n, const void *x, const void *y);
float vec_dot_iq4_nl_q8_0(int64_t n, const void *x, const void *y);
float dot_mxfp4_q8_0_generic(int64_t n, const void *x, const void *y);
float dot_iq4_nl_q8_0_generic(int64_t n, const void *x, const void *y);

// IQ4_XS with Q8_K activations, n a multiple of 256. vec_dot: ggml's AVX2 order: per super-block,
// lane l of 8 holds the exact integer sum over the sub-blocks of ls - 32 times the products of
// their elements 4l .. 4l + 3, then acc_l = fma(d_x * d_y, sum_l, acc_l); the lanes are added as
// a pairwise tree at the end. generic: one float sum, sub-block after sub-block.
float vec_dot_iq4_xs_q8_k(int64_t n, const void *x, const void *y);
float dot_iq4_xs_q8_k_generic(int64_t n, const void *x, const void *y);

// out[c] = vec_dot(n, x, ys[c]) for c < n_cols <= kMaxDotColumns, bit for bit, each weight block
// decoded once for all the columns; null for other types.
DotColumns lut4_dot_columns(DType type);

}  // namespace loom::quant::inline LOOM_ISA
