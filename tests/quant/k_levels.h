#pragma once
// The levels and scales of Q2_K and Q3_K blocks, read element by element as ggml's reference
// dequantizers do: the tests' independent view of those formats.
#include <cstdint>

#include "core/quant/k_blocks.h"

namespace loom::quant_test {

inline int two_bits(const uint8_t *qs, int i) {
    return (qs[32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3;
}
inline int q2_k_level(const quant::BlockQ2K &x, int i) {
    return two_bits(x.qs, i);
}
inline int q2_k_scale(const quant::BlockQ2K &x, int j) {
    return x.scales[j] & 0xF;
}
inline int q2_k_min(const quant::BlockQ2K &x, int j) {
    return x.scales[j] >> 4;
}
inline int q3_k_level(const quant::BlockQ3K &x, int i) {
    return two_bits(x.qs, i) - ((x.hmask[i % 32] >> (i / 32)) & 1 ? 0 : 4);
}
inline int q3_k_scale(const quant::BlockQ3K &x, int j) {
    const int low = j < 8 ? x.scales[j] & 0xF : x.scales[j - 8] >> 4;
    return (low | (((x.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

}  // namespace loom::quant_test
