// Tiles for repacked Q4_0 and Q8_0 weights against Q8_0 columns (core/cpu/qgemm.h).
//
// A group block (16 rows, one 32-element block each) is 16 F16 scales, then the quants as
// 4-byte units of the 16 rows side by side: one 64-byte vector per unit (core/cpu/repack.h).
// Q4_0 unit t holds elements 4t..4t+3 in its low nibbles and 16+4t..16+4t+3 in its high ones;
// Q8_0 unit t holds elements 4t..4t+3 as 128 + q.
//
// Both are unsigned against the signed activations, as VPDPBUSD wants, so a block's sum is
// sum(u * a) - offset * sum(a) with offset 8 (Q4_0) or 128 (Q8_0): the panel's per-block term is
// -offset * sum(a), which starts each lane's sum.
#include <cstring>
#include <utility>

#include "core/cpu/qgemm.h"
#include "core/cpu/qgemm_q8_0_panel.h"
#include "core/cpu/qgemm_simd.h"
#include "core/quant/legacy_formats.h"
#include "loom/fp16.h"

namespace loom::cpu::qgemm {

#if LOOM_INTEGER_KERNELS
namespace {

using q8_0_panel::kBlock;
using q8_0_panel::kColumnBlock;
using q8_0_panel::prepare;

template <int NC, bool kNibbles>
void tile(const std::byte *group, int64_t n_blocks, const std::byte *panel, float *out) {
    constexpr size_t kGroupBlock =
        kRepackRows * (kNibbles ? sizeof(quant::BlockQ4_0) : sizeof(quant::BlockQ8_0));
    constexpr size_t kQuants = 2 * kRepackRows;  // after the 16 F16 scales
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    __m512 acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = _mm512_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
        const std::byte *w = group + size_t(b) * kGroupBlock;
        prefetch_weights<kGroupBlock, NC>(w);
        const std::byte *a = panel + size_t(b) * NC * kColumnBlock;
        const __m512 dw = load_f16x16(w);
        __m512i q[8];  // q[t]: elements 4t..4t+3 of the 16 rows
        if constexpr (kNibbles) {
            for (int t = 0; t < 4; ++t) {
                const __m512i v = load512(w + kQuants + 64 * t);
                q[t] = _mm512_and_si512(v, low4);
                q[t + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
            }
        } else {
            for (int t = 0; t < 8; ++t) q[t] = load512(w + kQuants + 64 * t);
        }
#pragma GCC unroll 12
        for (int c = 0; c < NC; ++c) {
            __m512i sum = broadcast_i32(a + NC * (kBlock + 4) + 4 * c);
#pragma GCC unroll 8
            for (int t = 0; t < 8; ++t) {
                sum = _mm512_dpbusd_epi32(sum, q[t], broadcast_i32(a + c * kBlock + 4 * t));
            }
            const __m512 scale =
                _mm512_mul_ps(dw, _mm512_set1_ps(load_f32(a + NC * kBlock + 4 * c)));
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), scale, acc[c]);
        }
    }
    for (int c = 0; c < NC; ++c) _mm512_storeu_ps(out + c * kGroupRows, acc[c]);
}

template <bool kNibbles, size_t... I>
constexpr std::array<Tile, kPanel> tiles(std::index_sequence<I...>) {
    return {tile<int(I) + 1, kNibbles>...};
}
constexpr auto kPanelWidths = std::make_index_sequence<kPanel>();

}  // namespace

const Format kFormatQ4_0{.act_type = DType::Q8_0,
                         .block = kBlock,
                         .extra = 1,
                         .prepare = prepare<8>,
                         .tiles = tiles<true>(kPanelWidths)};
const Format kFormatQ8_0{.act_type = DType::Q8_0,
                         .block = kBlock,
                         .extra = 1,
                         .prepare = prepare<128>,
                         .tiles = tiles<false>(kPanelWidths)};
#else
const Format kFormatQ4_0{}, kFormatQ8_0{};
#endif

}  // namespace loom::cpu::qgemm
