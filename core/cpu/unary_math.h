#pragma once
// Scalar activation functions shared by the unary and gated kernels.
#include <array>
#include <cmath>
#include <cstdint>

#include "core/cpu/simd.h"
#include "core/isa.h"
#include "loom/fp16.h"

namespace loom::cpu::inline LOOM_ISA {

inline float sigmoid_f32(float x) {
    return 1.0f / (1.0f + std::exp(-x));
}

// x / (1 + e^-x), vectorized, as llama.cpp's vector silu computes it.
inline simd::vf silu(simd::vf x) {
    return x / (simd::splat(1.0f) + simd::exp_any(simd::splat(0.0f) - x));
}
// One element through the same instructions, so a row's scalar tail matches its vector body.
inline float silu_f32(float x) {
    return silu(simd::splat(x))[0];
}

// GELU, tanh approximation (Hendrycks & Gimpel): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// at F16 precision as llama.cpp's CPU backend computes it, so models match it: x rounded to F16,
// the formula in float, the result rounded to F16. From |x| >= 10 on, the exact limits 0 and x.
inline float gelu_formula_f16(float x) {
    constexpr float kSqrt2OverPi = 0.79788456080286535588f;
    constexpr float kCubic = 0.044715f;
    const float h = fp16_to_f32(f32_to_fp16(x));
    const float g = 0.5f * h * (1.0f + std::tanh(kSqrt2OverPi * h * (1.0f + kCubic * h * h)));
    return fp16_to_f32(f32_to_fp16(g));
}
// Every F16 input's result, computed once: the formula above depends only on x's F16 bits, and
// its tanh was 40 % of an encoder's time (a GELU per feed-forward value).
inline const std::array<uint16_t, 65536> &gelu_f16_table() {
    static const std::array<uint16_t, 65536> table = [] {
        std::array<uint16_t, 65536> t{};
        for (uint32_t h = 0; h < t.size(); ++h) {
            t[h] = f32_to_fp16(gelu_formula_f16(fp16_to_f32(uint16_t(h))));
        }
        return t;
    }();
    return table;
}
inline float gelu_f32(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return fp16_to_f32(gelu_f16_table()[f32_to_fp16(x)]);
}

// log(1 + e^x); above 20 the correction is below float precision and exp would lose accuracy.
inline float softplus_f32(float x) {
    return x > 20.0f ? x : std::log1p(std::exp(x));
}

}  // namespace loom::cpu::inline LOOM_ISA
