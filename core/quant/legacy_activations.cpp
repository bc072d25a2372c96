// Q8_0 / Q8_1 activation quantizers with the arithmetic of ggml's AVX2 quantize_row_q8_0/_1,
// which produced llama.cpp's reference numbers.

#include <algorithm>
#include <cmath>

#include "core/quant/legacy_formats.h"
#include "loom/fp16.h"

namespace loom::quant::inline LOOM_ISA {
namespace {

// Returns d; the quants go to qs.
float quantize_block(const float *x, uint16_t &d_out, int8_t *qs) {
    float amax = 0.0f;
    for (int j = 0; j < kLegacyBlock; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    d_out = f32_to_fp16(d);
    // rint: the default rounding mode, to nearest with ties to even (_mm256_round_ps's mode)
    for (int j = 0; j < kLegacyBlock; ++j) qs[j] = to_int8(std::rint(x[j] * id));
    return d;
}

}  // namespace

void quantize_activations_q8_0(const float *x, void *y, int64_t n) {
    auto *blocks = static_cast<BlockQ8_0 *>(y);
    for (int64_t i = 0; i < n / kLegacyBlock; ++i) {
        quantize_block(x + i * kLegacyBlock, blocks[i].d, blocks[i].qs);
    }
}

void quantize_activations_q8_1(const float *x, void *y, int64_t n) {
    auto *blocks = static_cast<BlockQ8_1 *>(y);
    for (int64_t i = 0; i < n / kLegacyBlock; ++i) {
        const float d = quantize_block(x + i * kLegacyBlock, blocks[i].d, blocks[i].qs);
        int sum = 0;
        for (int j = 0; j < kLegacyBlock; ++j) sum += blocks[i].qs[j];
        blocks[i].s = f32_to_fp16(d * float(sum));
    }
}

}  // namespace loom::quant::inline LOOM_ISA
