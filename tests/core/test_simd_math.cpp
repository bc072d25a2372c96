// The vector exponentials of core/cpu/simd.h and the silu built on them, against double
// precision across the whole float range, edges included.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/cpu/simd.h"
#include "core/cpu/unary_math.h"

namespace loom::cpu {
namespace {

float lane0(simd::vf v) {
    return v[0];
}

// ggml_v_expf's bound: 1.45 ulp plus the final rounding.
constexpr double kExpUlps = 2.0;

double ulp_of(double x) {
    const float f = float(x);
    return double(std::nextafter(f, std::numeric_limits<float>::infinity())) - double(f);
}

TEST(SimdMath, ExpAnyIsWithinItsBoundOverTheFloatRange) {
    // From the smallest subnormal result to the largest finite one, every 1/64.
    for (double x = -103.0; x <= 88.7; x += 1.0 / 64) {
        const double want = std::exp(x);
        const float got = lane0(simd::exp_any(simd::splat(float(x))));
        const double tol =
            kExpUlps * std::max(ulp_of(want), double(std::numeric_limits<float>::denorm_min()));
        ASSERT_NEAR(got, want, tol) << "x=" << x;
    }
}

TEST(SimdMath, ExpAnyLimits) {
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(lane0(simd::exp_any(simd::splat(0.0f))), 1.0f);
    EXPECT_EQ(lane0(simd::exp_any(simd::splat(-200.0f))), 0.0f);
    EXPECT_EQ(lane0(simd::exp_any(simd::splat(-inf))), 0.0f);
    EXPECT_EQ(lane0(simd::exp_any(simd::splat(89.0f))), inf);
    EXPECT_EQ(lane0(simd::exp_any(simd::splat(200.0f))), inf);
    EXPECT_EQ(lane0(simd::exp_any(simd::splat(inf))), inf);
    EXPECT_TRUE(std::isnan(lane0(simd::exp_any(simd::splat(std::nanf(""))))));
}

TEST(SimdMath, SiluMatchesDoublePrecisionEverywhere) {
    for (double x = -87.0; x <= 120.0; x += 1.0 / 32) {
        const double want = x / (1.0 + std::exp(-x));
        const float got = silu_f32(float(x));
        ASSERT_NEAR(got, want, 4 * ulp_of(want)) << "x=" << x;
    }
    // Below, e^-x overflows a float, as in llama.cpp's formula, and the result (below 1e-35 in
    // magnitude) flushes to zero.
    for (double x = -120.0; x < -87.0; x += 1.0 / 32) {
        ASSERT_LE(std::fabs(silu_f32(float(x))), 1e-35) << "x=" << x;
    }
    EXPECT_EQ(silu_f32(1000.0f), 1000.0f);
    EXPECT_EQ(silu_f32(-1000.0f), 0.0f);
    EXPECT_TRUE(std::isnan(silu_f32(std::nanf(""))));
}

// The vector body and the scalar tail of a row are the same instructions.
TEST(SimdMath, SiluLanesAgreeWithOneElement) {
    float in[simd::VL];
    for (int l = 0; l < simd::VL; ++l) in[l] = -9.5f + 1.37f * float(l);
    const simd::vf out = silu(simd::load(in));
    for (int l = 0; l < simd::VL; ++l) EXPECT_EQ(out[l], silu_f32(in[l])) << l;
}

}  // namespace
}  // namespace loom::cpu
