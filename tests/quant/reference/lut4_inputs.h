// The fixed inputs of the MXFP4 / IQ4_NL / IQ4_XS reference data: weight rows over many scales,
// edge rows (subnormals, ties between levels, zero blocks, non-finite values) and activation rows.
// lut4_reference_tests.cpp and regenerate.sh's driver (built against llama.cpp) both include it,
// so the two sides quantize the same floats. Plain C++17, no Loom or ggml headers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace lut4_inputs {

constexpr int64_t K = 1024, kWeightRows = 32, kEdgeRows = 4, kActRows = 8;

struct Rng {
    uint32_t s;
    uint32_t next() {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        return s;
    }
};
float pow2(int p) {  // 2^p for -149 <= p <= 127, exactly
    const uint32_t bits = p >= -126 ? uint32_t(p + 127) << 23 : 1u << (p + 149);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}
// About normal (sd 1.15): a centred sum of four 16-bit draws, over 2^16; exact in float.
float gauss(Rng &r) {
    int32_t k = 0;
    for (int i = 0; i < 4; ++i) k += int32_t(r.next() & 0xffff);
    return float(k - 131070) * 0x1p-16f;
}
std::vector<float> weight_rows() {
    std::vector<float> x(size_t(kWeightRows * K));
    for (int64_t r = 0; r < kWeightRows; ++r) {
        Rng rng{uint32_t(1000 + r)};
        for (int64_t j = 0; j < K; ++j) {
            float v = gauss(rng) * pow2(int(r % 12) - 6);
            if (j % 97 == 0) v = v * 8.0f;  // outliers
            x[size_t(r * K + j)] = v;
        }
    }
    return x;
}
std::vector<float> edge_rows() {
    std::vector<float> x(size_t(kEdgeRows * K));
    Rng rng{2000};
    for (int64_t j = 0; j < K; ++j) {  // row 0: block b at 2^(8b - 140), subnormals to 2^111
        x[size_t(j)] = gauss(rng) * pow2(int(8 * (j / 32)) - 140);
    }
    for (int64_t j = 0; j < K; ++j) {  // row 1: multiples of a step: ties between levels
        const int64_t b = j / 32;
        x[size_t(K + j)] = float((j * 7 + b) % 33 - 16) * pow2(int(b % 5) - 3);
    }
    for (int64_t j = 0; j < K; ++j) {  // row 2: zero blocks, spikes, constants, +-max pairs
        const int64_t b = j / 32, i = j % 32;
        float v = 0.0f;
        if (b % 4 == 1) v = i == b % 32 ? float(b % 2 ? -(b + 1) : b + 1) : 0.0f;
        if (b % 4 == 2) v = (b % 8 == 2 ? -0.75f : 0.75f) * pow2(int(b / 8));
        if (b % 4 == 3) v = i == 3 ? 3.0f : i == 17 ? -3.0f : gauss(rng) * pow2(-7);
        x[size_t(2 * K + j)] = v;
    }
    const float near_two = 2.0f - pow2(-23);  // log2f rounds its log up to the next integer
    const int near_two_exp[] = {-100, -10, 0, 10, 23, 100};
    for (int64_t j = 0; j < K; ++j) {  // row 3: non-finite values and extremes
        const int64_t b = j / 32, i = j % 32;
        float v = gauss(rng);
        if (b == 0 && i == 5) v = INFINITY;
        if (b == 1 && i == 9) v = NAN;
        if (b == 2 && i == 0) v = -INFINITY;
        if (b == 3) v = i == 1 ? 3.4028235e38f : i == 2 ? -3.4028235e38f : v;
        if (b == 4) v = float(i - 16) * pow2(-149);
        if (b >= 5 && b < 11) v = (i == 7 ? near_two : v * 0.25f) * pow2(near_two_exp[b - 5]);
        x[size_t(3 * K + j)] = v;
    }
    return x;
}
std::vector<float> activation_rows() {
    std::vector<float> x(size_t(kActRows * K));
    for (int64_t r = 0; r < kActRows; ++r) {
        Rng rng{uint32_t(3000 + r)};
        for (int64_t j = 0; j < K; ++j) x[size_t(r * K + j)] = gauss(rng) * pow2(int(r % 3) - 1);
    }
    return x;
}

}  // namespace lut4_inputs
