// The AVX2 K-quant dot products sum in the float order of ggml's AVX2 kernels, which
// llama.cpp's x86 backends run: checked bit for bit against a plain emulation of that order.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/quant/k_blocks.h"
#include "loom/fp16.h"
#include "loom/tensor.h"
#include "tests/quant/k_levels.h"
#include "tests/quant/quant_test_util.h"

#if LOOM_X86_AVX2 && LOOM_X86_FMA

namespace loom {
namespace {

using quant_test::q2_k_level;
using quant_test::q2_k_min;
using quant_test::q2_k_scale;
using quant_test::q3_k_level;
using quant_test::q3_k_scale;

using quant::BlockQ2K;
using quant::BlockQ3K;
using quant::BlockQ4K;
using quant::BlockQ5K;
using quant::BlockQ6K;
using quant::BlockQ8K;
using quant::QK_K;

constexpr int64_t kRow = 4096;

// ggml's hsum_float_8: lanes k and k + 4, then (0 + 2) + (1 + 3).
float hsum_float_8(const float *a) {
    const float r0 = a[0] + a[4], r1 = a[1] + a[5], r2 = a[2] + a[6], r3 = a[3] + a[7];
    return (r0 + r2) + (r1 + r3);
}

// Lane k of a block takes elements i with (i % 32) / 4 == k (bytes 4k..4k+3 of each 32-byte
// chunk), each q * q8 times its scale.
int lane_of(int i) {
    return (i % 32) / 4;
}

// Q4_K (no qh) and Q5_K. Q4_K keeps its min terms in 4 float lanes, two sub-blocks each; Q5_K in
// one float, fused per block.
template <typename Block>
float emulate_q4_q5_k(const Block *x, const BlockQ8K *y, int64_t nb) {
    constexpr bool q5 = std::is_same_v<Block, BlockQ5K>;
    float acc[8] = {}, acc_mins[4] = {}, sum_mins = 0;
    for (int64_t b = 0; b < nb; ++b) {
        const float d = y[b].d * fp16_to_f32(x[b].d);
        const float dmin = -y[b].d * fp16_to_f32(x[b].dmin);
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; ++j) quant::scale_min_k4(j, x[b].scales, sc[j], m[j]);
        int mins_total = 0;
        for (int k = 0; k < 4; ++k) {
            const int s0 = y[b].bsums[4 * k] + y[b].bsums[4 * k + 1];
            const int s1 = y[b].bsums[4 * k + 2] + y[b].bsums[4 * k + 3];
            acc_mins[k] = std::fma(dmin, float(m[2 * k] * s0 + m[2 * k + 1] * s1), acc_mins[k]);
            mins_total += m[2 * k] * s0 + m[2 * k + 1] * s1;
        }
        sum_mins = std::fma(dmin, float(mins_total), sum_mins);
        int32_t lanes[8] = {};
        if constexpr (std::is_same_v<Block, BlockQ6K>) {
            for (int k = 0; k < 8; ++k) {
                lanes[k] = -32 * (scale(x[b], 2 * k) * y[b].bsums[2 * k] +
                                  scale(x[b], 2 * k + 1) * y[b].bsums[2 * k + 1]);
            }
        }
        for (int i = 0; i < QK_K; ++i) {
            const uint8_t byte = x[b].qs[32 * (i / 64) + i % 32];
            int q = (i % 64) < 32 ? byte & 0xF : byte >> 4;
            if constexpr (q5) q |= ((x[b].qh[i % 32] >> (i / 32)) & 1) << 4;
            lanes[lane_of(i)] += sc[i / 32] * q * y[b].qs[i];
        }
        for (int k = 0; k < 8; ++k) acc[k] = std::fma(d, float(lanes[k]), acc[k]);
    }
    if constexpr (q5) return hsum_float_8(acc) + sum_mins;
    return hsum_float_8(acc) + ((acc_mins[0] + acc_mins[2]) + (acc_mins[1] + acc_mins[3]));
}

// Q2_K, Q3_K and Q6_K: a scale per 16 elements. Q2_K adds its min terms to the same 8 lanes first
// (lane k: sub-blocks 2k and 2k + 1). Q6_K multiplies its unsigned levels (q + 32) and starts
// lane k at -32 * (sc[2k] * bsum[2k] + sc[2k + 1] * bsum[2k + 1]), as ggml's AVX2 kernel does.
template <typename Block>
float emulate_16(const Block *x, const BlockQ8K *y, int64_t nb, int (*level)(const Block &, int),
                 int (*scale)(const Block &, int)) {
    float acc[8] = {};
    for (int64_t b = 0; b < nb; ++b) {
        const float d = y[b].d * fp16_to_f32(x[b].d);
        if constexpr (std::is_same_v<Block, BlockQ2K>) {
            const float dm = -y[b].d * fp16_to_f32(x[b].dmin);
            for (int k = 0; k < 8; ++k) {
                const int m0 = q2_k_min(x[b], 2 * k), m1 = q2_k_min(x[b], 2 * k + 1);
                const int products = m0 * y[b].bsums[2 * k] + m1 * y[b].bsums[2 * k + 1];
                acc[k] = std::fma(dm, float(products), acc[k]);
            }
        }
        int32_t lanes[8] = {};
        if constexpr (std::is_same_v<Block, BlockQ6K>) {
            for (int k = 0; k < 8; ++k) {
                lanes[k] = -32 * (scale(x[b], 2 * k) * y[b].bsums[2 * k] +
                                  scale(x[b], 2 * k + 1) * y[b].bsums[2 * k + 1]);
            }
        }
        for (int i = 0; i < QK_K; ++i) {
            lanes[lane_of(i)] += scale(x[b], i / 16) * level(x[b], i) * y[b].qs[i];
        }
        for (int k = 0; k < 8; ++k) acc[k] = std::fma(d, float(lanes[k]), acc[k]);
    }
    return hsum_float_8(acc);
}

int q6_k_level(const BlockQ6K &x, int i) {
    const int half = i / 128, quarter = (i % 128) / 32, l = i % 32;
    const uint8_t ql = x.ql[64 * half + 32 * (quarter % 2) + l];
    const int low = quarter < 2 ? ql & 0xF : ql >> 4;
    return low | (((x.qh[32 * half + l] >> (2 * quarter)) & 3) << 4);  // q + 32
}
int q6_k_scale(const BlockQ6K &x, int j) {
    return x.scales[j];
}

template <typename Block>
const Block *blocks(const std::vector<std::byte> &q) {
    return reinterpret_cast<const Block *>(q.data());
}

TEST(KQuantDotOrder, Avx2KernelsFollowGgmlFloatOrder) {
    constexpr int64_t nb = kRow / QK_K;
    for (uint32_t seed = 0; seed < 16; ++seed) {
        const auto a = quant_test::quantize(DType::Q8_K, quant_test::random_row(kRow, 300 + seed));
        const auto *y = blocks<BlockQ8K>(a);
        const auto row = quant_test::random_row(kRow, seed);
        std::vector<std::byte> w[5];
        const DType types[5] = {DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K};
        float dots[5];
        for (int t = 0; t < 5; ++t) {
            w[t] = quant_test::quantize(types[t], row);
            dots[t] = traits(types[t]).vec_dot(kRow, w[t].data(), a.data());
        }
        EXPECT_EQ(dots[0], emulate_16(blocks<BlockQ2K>(w[0]), y, nb, q2_k_level, q2_k_scale))
            << "Q2_K seed " << seed;
        EXPECT_EQ(dots[1], emulate_16(blocks<BlockQ3K>(w[1]), y, nb, q3_k_level, q3_k_scale))
            << "Q3_K seed " << seed;
        EXPECT_EQ(dots[2], emulate_q4_q5_k(blocks<BlockQ4K>(w[2]), y, nb)) << "Q4_K seed " << seed;
        EXPECT_EQ(dots[3], emulate_q4_q5_k(blocks<BlockQ5K>(w[3]), y, nb)) << "Q5_K seed " << seed;
        EXPECT_EQ(dots[4], emulate_16(blocks<BlockQ6K>(w[4]), y, nb, q6_k_level, q6_k_scale))
            << "Q6_K seed " << seed;
    }
}

}  // namespace
}  // namespace loom

#endif
