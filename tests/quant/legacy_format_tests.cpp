// The legacy block formats: layout facts, quantize -> dequantize error, and the dot products
// against exact references and against each other.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/quant/legacy_formats.h"
#include "loom/fp16.h"
#include "tests/quant/quant_test_util.h"

namespace loom {
namespace {

using quant_test::dequantize;
using quant_test::quantize;
using quant_test::random_row;
using quant_test::round_trip_nrmse;

const DType kWeightTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0};

TEST(LegacyFormats, TraitsRows) {
    for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q8_1}) {
        SCOPED_TRACE(dtype_name(t));
        EXPECT_TRUE(traits(t).is_quantized);
        EXPECT_EQ(traits(t).block_size, 32);
        EXPECT_NE(traits(t).to_float, nullptr);
        EXPECT_NE(traits(t).from_float, nullptr);
    }
    // ggml's pairings: Q8_1 carries the block sums the formats with a minimum need.
    EXPECT_EQ(traits(DType::Q4_0).vec_dot_type, DType::Q8_0);
    EXPECT_EQ(traits(DType::Q5_0).vec_dot_type, DType::Q8_0);
    EXPECT_EQ(traits(DType::Q8_0).vec_dot_type, DType::Q8_0);
    EXPECT_EQ(traits(DType::Q4_1).vec_dot_type, DType::Q8_1);
    EXPECT_EQ(traits(DType::Q5_1).vec_dot_type, DType::Q8_1);
    for (DType t : kWeightTypes) {
        EXPECT_NE(traits(t).vec_dot, nullptr) << dtype_name(t);
        EXPECT_NE(traits(t).vec_dot_scalar, nullptr) << dtype_name(t);
    }
}

// Hand-made blocks decode as the format says.
TEST(LegacyFormats, DecodesKnownBlocks) {
    quant::BlockQ4_0 q4{};
    q4.d = f32_to_fp16(0.5f);
    q4.qs[0] = 0x1f;  // element 0: 15 - 8 = 7, element 16: 1 - 8 = -7
    std::vector<float> out(32);
    traits(DType::Q4_0).to_float(&q4, out.data(), 32);
    EXPECT_EQ(out[0], 3.5f);
    EXPECT_EQ(out[16], -3.5f);
    EXPECT_EQ(out[1], -4.0f);

    quant::BlockQ5_1 q5{};
    q5.d = f32_to_fp16(0.25f);
    q5.m = f32_to_fp16(-1.0f);
    q5.qs[3] = 0x2f;  // element 3: 15, element 19: 2
    q5.qh[2] = 0x08;  // bit 19: element 19 gets 16 more
    traits(DType::Q5_1).to_float(&q5, out.data(), 32);
    EXPECT_EQ(out[3], 15 * 0.25f - 1.0f);
    EXPECT_EQ(out[19], 18 * 0.25f - 1.0f);
    EXPECT_EQ(out[0], -1.0f);
}

// Error of quantize -> dequantize on N(0, 1) rows, relative to the rows' RMS. A rounding
// quantizer with step D errs by D / sqrt(12) RMS; a block of 32 normal values has |x| <= ~2.1 on
// average, range ~4.1, so D is about 2.1 / 8 (Q4_0), 4.1 / 15 (Q4_1), 2.1 / 16 (Q5_0), 4.1 / 31
// (Q5_1), 2.1 / 127 (Q8_0): bounds ~0.075, 0.079, 0.038, 0.038, 0.0048. The limits leave ~25 %.
TEST(LegacyFormats, RoundTripError) {
    const struct {
        DType type;
        double max_nrmse;
    } cases[] = {{DType::Q4_0, 0.10}, {DType::Q4_1, 0.10},  {DType::Q5_0, 0.05},
                 {DType::Q5_1, 0.05}, {DType::Q8_0, 0.006}, {DType::Q8_1, 0.006}};
    for (const auto &c : cases) {
        const double e = round_trip_nrmse(c.type);
        EXPECT_LT(e, c.max_nrmse) << dtype_name(c.type);
        EXPECT_GT(e, c.max_nrmse / 4) << dtype_name(c.type);  // a lossless result would be a bug
    }
}

// A zero block stays zero (the scale's inverse is taken as 0, not inf).
TEST(LegacyFormats, ZeroBlocks) {
    const std::vector<float> zeros(64, 0.0f);
    for (DType t : kWeightTypes) {
        for (float v : dequantize(t, quantize(t, zeros), 64)) EXPECT_EQ(v, 0.0f) << dtype_name(t);
    }
}

// The activation quantizers round ties to even and scale by 127 / amax: with amax 127 the
// scale is 1, so halves show the rounding (the reference quantizer rounds them away from zero).
TEST(LegacyFormats, ActivationQuantizersRoundTiesToEven) {
    std::vector<float> x(32, 0.0f);
    x[0] = 127.0f;
    x[1] = 2.5f;
    x[2] = -2.5f;
    x[3] = 3.5f;
    quant::BlockQ8_1 q1;
    quant::quantize_activations_q8_1(x.data(), &q1, 32);
    EXPECT_EQ(fp16_to_f32(q1.d), 1.0f);
    EXPECT_EQ(q1.qs[1], 2);
    EXPECT_EQ(q1.qs[2], -2);
    EXPECT_EQ(q1.qs[3], 4);
    EXPECT_EQ(fp16_to_f32(q1.s), 127.0f + 2 - 2 + 4);
    quant::BlockQ8_0 q0;
    quant::quantize_activations_q8_0(x.data(), &q0, 32);
    EXPECT_EQ(std::memcmp(q0.qs, q1.qs, 32), 0);
    const auto ref = quantize(DType::Q8_0, x);
    EXPECT_EQ(static_cast<int8_t>(ref[2 + 1]), 3);  // qs[1]: the reference rounds 2.5 up
    // Elsewhere the two agree but for the rare value next to a half.
    const std::vector<float> y = random_row(32 * 64, 9);
    const auto r = quantize(DType::Q8_0, y);
    std::vector<quant::BlockQ8_0> a(64);
    quant::quantize_activations_q8_0(y.data(), a.data(), 32 * 64);
    int differ = 0;
    for (int b = 0; b < 64; ++b) {
        for (int j = 0; j < 32; ++j) {
            const int diff = a[b].qs[j] - static_cast<int8_t>(r[b * 34 + 2 + j]);
            EXPECT_LE(std::abs(diff), 1);
            differ += diff != 0;
        }
    }
    EXPECT_LE(differ, 4);
}

// The weight block's minimum, or 0 for the symmetric formats.
float block_min(DType type, const std::byte *block) {
    if (type != DType::Q4_1 && type != DType::Q5_1) return 0.0f;
    uint16_t m;
    std::memcpy(&m, block + 2, sizeof m);  // {d, m, ...}
    return fp16_to_f32(m);
}

struct Reference {
    double dot = 0.0;
    double magnitude = 0.0;  // sum of |terms|: the scale rounding errors are relative to
};

// The exact dot the formats define: sum_b (d_x d_y sum_j q_x q_y + m_x s_y). Each dequantized
// value is exact in float (a small integer times an F16 scale), so the sums in double are exact
// but for the last bits. The activations' sums enter through s, as the kernels use them.
Reference reference_dot(DType type, const std::vector<std::byte> &qx,
                        const std::vector<std::byte> &qy, int64_t n) {
    const DType act = traits(type).vec_dot_type;
    const std::vector<float> y = dequantize(act, qy, n);
    std::vector<std::byte> qx_no_min = qx;
    const size_t bx = traits(type).type_size, by = traits(act).type_size;
    Reference r;
    for (int64_t b = 0; b < n / 32; ++b) {
        const float m = block_min(type, qx.data() + b * bx);
        if (m != 0.0f) {
            std::memset(qx_no_min.data() + b * bx + 2, 0, 2);
            uint16_t s;
            std::memcpy(&s, qy.data() + b * by + 2, sizeof s);  // Q8_1 {d, s, ...}
            r.dot += double(m) * fp16_to_f32(s);
            r.magnitude += std::fabs(double(m) * fp16_to_f32(s));
        }
    }
    const std::vector<float> x = dequantize(type, qx_no_min, n);
    for (int64_t i = 0; i < n; ++i) {
        r.dot += double(x[i]) * y[i];
        r.magnitude += std::fabs(double(x[i]) * y[i]);
    }
    return r;
}

TEST(LegacyFormats, DotProductsMatchExactReference) {
    for (DType t : kWeightTypes) {
        for (int64_t n : {32, 96, 224, 4096, 4096 + 160}) {
            SCOPED_TRACE(::testing::Message() << dtype_name(t) << " n=" << n);
            const DType act = traits(t).vec_dot_type;
            const auto qx = quantize(t, random_row(n, uint32_t(n)));
            const auto qy = quantize(act, random_row(n, uint32_t(n) + 1));
            const Reference r = reference_dot(t, qx, qy, n);
            const double simd = traits(t).vec_dot(n, qx.data(), qy.data());
            const double scalar = traits(t).vec_dot_scalar(n, qx.data(), qy.data());
            EXPECT_NEAR(simd, r.dot, 1e-5 * r.magnitude);
            EXPECT_NEAR(scalar, r.dot, 1e-5 * r.magnitude);
            // Not bitwise: vec_dot adds in ggml's AVX2 order (8 lanes, FMA), vec_dot_scalar in
            // ggml's generic order (one sum, block by block). Each is within a few float
            // roundings of the exact sum over at most 135 blocks, far inside 1e-6 of |terms|.
            EXPECT_NEAR(simd, scalar, 1e-6 * r.magnitude);
        }
    }
}

// The column-group kernel mul_mat uses gives each column vec_dot's bits.
TEST(LegacyFormats, ColumnGroupsMatchVecDotBitwise) {
    const int64_t n = 32 * 19;
    for (DType t : kWeightTypes) {
        const quant::DotColumns dot_columns = quant::legacy_dot_columns(t);
        ASSERT_NE(dot_columns, nullptr) << dtype_name(t);
        const auto qx = quantize(t, random_row(n, 21));
        std::vector<std::vector<std::byte>> qy;
        const void *ys[quant::kMaxDotColumns];
        for (int c = 0; c < quant::kMaxDotColumns; ++c) {
            qy.push_back(quantize(traits(t).vec_dot_type, random_row(n, uint32_t(30 + c))));
        }
        for (int c = 0; c < quant::kMaxDotColumns; ++c) ys[c] = qy[size_t(c)].data();
        for (int n_cols = 1; n_cols <= quant::kMaxDotColumns; ++n_cols) {
            float out[quant::kMaxDotColumns];
            dot_columns(n, qx.data(), ys, n_cols, out);
            for (int c = 0; c < n_cols; ++c) {
                EXPECT_EQ(out[c], traits(t).vec_dot(n, qx.data(), ys[c]))
                    << dtype_name(t) << " column " << c << " of " << n_cols;
            }
        }
    }
    EXPECT_EQ(quant::legacy_dot_columns(DType::F32), nullptr);
}

// The grid attention uses for quantized keys gives each (row, column) vec_dot's bits: an odd
// number of rows (the last one alone in its vector), rows anywhere in memory, every column count,
// and rows of more blocks than the grid holds decoded (row after row then).
TEST(LegacyFormats, GridsMatchVecDotBitwise) {
    constexpr int64_t kRows = 7;
    for (const int64_t n : {int64_t(64), int64_t(32 * 5), int64_t(32 * 17)}) {
        for (DType t : kWeightTypes) {
            const quant::DotGrid grid = quant::legacy_dot_grid(t);
            ASSERT_NE(grid, nullptr) << dtype_name(t);
            std::vector<std::vector<std::byte>> qx, qy;
            const void *xs[kRows], *ys[quant::kMaxDotColumns];
            for (int64_t r = 0; r < kRows; ++r)
                qx.push_back(quantize(t, random_row(n, uint32_t(50 + r))));
            for (int64_t r = 0; r < kRows; ++r) xs[r] = qx[size_t(kRows - 1 - r)].data();
            for (int c = 0; c < quant::kMaxDotColumns; ++c) {
                qy.push_back(quantize(traits(t).vec_dot_type, random_row(n, uint32_t(70 + c))));
                ys[c] = qy.back().data();
            }
            for (int n_cols = 1; n_cols <= quant::kMaxDotColumns; ++n_cols) {
                float out[quant::kMaxDotColumns][kRows];
                float *outs[quant::kMaxDotColumns];
                for (int c = 0; c < n_cols; ++c) outs[c] = out[c];
                grid(n, xs, kRows, ys, n_cols, outs);
                for (int c = 0; c < n_cols; ++c) {
                    for (int64_t r = 0; r < kRows; ++r) {
                        EXPECT_EQ(out[c][r], traits(t).vec_dot(n, xs[r], ys[c]))
                            << dtype_name(t) << " n " << n << " row " << r << " column " << c
                            << " of " << n_cols;
                    }
                }
            }
        }
    }
    EXPECT_EQ(quant::legacy_dot_grid(DType::IQ4_NL), nullptr);
}

// vec_dot's result does not depend on how the build vectorises: recomputed here in the order
// legacy_formats.h documents, from the integer lane sums, with std::fma.
TEST(LegacyFormats, DotProductFollowsGgmlLaneOrder) {
    const int64_t n = 32 * 37;
    const DType t = DType::Q8_0;
    const auto qx = quantize(t, random_row(n, 11));
    const auto qy = quantize(t, random_row(n, 12));
    const auto *x = reinterpret_cast<const quant::BlockQ8_0 *>(qx.data());
    const auto *y = reinterpret_cast<const quant::BlockQ8_0 *>(qy.data());
    float acc[8] = {};
    for (int64_t b = 0; b < n / 32; ++b) {
        const float scale = fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d);
        for (int l = 0; l < 8; ++l) {
            int sum = 0;
            for (int j = 4 * l; j < 4 * l + 4; ++j) sum += x[b].qs[j] * y[b].qs[j];
            acc[l] = std::fma(scale, float(sum), acc[l]);
        }
    }
    const float expected =
        ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    EXPECT_EQ(traits(t).vec_dot(n, qx.data(), qy.data()), expected);
}

}  // namespace
}  // namespace loom
