// Tiles for repacked Q4_0 and Q8_0 weights against Q8_0 columns (core/cpu/qgemm.h).
//
// A group block (16 rows, one 32-element block each) is 16 F16 scales, then the quants as
// 4-byte units of the 16 rows side by side: one 64-byte vector per unit (core/cpu/repack.h).
// Q4_0 unit t holds elements 4t..4t+3 in its low nibbles and 16+4t..16+4t+3 in its high ones;
// Q8_0 unit t holds elements 4t..4t+3 as 128 + q.
//
// Both are unsigned against the signed activations, as VPDPBUSD wants, so a block's sum is
// sum(u * a) - offset * sum(a) with offset 8 (Q4_0) or 128 (Q8_0): the panel's per-block term is
// -offset * sum(a), which starts each lane's sum (Q8_0 without VNNI: see kQ8Offset).
#include <cstring>
#include <utility>

#include "core/cpu/qgemm.h"
#include "core/cpu/qgemm_q8_0_panel.h"
#include "core/cpu/qgemm_simd.h"
#include "core/quant/legacy_formats.h"
#include "loom/fp16.h"

namespace loom::cpu::inline LOOM_ISA::qgemm {

#if LOOM_INTEGER_KERNELS
namespace {

using q8_0_panel::kBlock;
using q8_0_panel::kColumnBlock;
using q8_0_panel::prepare;

// Q8_0's unsigned 128 + q goes to VPDPBUSD where the build has it; without VNNI, whose emulation
// multiplies unsigned bytes up to 127 only, the tile takes q back (the XOR) and multiplies signed
// bytes, and the panel's term is 0.
constexpr int kQ8Offset = kVnni ? 128 : 0;

template <int NC, bool kNibbles>
void tile(const std::byte *group, int64_t n_blocks, const std::byte *panel, float *out) {
    constexpr size_t kGroupBlock =
        kRepackRows * (kNibbles ? sizeof(quant::BlockQ4_0) : sizeof(quant::BlockQ8_0));
    constexpr size_t kQuants = 2 * kRepackRows;  // after the 16 F16 scales
    const Ints low4 = Ints::splat8(0x0F);
    Floats acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = Floats::zero();
    for (int64_t b = 0; b < n_blocks; ++b) {
        const std::byte *w = group + size_t(b) * kGroupBlock;
        prefetch_weights<kGroupBlock, NC>(w);
        const std::byte *a = panel + size_t(b) * NC * kColumnBlock;
        const Floats dw = Floats::load_f16(w);
        Ints q[8];  // q[t]: elements 4t..4t+3 of the 16 rows
        if constexpr (kNibbles) {
            for (int t = 0; t < 4; ++t) {
                const Ints v = Ints::load(w + kQuants + 64 * t);
                q[t] = v & low4;
                q[t + 4] = srli16(v, 4) & low4;
            }
        } else {
            for (int t = 0; t < 8; ++t) {
                q[t] = Ints::load(w + kQuants + 64 * t);
                if constexpr (!kVnni) q[t] = q[t] ^ Ints::splat8(int8_t(0x80));
            }
        }
#pragma GCC unroll 12
        for (int c = 0; c < NC; ++c) {
            Ints sum = Ints::broadcast32(a + NC * (kBlock + 4) + 4 * c);
            auto x = [&](int t) { return Ints::broadcast32(a + c * kBlock + 4 * t); };
            if constexpr (kNibbles || kVnni) {
                constexpr int kMaxLevel = kNibbles ? 15 : 255;
                sum = dot_units<8, kMaxLevel>(sum, q, x);
            } else {
#pragma GCC unroll 8
                for (int t = 0; t < 8; ++t) sum = dot_s8s8(sum, q[t], x(t));
            }
            const Floats scale = dw * Floats::splat(load_f32(a + NC * kBlock + 4 * c));
            acc[c] = fmadd(Floats::from_ints(sum), scale, acc[c]);
        }
    }
    for (int c = 0; c < NC; ++c) acc[c].store(out + c * kGroupRows);
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
                         .prepare = prepare<kQ8Offset>,
                         .tiles = tiles<false>(kPanelWidths)};
#else
const Format kFormatQ4_0{}, kFormatQ8_0{};
#endif

}  // namespace loom::cpu::inline LOOM_ISA::qgemm
