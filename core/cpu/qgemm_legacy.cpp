// Tiles for repacked Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 weights against Q8_0 / Q8_1 columns
// (core/cpu/qgemm.h).
//
// A group block (16 rows, one 32-element block each) is 16 F16 scales (d), for Q4_1 / Q5_1 16 F16
// minimums (m), for Q5 the 16 rows' fifth bits (4 bytes per row, reordered: core/cpu/repack.cpp),
// then the quants as 4-byte units of the 16 rows side by side: one 64-byte vector per unit
// (core/cpu/repack.h). Nibble unit t holds elements 4t..4t+3 in its low nibbles and
// 16+4t..16+4t+3 in its high ones; Q8_0 unit t holds elements 4t..4t+3 as 128 + q.
//
// The nibble formats are unsigned against the signed activations, as VPDPBUSD wants, so a block's
// sum is sum(u * a) - offset * sum(a) with offset 8 (Q4_0), 16 (Q5_0) or 0 (Q4_1, Q5_1, whose
// values are d * u + m): the panel's per-block term is -offset * sum(a), which starts each lane's
// sum. Q4_1 / Q5_1 take Q8_1 columns, whose s = d_a * sum(a) (rounded to F16, as llama.cpp keeps
// it) is that term instead, summed apart as ggml does: per block acc = fma(float(sum), d_w * d_a,
// acc) and acc_min = fma(m_w, s_a, acc_min), then acc + acc_min. (The two largely cancel:
// interleaved in one sum they round differently enough from llama.cpp's that an 8-bit activation
// step moves, NMSE 6e-5 on llama-q-q4_1.) Q8_0 keeps ggml's AVX2 lanes (tile_q8_0).
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
using q8_0_panel::prepare_q8_1;

// What a tile needs to know of each format's group block.
enum class Legacy { q4_0, q4_1, q5_0, q5_1, q8_0 };
template <Legacy F>
struct GroupBlock {
    static constexpr bool kNibbles = F != Legacy::q8_0;
    static constexpr bool kMin = F == Legacy::q4_1 || F == Legacy::q5_1;
    static constexpr bool kFifthBit = F == Legacy::q5_0 || F == Legacy::q5_1;
    static constexpr size_t kBlockBytes = F == Legacy::q4_0   ? sizeof(quant::BlockQ4_0)
                                          : F == Legacy::q4_1 ? sizeof(quant::BlockQ4_1)
                                          : F == Legacy::q5_0 ? sizeof(quant::BlockQ5_0)
                                          : F == Legacy::q5_1 ? sizeof(quant::BlockQ5_1)
                                                              : sizeof(quant::BlockQ8_0);
    static constexpr size_t kBytes = kRepackRows * kBlockBytes;
    // Offsets of the fields in the group block: each row's field times 16.
    static constexpr size_t kMins = 2 * kRepackRows;  // after the scales
    static constexpr size_t kFifthBits = (kMin ? 4 : 2) * kRepackRows;
    static constexpr size_t kQuants = kBytes - kRepackRows * (kNibbles ? 16 : 32);
    static constexpr int kMaxLevel = kFifthBit ? 31 : 15;  // of the nibble formats
};

template <Legacy F, int NC, int NG = 1>
void tile(const std::byte *group, size_t stride, int64_t n_blocks, const std::byte *panel,
          float *out) {
    using G = GroupBlock<F>;
    static_assert(G::kNibbles, "Q8_0 has tile_q8_0");
    const Ints low4 = Ints::splat8(0x0F);
    const Ints bit4 = Ints::splat8(0x10);
    Floats sums[NG][NC]{};
    Floats sums_min[NG][G::kMin ? NC : 1]{};  // the minimums' terms, summed apart as ggml does
    auto one_block = [&](int g, const std::byte *w, int64_t b) LOOM_INLINE_LAMBDA {
        Floats *acc = sums[g], *acc_min = sums_min[g];
        prefetch_weights<G::kBytes, NC>(w);
        const std::byte *a = panel + size_t(b) * NC * kColumnBlock;
        const Floats dw = Floats::load_f16(w);
        // Unit t: elements 4t..4t+3 of the 16 rows.
        auto unit = [&](const std::byte *wb, int t) [[gnu::always_inline]] {
            const Ints v = Ints::load(wb + G::kQuants + 64 * (t % 4));
            Ints q = (t < 4 ? v : srli16(v, 4)) & low4;
            if constexpr (G::kFifthBit) {
                // bit 8i + t of a row's word: element 4t + i, to bit 4 of byte i; bit 8i + 4 + t:
                // element 16 + 4t + i (repack.cpp's order)
                const Ints h = Ints::load(wb + G::kFifthBits);
                q = q | ((t < 4 ? slli16(h, 4 - t) : srli16(h, t - 4)) & bit4);
            }
            return q;
        };
        auto column = [&](int c, auto q) [[gnu::always_inline]] {
            const std::byte *term = a + NC * (kBlock + 4) + 4 * c;
            Ints sum = G::kMin ? Ints::zero() : Ints::broadcast32(term);
            auto x = [&](int t) { return Ints::broadcast32(a + c * kBlock + 4 * t); };
            sum = dot_units<8, G::kMaxLevel>(sum, q, x);
            const Floats scale = dw * Floats::splat(load_f32(a + NC * kBlock + 4 * c));
            acc[c] = fmadd(Floats::from_ints(sum), scale, acc[c]);
            if constexpr (G::kMin) {
                acc_min[c] = fmadd(Floats::load_f16(w + G::kMins), Floats::splat(load_f32(term)),
                                   acc_min[c]);
            }
        };
        for_columns<NC>(w, unit, column);
    };
    for_blocks<NG, G::kBytes>(group, stride, n_blocks, one_block);
    if constexpr (G::kMin) {
        for (int g = 0; g < NG; ++g) {
            for (int c = 0; c < NC; ++c) sums[g][c] = sums[g][c] + sums_min[g][c];
        }
    }
    store_sums(sums, out);
}

// Q8_0 in the float order of ggml's AVX2 ggml_vec_dot_q8_0_q8_0, the kernel llama.cpp runs for
// it on x86 (it has no repacked Q8_0 there): unit t of a block (elements 4t .. 4t + 3) is its lane
// t, whose integer sum goes, times d_w * d_a, into the lane's own float accumulator; the 8 are
// added at the end as hsum_float_8. Signed bytes against signed bytes (SignedUnit), with or
// without VNNI, so the panel's term is 0.
template <int NC, int NG = 1>
void tile_q8_0(const std::byte *group, size_t stride, int64_t n_blocks, const std::byte *panel,
               float *out) {
    using G = GroupBlock<Legacy::q8_0>;
    Floats lanes[NG][NC][8]{};
    auto one_block = [&](int g, const std::byte *w, int64_t b) LOOM_INLINE_LAMBDA {
        auto &acc = lanes[g];
        prefetch_weights<G::kBytes, NC>(w);
        const std::byte *a = panel + size_t(b) * NC * kColumnBlock;
        const Floats dw = Floats::load_f16(w);
#pragma GCC unroll 8
        for (int t = 0; t < 8; ++t) {
            // the repacked 128 + q back to q
            const SignedUnit q =
                SignedUnit::of(Ints::load(w + G::kQuants + 64 * t) ^ Ints::splat8(int8_t(0x80)));
            for (int c = 0; c < NC; ++c) {
                const Ints sum =
                    dot_s8s8(Ints::zero(), q, Ints::broadcast32(a + c * kBlock + 4 * t));
                const Floats scale = dw * Floats::splat(load_f32(a + NC * kBlock + 4 * c));
                acc[c][t] = fmadd(Floats::from_ints(sum), scale, acc[c][t]);
            }
        }
    };
    for_blocks<NG, G::kBytes>(group, stride, n_blocks, one_block);
    Floats sums[NG][NC];
    for (int g = 0; g < NG; ++g) {
        for (int c = 0; c < NC; ++c) {
            const Floats *acc = lanes[g][c];
            sums[g][c] =
                ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
        }
    }
    store_sums(sums, out);
}

template <Legacy F, size_t... I>
constexpr std::array<Tile, kPanel> tiles(std::index_sequence<I...>) {
    return {tile<F, int(I) + 1>...};
}
template <size_t... I>
constexpr std::array<Tile, kPanel> q8_0_tiles(std::index_sequence<I...>) {
    return {tile_q8_0<int(I) + 1>...};
}
constexpr auto kPanelWidths = std::make_index_sequence<kPanel>();

}  // namespace

const Format kFormatQ4_0{.act_type = DType::Q8_0,
                         .block = kBlock,
                         .extra = 1,
                         .prepare = prepare<8>,
                         .tiles = tiles<Legacy::q4_0>(kPanelWidths),
                         .streams = tile<Legacy::q4_0, 1, kStreamGroups>};
const Format kFormatQ4_1{.act_type = DType::Q8_1,
                         .block = kBlock,
                         .extra = 1,
                         .prepare = prepare_q8_1,
                         .tiles = tiles<Legacy::q4_1>(kPanelWidths),
                         .streams = tile<Legacy::q4_1, 1, kStreamGroups>};
const Format kFormatQ5_0{.act_type = DType::Q8_0,
                         .block = kBlock,
                         .extra = 1,
                         .prepare = prepare<16>,
                         .tiles = tiles<Legacy::q5_0>(kPanelWidths),
                         .streams = tile<Legacy::q5_0, 1, kStreamGroups>};
const Format kFormatQ5_1{.act_type = DType::Q8_1,
                         .block = kBlock,
                         .extra = 1,
                         .prepare = prepare_q8_1,
                         .tiles = tiles<Legacy::q5_1>(kPanelWidths),
                         .streams = tile<Legacy::q5_1, 1, kStreamGroups>};
const Format kFormatQ8_0{.act_type = DType::Q8_0,
                         .block = kBlock,
                         .extra = 1,
                         .prepare = prepare<0>,
                         .tiles = q8_0_tiles(kPanelWidths),
                         .streams = tile_q8_0<1, kStreamGroups>};
#else
const Format kFormatQ4_0{}, kFormatQ4_1{}, kFormatQ5_0{}, kFormatQ5_1{}, kFormatQ8_0{};
#endif

}  // namespace loom::cpu::inline LOOM_ISA::qgemm
