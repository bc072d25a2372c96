// K-quant formats on random rows: round-trip error within each format's bound, dot products
// against a double reference, and the vector dot products against the plain ones.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "core/isa.h"
#include "core/quant/k_blocks.h"
#include "loom/fp16.h"
#include "loom/tensor.h"
#include "tests/quant/quant_test_util.h"

namespace loom {
namespace {

constexpr int64_t kRow = 4096;  // 16 super-blocks

using quant_test::dequantize;
using quant_test::normalized_rmse;
using quant_test::quantize;
using quant_test::random_row;

struct Bound {
    DType type;
    // Upper bound on the normalized RMSE of a standard normal row. A uniform quantizer with step
    // s has RMS error s / sqrt(12), and a group's step is its span over its levels - 1: e.g. Q4_K,
    // 32 normal values spanning about 4 sd over 15 steps, gives 0.077, and Q8_K, the largest of
    // 256 (about 3 sd) over 127, gives 0.0068. The bounds are 1.2x what the reference quantizers
    // measure on this row, so a wrong level, scale or packing (an error of a whole step or more
    // on some elements) fails them.
    double max_nrmse;
};

// Measured (seed 1): Q2_K 0.295, Q3_K 0.151, Q4_K 0.071, Q5_K 0.036, Q6_K 0.018, Q8_K 0.0068.
constexpr Bound kBounds[] = {
    {DType::Q2_K, 0.36},  {DType::Q3_K, 0.18},  {DType::Q4_K, 0.085},
    {DType::Q5_K, 0.043}, {DType::Q6_K, 0.022}, {DType::Q8_K, 0.0082},
};

class KQuant : public testing::TestWithParam<Bound> {};

TEST_P(KQuant, RoundTripErrorWithinBound) {
    const Bound b = GetParam();
    const auto x = random_row(kRow, 1);
    const auto y = dequantize(b.type, quantize(b.type, x), kRow);
    const double nrmse = normalized_rmse(x, y);
    EXPECT_LT(nrmse, b.max_nrmse) << dtype_name(b.type);
    // A quantizer that returned zeros would have error 1; one that kept every value exactly
    // would mean the round trip never ran.
    EXPECT_GT(nrmse, 0.0);
}

TEST_P(KQuant, ZeroAndConstantRowsRoundTrip) {
    const DType type = GetParam().type;
    const std::vector<float> zeros(kRow, 0.0f);
    for (float v : dequantize(type, quantize(type, zeros), kRow)) ASSERT_EQ(v, 0.0f);
    // Constant rows take the formats' edge paths (an all-positive group's min clamps to 0, an
    // all-negative one has max == min); 1% covers the F16 super-scales' rounding.
    for (const float c : {2.0f, -2.0f}) {
        const std::vector<float> constant(kRow, c);
        for (float v : dequantize(type, quantize(type, constant), kRow)) {
            ASSERT_NEAR(v, c, 0.02f) << dtype_name(type);
        }
    }
}

class KQuantDot : public testing::TestWithParam<DType> {};

// With AVX2 and FMA, vec_dot is ggml's AVX2 kernel (k_dot_order.cpp checks its order); otherwise
// the generic-order vector variant, which matches vec_dot_scalar bit for bit. A native build's
// target says which; a portable build's kernels are those of the level it chose (core/isa.h).
bool vec_dot_follows_ggml_avx2_order() {
#if defined(LOOM_PORTABLE)
    return isa::selected() != isa::Level::baseline;
#else
    return LOOM_X86_AVX2 && LOOM_X86_FMA;
#endif
}

// vec_dot of a K row with Q8_K activations equals the double dot of the two dequantized rows up to
// float accumulation: within 1e-5 of sum |a_i b_i| (relative to the magnitude of the terms, so a
// sum that cancels to near zero does not make the bound meaningless).
TEST_P(KQuantDot, VecDotMatchesDoubleDotOfDequantized) {
    const DType type = GetParam();
    const DTypeTraits &t = traits(type);
    ASSERT_EQ(t.vec_dot_type, DType::Q8_K);
    for (uint32_t seed = 0; seed < 8; ++seed) {
        const auto wq = quantize(type, random_row(kRow, 100 + seed));
        const auto aq = quantize(DType::Q8_K, random_row(kRow, 200 + seed));
        const auto w = dequantize(type, wq, kRow);
        const auto a = dequantize(DType::Q8_K, aq, kRow);
        double ref = 0, mag = 0;
        for (int64_t i = 0; i < kRow; ++i) {
            ref += double(w[size_t(i)]) * a[size_t(i)];
            mag += std::fabs(double(w[size_t(i)]) * a[size_t(i)]);
        }
        const float dot = t.vec_dot(kRow, wq.data(), aq.data());
        const float dot_scalar = t.vec_dot_scalar(kRow, wq.data(), aq.data());
        EXPECT_LE(std::fabs(dot - ref), 1e-5 * mag) << dtype_name(type) << " seed " << seed;
        EXPECT_LE(std::fabs(dot_scalar - ref), 1e-5 * mag) << dtype_name(type) << " seed " << seed;
        if (vec_dot_follows_ggml_avx2_order()) {
            // A different float order over the same exact integer sums: a few roundings apart.
            EXPECT_LE(std::fabs(dot - dot_scalar), 1e-6 * mag)
                << dtype_name(type) << " seed " << seed;
        } else {
            // Bitwise: both variants form the same exact integer sums per block and combine them
            // with the same float operations in the same order.
            EXPECT_EQ(dot, dot_scalar) << dtype_name(type) << " seed " << seed;
        }
    }
}

// The generic-order vector variants, which vec_dot is where the build lacks AVX2, checked on every
// build: bit for bit equal to the scalar reference (same integers, same float steps).
TEST(KQuantGenericDot, VectorVariantEqualsScalarBitwise) {
    struct Pair {
        DType type;
        float (*vector)(int64_t, const void *, const void *);
        float (*scalar)(int64_t, const void *, const void *);
    };
    const Pair pairs[] = {
        {DType::Q2_K, quant::dot_q2_k, quant::dot_q2_k_scalar},
        {DType::Q3_K, quant::dot_q3_k, quant::dot_q3_k_scalar},
        {DType::Q4_K, quant::dot_q4_k, quant::dot_q4_k_scalar},
        {DType::Q5_K, quant::dot_q5_k, quant::dot_q5_k_scalar},
        {DType::Q6_K, quant::dot_q6_k, quant::dot_q6_k_scalar},
    };
    for (const Pair &p : pairs) {
        for (uint32_t seed = 0; seed < 4; ++seed) {
            const auto w = quantize(p.type, random_row(kRow, 400 + seed));
            const auto a = quantize(DType::Q8_K, random_row(kRow, 500 + seed));
            EXPECT_EQ(p.vector(kRow, w.data(), a.data()), p.scalar(kRow, w.data(), a.data()))
                << dtype_name(p.type) << " seed " << seed;
        }
    }
}

#if LOOM_X86_AVX512VNNI && LOOM_X86_AVX512BW && LOOM_X86_FMA
// The AVX-512 forms of the Q2_K and Q3_K kernels against the AVX2 ones, bit for bit, on blocks
// of random bytes (every scale, level and high bit pattern, activations up to +-128) as well as
// on quantized rows.
TEST(KQuantAvx512Dot, EqualsAvx2Bitwise) {
    struct Pair {
        DType type;
        float (*avx512)(int64_t, const void *, const void *);
        float (*avx2)(int64_t, const void *, const void *);
        size_t block_bytes;
    };
    const Pair pairs[] = {
        {DType::Q2_K, quant::dot_q2_k_avx512, quant::dot_q2_k_avx2, sizeof(quant::BlockQ2K)},
        {DType::Q3_K, quant::dot_q3_k_avx512, quant::dot_q3_k_avx2, sizeof(quant::BlockQ3K)},
    };
    constexpr int64_t kBlocks = kRow / quant::QK_K;
    std::mt19937 rng(7);
    for (const Pair &p : pairs) {
        for (uint32_t seed = 0; seed < 4; ++seed) {
            const auto w = quantize(p.type, random_row(kRow, 600 + seed));
            const auto a = quantize(DType::Q8_K, random_row(kRow, 700 + seed));
            EXPECT_EQ(p.avx512(kRow, w.data(), a.data()), p.avx2(kRow, w.data(), a.data()))
                << dtype_name(p.type) << " seed " << seed;
        }
        for (int trial = 0; trial < 16; ++trial) {
            std::vector<uint8_t> w(p.block_bytes * kBlocks);
            for (uint8_t &byte : w) byte = uint8_t(rng());
            std::vector<quant::BlockQ8K> a(kBlocks);
            for (int64_t b = 0; b < kBlocks; ++b) {
                // finite F16 super-scales (the last 2 or 4 bytes of both block types)
                const uint16_t d = f32_to_fp16(float(rng() % 1000) / 997.0f - 0.5f);
                std::memcpy(w.data() + size_t(b + 1) * p.block_bytes - 2, &d, 2);
                if (p.type == DType::Q2_K)
                    std::memcpy(w.data() + size_t(b + 1) * p.block_bytes - 4, &d, 2);
                a[size_t(b)].d = float(rng() % 1000) / 1000.0f;
                for (int8_t &q : a[size_t(b)].qs) q = int8_t(rng());
                for (int j = 0; j < quant::QK_K / 16; ++j) {
                    int sum = 0;
                    for (int i = 0; i < 16; ++i) sum += a[size_t(b)].qs[16 * j + i];
                    a[size_t(b)].bsums[j] = int16_t(sum);
                }
            }
            EXPECT_EQ(p.avx512(kRow, w.data(), a.data()), p.avx2(kRow, w.data(), a.data()))
                << dtype_name(p.type) << " trial " << trial;
        }
    }
}
#endif

INSTANTIATE_TEST_SUITE_P(Formats, KQuant, testing::ValuesIn(kBounds),
                         [](const auto &info) { return std::string(dtype_name(info.param.type)); });
INSTANTIATE_TEST_SUITE_P(Formats, KQuantDot,
                         testing::Values(DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K,
                                         DType::Q6_K),
                         [](const auto &info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace loom
