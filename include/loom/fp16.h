#pragma once
// IEEE half and bfloat16 conversions, bit-exact with GGUF's storage.
#include <cstdint>
#include <cstring>

namespace loom {

inline float bits_to_f32(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline uint32_t f32_to_bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

// Exact: every half is a float. Scales the half's exponent by reinterpreting it as a float and
// multiplying by 2^112 (the exponent bias difference 127 - 15), which also handles subnormals.
inline float fp16_to_f32(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t rest = h & 0x7fffu;
    if (rest >= 0x7c00u) return bits_to_f32(sign | 0x7f800000u | (rest & 0x3ffu) << 13);  // inf/nan
    return bits_to_f32(sign | f32_to_bits(bits_to_f32(rest << 13) * 0x1p112f));
}

// Round to nearest even; overflow gives inf, NaN stays NaN.
inline uint16_t f32_to_fp16(float f) {
    const uint32_t u = f32_to_bits(f);
    const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
    const uint32_t abs = u & 0x7fffffffu;
    if (abs > 0x7f800000u) return sign | 0x7e00u;   // NaN
    if (abs >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: inf
    if (abs < 0x38800000u) {                        // below the smallest normal half
        // Adding 0.5 shifts the mantissa so the FPU's own rounding produces the subnormal.
        const float r = bits_to_f32(abs) + 0.5f;
        return sign | uint16_t(f32_to_bits(r) - f32_to_bits(0.5f));
    }
    const uint32_t mant_odd = (abs >> 13) & 1u;
    const uint32_t rounded = abs + 0xc8000fffu + mant_odd;  // rebias exponent by -112, round
    return sign | uint16_t(rounded >> 13);
}

inline float bf16_to_f32(uint16_t h) {
    return bits_to_f32(uint32_t(h) << 16);
}

// Round to nearest even; NaN is kept quiet.
inline uint16_t f32_to_bf16(float f) {
    const uint32_t u = f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 64);
    return uint16_t((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

}  // namespace loom
