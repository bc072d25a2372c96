#pragma once
// Scalar activation functions shared by the unary and gated kernels.
#include <cmath>

namespace loom::cpu {

inline float sigmoid_f32(float x) {
    return 1.0f / (1.0f + std::exp(-x));
}
inline float silu_f32(float x) {
    return x / (1.0f + std::exp(-x));
}

// GELU, tanh approximation (Hendrycks & Gimpel): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
inline float gelu_f32(float x) {
    constexpr float kSqrt2OverPi = 0.79788456080286535588f;
    constexpr float kCubic = 0.044715f;
    return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kCubic * x * x)));
}

// log(1 + e^x); above 20 the correction is below float precision and exp would lose accuracy.
inline float softplus_f32(float x) {
    return x > 20.0f ? x : std::log1p(std::exp(x));
}

}  // namespace loom::cpu
