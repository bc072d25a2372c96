// The table-indexed 4-bit formats on their own: traits rows, hand-made blocks, round-trip error,
// dot products against an exact reference, and the float order of vec_dot recomputed in plain
// code (llama.cpp's own numbers are in lut4_reference_tests.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/quant/lut4_formats.h"
#include "loom/fp16.h"
#include "loom/tensor.h"
#include "tests/quant/quant_test_util.h"

namespace loom {
namespace {

using quant_test::dequantize;
using quant_test::quantize;
using quant_test::random_row;
using quant_test::round_trip_nrmse;

const DType kTypes[] = {DType::MXFP4, DType::IQ4_NL, DType::IQ4_XS};

TEST(Lut4Formats, TraitsRows) {
    for (DType t : kTypes) {
        SCOPED_TRACE(dtype_name(t));
        EXPECT_TRUE(traits(t).is_quantized);
        EXPECT_NE(traits(t).to_float, nullptr);
        EXPECT_NE(traits(t).from_float, nullptr);
        EXPECT_NE(traits(t).vec_dot, nullptr);
        EXPECT_NE(traits(t).vec_dot_scalar, nullptr);
    }
    EXPECT_EQ(traits(DType::MXFP4).gguf_id, 39u);
    EXPECT_EQ(traits(DType::MXFP4).block_size, 32);
    EXPECT_EQ(traits(DType::MXFP4).type_size, 17u);
    EXPECT_EQ(traits(DType::MXFP4).vec_dot_type, DType::Q8_0);  // ggml's pairings
    EXPECT_EQ(traits(DType::IQ4_NL).gguf_id, 20u);
    EXPECT_EQ(traits(DType::IQ4_NL).block_size, 32);
    EXPECT_EQ(traits(DType::IQ4_NL).type_size, 18u);
    EXPECT_EQ(traits(DType::IQ4_NL).vec_dot_type, DType::Q8_0);
    EXPECT_EQ(traits(DType::IQ4_XS).gguf_id, 23u);
    EXPECT_EQ(traits(DType::IQ4_XS).block_size, 256);
    EXPECT_EQ(traits(DType::IQ4_XS).type_size, 136u);
    EXPECT_EQ(traits(DType::IQ4_XS).vec_dot_type, DType::Q8_K);
}

// E8M0 halved: 2^(e - 128), subnormal below e = 2.
TEST(Lut4Formats, E8m0Scales) {
    EXPECT_EQ(quant::e8m0_half_to_f32(128), 1.0f);
    EXPECT_EQ(quant::e8m0_half_to_f32(130), 4.0f);
    EXPECT_EQ(quant::e8m0_half_to_f32(2), 0x1p-126f);
    EXPECT_EQ(quant::e8m0_half_to_f32(1), 0x1p-127f);
    EXPECT_EQ(quant::e8m0_half_to_f32(0), 0x1p-128f);
    EXPECT_EQ(quant::e8m0_half_to_f32(255), 0x1p127f);
}

// Hand-made blocks decode as the format says.
TEST(Lut4Formats, DecodesKnownBlocks) {
    quant::BlockMXFP4 mx{};
    mx.e = 126;       // E8M0 2^-1, so the E2M1 values are halved
    mx.qs[0] = 0xf7;  // element 0: code 7 = 6.0, element 16: code 15 = -6.0
    mx.qs[2] = 0x08;  // element 2: code 8 = -0.0, which the integer table holds as 0
    std::vector<float> out(32);
    traits(DType::MXFP4).to_float(&mx, out.data(), 32);
    EXPECT_EQ(out[0], 3.0f);
    EXPECT_EQ(out[16], -3.0f);
    EXPECT_EQ(out[1], 0.0f);
    EXPECT_TRUE(out[2] == 0.0f && !std::signbit(out[2]));

    quant::BlockIQ4NL nl{};
    nl.d = f32_to_fp16(0.5f);
    nl.qs[0] = 0x0f;  // element 0: code 15 = 113, element 16: code 0 = -127
    nl.qs[1] = 0x88;  // elements 1 and 17: code 8 = 1
    traits(DType::IQ4_NL).to_float(&nl, out.data(), 32);
    EXPECT_EQ(out[0], 56.5f);
    EXPECT_EQ(out[16], -63.5f);
    EXPECT_EQ(out[17], 0.5f);

    quant::BlockIQ4XS xs{};
    xs.d = f32_to_fp16(0.125f);
    xs.scales_l[1] = 0x50;  // sub-block 3's scale: low bits 5 (high nibble of scales_l[1]),
    xs.scales_h = 2 << 6;   // high bits 2 (bits 6-7): ls = 37, scale 37 - 32 = 5
    xs.qs[48] = 0xf8;       // sub-block 3's element 0: code 8 = 1, element 16: code 15 = 113
    std::vector<float> out256(256);
    traits(DType::IQ4_XS).to_float(&xs, out256.data(), 256);
    EXPECT_EQ(quant::iq4xs_scale(xs, 3), 5);
    EXPECT_EQ(out256[96], 0.625f);
    EXPECT_EQ(out256[112], 113 * 0.625f);
    EXPECT_EQ(out256[0], -0.125f * 32 * -127);  // sub-block 0: ls = 0, scale -32, code 0
}

// Values on the E2M1 grid come back exactly: the scale is the largest magnitude's binade, less
// the 2 that puts 6 = 1.5 * 2^2 at its top.
TEST(Lut4Formats, Mxfp4GridValuesAreExact) {
    const float grid[] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
    for (float scale : {1.0f, 0x1p-20f, 0x1p30f}) {
        std::vector<float> x(32);
        for (int j = 0; j < 32; ++j) x[size_t(j)] = (j % 2 ? -1.0f : 1.0f) * grid[j % 8] * scale;
        const auto q = quantize(DType::MXFP4, x);
        EXPECT_EQ(dequantize(DType::MXFP4, q, 32), x) << scale;
        const auto &block = *reinterpret_cast<const quant::BlockMXFP4 *>(q.data());
        EXPECT_EQ(quant::e8m0_half_to_f32(block.e) * 12.0f, 6.0f * scale);
    }
}

// Error of quantize -> dequantize on N(0, 1) rows, relative to the rows' RMS. MXFP4's levels
// are a block's largest magnitude's binade split as 0, 1/8 ... 3/4 of 2^(k + 1) (E2M1): relative
// steps up to 1/3 with the largest values quantized coarsely: 0.114 measured. IQ4's 16 levels are
// spaced for a bell-shaped block and its scale is fitted by least squares: 0.075 measured, near
// Q4_0's 0.075 bound for evenly spaced levels (legacy_format_tests.cpp).
TEST(Lut4Formats, RoundTripError) {
    const struct {
        DType type;
        double max_nrmse;
    } cases[] = {{DType::MXFP4, 0.16}, {DType::IQ4_NL, 0.10}, {DType::IQ4_XS, 0.10}};
    for (const auto &c : cases) {
        const double e = round_trip_nrmse(c.type);
        EXPECT_LT(e, c.max_nrmse) << dtype_name(c.type);
        EXPECT_GT(e, c.max_nrmse / 4) << dtype_name(c.type);  // a lossless result would be a bug
    }
}

TEST(Lut4Formats, ZeroBlocks) {
    const std::vector<float> zeros(256, 0.0f);
    for (DType t : kTypes) {
        for (float v : dequantize(t, quantize(t, zeros), 256)) EXPECT_EQ(v, 0.0f) << dtype_name(t);
    }
}

// The exact dot the formats define, sum_j x_j y_j over the dequantized rows (each value a small
// integer times a power of two or an F16 scale: the double sums are exact but for the last bits),
// and the sum of |terms| that float rounding errors are relative to.
struct Reference {
    double dot = 0.0, magnitude = 0.0;
};
Reference reference_dot(DType type, const std::vector<std::byte> &qx,
                        const std::vector<std::byte> &qy, int64_t n) {
    const std::vector<float> x = dequantize(type, qx, n);
    const std::vector<float> y = dequantize(traits(type).vec_dot_type, qy, n);
    Reference r;
    for (int64_t i = 0; i < n; ++i) {
        r.dot += double(x[size_t(i)]) * y[size_t(i)];
        r.magnitude += std::fabs(double(x[size_t(i)]) * y[size_t(i)]);
    }
    return r;
}

TEST(Lut4Formats, DotProductsMatchExactReference) {
    for (DType t : kTypes) {
        const int64_t bs = traits(t).block_size;
        for (int64_t n : {bs, 3 * bs, 7 * bs, int64_t(4096), 4096 + 5 * bs}) {
            SCOPED_TRACE(::testing::Message() << dtype_name(t) << " n=" << n);
            const auto qx = quantize(t, random_row(n, uint32_t(n)));
            const auto qy = quantize(traits(t).vec_dot_type, random_row(n, uint32_t(n) + 1));
            const Reference r = reference_dot(t, qx, qy, n);
            const double simd = traits(t).vec_dot(n, qx.data(), qy.data());
            const double scalar = traits(t).vec_dot_scalar(n, qx.data(), qy.data());
            EXPECT_NEAR(simd, r.dot, 1e-5 * r.magnitude);
            EXPECT_NEAR(scalar, r.dot, 1e-5 * r.magnitude);
            EXPECT_NEAR(simd, scalar, 1e-6 * r.magnitude);  // two float orders, not bitwise
        }
    }
}

// The column-group kernel mul_mat uses gives each column vec_dot's bits.
TEST(Lut4Formats, ColumnGroupsMatchVecDotBitwise) {
    for (DType t : kTypes) {
        const int64_t n = traits(t).block_size * 19;
        const quant::DotColumns dot_columns = quant::lut4_dot_columns(t);
        ASSERT_NE(dot_columns, nullptr) << dtype_name(t);
        const auto qx = quantize(t, random_row(n, 21));
        std::vector<std::vector<std::byte>> qy;
        const void *ys[quant::kMaxDotColumns];
        for (int c = 0; c < quant::kMaxDotColumns; ++c) {
            qy.push_back(quantize(traits(t).vec_dot_type, random_row(n, uint32_t(30 + c))));
            ys[c] = qy.back().data();
        }
        for (int n_cols = 1; n_cols <= quant::kMaxDotColumns; ++n_cols) {
            float out[quant::kMaxDotColumns];
            dot_columns(n, qx.data(), ys, n_cols, out);
            for (int c = 0; c < n_cols; ++c) {
                EXPECT_EQ(out[c], traits(t).vec_dot(n, qx.data(), ys[c]))
                    << dtype_name(t) << " column " << c << " of " << n_cols;
            }
        }
    }
    EXPECT_EQ(quant::lut4_dot_columns(DType::Q4_0), nullptr);
}

// ggml's hsum_float_8.
float hsum(const float *a) {
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

// Element j's table value in a 32-block whose codes are the nibbles of qs.
int value_of(const uint8_t *qs, const int8_t *values, int j) {
    const uint8_t byte = qs[j % 16];
    return values[j < 16 ? byte & 0x0f : byte >> 4];
}

// A 32-block format's codes, table and weight scale.
struct Blocks32 {
    const std::vector<std::byte> &q;
    DType type;
    const uint8_t *qs(int64_t b) const {
        const size_t size = traits(type).type_size;
        return reinterpret_cast<const uint8_t *>(q.data() + b * size + (size - 16));
    }
    const int8_t *values() const {
        return type == DType::MXFP4 ? quant::kValuesMxfp4 : quant::kValuesIq4nl;
    }
    float scale(int64_t b) const {
        const auto *p = reinterpret_cast<const uint8_t *>(q.data() + b * traits(type).type_size);
        if (type == DType::MXFP4) return quant::e8m0_half_to_f32(p[0]);
        uint16_t d;
        std::memcpy(&d, p, 2);
        return fp16_to_f32(d);
    }
};

// vec_dot's result does not depend on how the build vectorises: recomputed in the order
// lut4_formats.h documents, from the integer lane sums, with std::fma; an even and an odd number
// of blocks (the last one then goes through the tail).
TEST(Lut4Formats, Block32DotsFollowGgmlLaneOrder) {
    for (DType type : {DType::MXFP4, DType::IQ4_NL}) {
        for (int64_t nb : {36, 37}) {
            const int64_t n = 32 * nb;
            const auto qx = quantize(type, random_row(n, 11));
            const auto qy = quantize(DType::Q8_0, random_row(n, 12));
            const Blocks32 x{qx, type};
            const auto *y = reinterpret_cast<const quant::BlockQ8_0 *>(qy.data());
            auto block_sum = [&](int64_t b, int first, int count) {
                int sum = 0;
                for (int j = first; j < first + count; ++j) {
                    sum += value_of(x.qs(b), x.values(), j) * y[b].qs[j];
                }
                return sum;
            };
            float acc[2][8] = {};
            const int64_t paired = nb - nb % 2;  // blocks that go through the two accumulators
            for (int64_t b = 0; b < paired; ++b) {
                const float scale = fp16_to_f32(y[b].d) * x.scale(b);
                for (int l = 0; l < 8; ++l) {
                    acc[b % 2][l] = std::fma(scale, float(block_sum(b, 4 * l, 4)), acc[b % 2][l]);
                }
            }
            float lanes[8];
            for (int l = 0; l < 8; ++l) lanes[l] = acc[0][l] + acc[1][l];
            float expected = hsum(lanes);
            if (paired < nb) {
                const float scale = fp16_to_f32(y[paired].d) * x.scale(paired);
                expected = std::fma(scale, float(block_sum(paired, 0, 32)), expected);
            }
            EXPECT_EQ(traits(type).vec_dot(n, qx.data(), qy.data()), expected)
                << dtype_name(type) << " " << nb << " blocks";
        }
    }
}

// IQ4_XS: per super-block, lane l sums over the 8 sub-blocks their scale times the products of
// elements 4l .. 4l + 3; one fma per lane and super-block; the lanes added last.
TEST(Lut4Formats, Iq4xsDotFollowsGgmlLaneOrder) {
    const int64_t n = 256 * 13;
    const auto qx = quantize(DType::IQ4_XS, random_row(n, 13));
    const auto qy = quantize(DType::Q8_K, random_row(n, 14));
    const auto *x = reinterpret_cast<const quant::BlockIQ4XS *>(qx.data());
    const auto *y = reinterpret_cast<const quant::BlockQ8K *>(qy.data());
    float acc[8] = {};
    for (int64_t i = 0; i < n / 256; ++i) {
        int lanes[8] = {};
        for (int ib = 0; ib < 8; ++ib) {
            for (int j = 0; j < 32; ++j) {
                lanes[j / 4 % 8] += quant::iq4xs_scale(x[i], ib) *
                                    value_of(x[i].qs + 16 * ib, quant::kValuesIq4nl, j) *
                                    y[i].qs[32 * ib + j];
            }
        }
        const float d = fp16_to_f32(x[i].d) * y[i].d;
        for (int l = 0; l < 8; ++l) acc[l] = std::fma(d, float(lanes[l]), acc[l]);
    }
    EXPECT_EQ(traits(DType::IQ4_XS).vec_dot(n, qx.data(), qy.data()), hsum(acc));
}

// A super-block of zeros: every sub-block scale is 0, so the super-block scale is -0 / 32, which
// ggml stores as F16 0x8000; the codes all point at the table's value next to 0.
TEST(Lut4Formats, Iq4xsZeroSuperBlockKeepsNegativeZeroScale) {
    const auto q = quantize(DType::IQ4_XS, std::vector<float>(256, 0.0f));
    const auto &b = *reinterpret_cast<const quant::BlockIQ4XS *>(q.data());
    EXPECT_EQ(b.d, 0x8000);
    for (int ib = 0; ib < 8; ++ib) EXPECT_EQ(quant::iq4xs_scale(b, ib), 0);
    for (uint8_t byte : b.qs) EXPECT_EQ(byte, 0x88);
}

}  // namespace
}  // namespace loom
