// Tiles for repacked Q4_K, Q5_K and Q6_K weights against Q8_K columns (core/cpu/qgemm.h).
//
// Group blocks (16 rows, one 256-element super-block each) keep the fields of the file's block
// side by side for the 16 rows (core/cpu/repack.h):
//   Q4_K: d[16] F16 | dmin[16] F16 | 12 scale bytes x 16 rows | 32 quant units x 64 bytes
//         unit 8c + t: elements 64c + 4t.. in the low nibbles, 64c + 32 + 4t.. in the high ones
//   Q5_K: as Q4_K, with 8 qh units x 64 bytes before the quants: unit t, bit j holds the fifth
//         bit of element 4t.. of sub-block j (the elements of quant units 8(j/2) + t)
//   Q6_K: ql 32 units x 64 | qh 16 units x 64 | 16 scales x 16 rows (int8) | d[16] F16
// Each sub-block's integer sum is multiplied by its scale in integers (VPMULLD), so a lane's
// sum over the super-block is exact; the F16 scales enter once per super-block (Q6_K: once per
// lane of ggml's AVX2 kernel, see tile_q6k).
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/cpu/qgemm.h"
#include "core/cpu/qgemm_simd.h"
#include "core/quant/k_blocks.h"

namespace loom::cpu::inline LOOM_ISA::qgemm {

#if LOOM_INTEGER_KERNELS
namespace {

using quant::QK_K;

// Q4_K columns: per block, 4 int32 terms, each two 32-element sums of the quants (int16 pairs)
// that VPDPWSSD multiplies with the rows' 6-bit mins.
constexpr int kQ4KExtra = 4;
// Q6_K columns: per block, the sum of each 16 quants (as int16, zero above), for the -32 offset
// of Q6_K's levels (lane m starts at -32 * the scaled sums of sub-blocks 2m and 2m + 1).
constexpr int kQ6KExtra = 16;

template <int kExtra>
size_t column_block() {
    return QK_K + 4 + 4 * kExtra;
}

template <int kExtra>
void prepare(const void *act, int64_t n_blocks, int w, int slot, std::byte *panel) {
    const auto *blocks = static_cast<const quant::BlockQ8K *>(act);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const quant::BlockQ8K &y = blocks[b];
        std::byte *p = panel + size_t(b) * size_t(w) * column_block<kExtra>();
        std::memcpy(p + slot * QK_K, y.qs, QK_K);
        std::memcpy(p + w * QK_K + slot * 4, &y.d, 4);
        int32_t terms[kExtra];
        for (int i = 0; i < kExtra; ++i) {
            if constexpr (kExtra == kQ4KExtra) {
                const int32_t lo = y.bsums[4 * i] + y.bsums[4 * i + 1];
                const int32_t hi = y.bsums[4 * i + 2] + y.bsums[4 * i + 3];
                terms[i] = int32_t(uint32_t(uint16_t(lo)) | (uint32_t(uint16_t(hi)) << 16));
            } else {
                terms[i] = int32_t(uint16_t(y.bsums[i]));  // the low half: see tile_q6k
            }
        }
        std::memcpy(p + w * (QK_K + 4) + slot * 4 * kExtra, terms, sizeof terms);
    }
}

// The 16 rows' 6-bit scales (as int32 lanes) and mins (as int16 pairs of sub-blocks 2i, 2i+1)
// of one Q4_K group block, from its 12 scale bytes per row (ggml's get_scale_min_k4 packing).
struct Q4KScales {
    Scale16 scale[8];
    Ints min_pairs[4];
};

inline Q4KScales unpack_q4k_scales(const std::byte *bytes) {
    __m128i s[12];
    for (int i = 0; i < 12; ++i) {
        s[i] = _mm_loadu_si128(reinterpret_cast<const __m128i *>(bytes + 16 * i));
    }
    const __m128i m6 = _mm_set1_epi8(63), m4 = _mm_set1_epi8(0x0F), top2 = _mm_set1_epi8(0x30);
    __m128i sc[8], mn[8];
    for (int j = 0; j < 4; ++j) {
        sc[j] = _mm_and_si128(s[j], m6);
        mn[j] = _mm_and_si128(s[j + 4], m6);
    }
    for (int j = 4; j < 8; ++j) {
        // Bits 6-7 of bytes j-4 (scales) and j (mins) are bits 4-5 of scales and mins 4-7.
        sc[j] = _mm_or_si128(_mm_and_si128(s[j + 4], m4),
                             _mm_and_si128(_mm_srli_epi16(s[j - 4], 2), top2));
        mn[j] = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(s[j + 4], 4), m4),
                             _mm_and_si128(_mm_srli_epi16(s[j], 2), top2));
    }
    Q4KScales out;
    for (int j = 0; j < 8; ++j) out.scale[j] = Scale16::of(Ints::widen_u8(sc[j]));
    for (int i = 0; i < 4; ++i) {
        out.min_pairs[i] = Ints::widen_u8_pairs(_mm_unpacklo_epi8(mn[2 * i], mn[2 * i + 1]),
                                                _mm_unpackhi_epi8(mn[2 * i], mn[2 * i + 1]));
    }
    return out;
}

// Q4_K, and Q5_K (kFifthBit): the same sums, the levels 0..31 instead of 0..15.
template <bool kFifthBit, int NC>
void tile_q4k(const std::byte *group, int64_t n_blocks, const std::byte *panel, float *out) {
    using Block = std::conditional_t<kFifthBit, quant::BlockQ5K, quant::BlockQ4K>;
    constexpr size_t kGroupBlock = kRepackRows * sizeof(Block);
    constexpr size_t kScales = 4 * kRepackRows, kHigh = 16 * kRepackRows;
    constexpr size_t kQuants = (kFifthBit ? 48 : 16) * kRepackRows;
    const Ints bit4 = Ints::splat8(0x10);
    const size_t col = column_block<kQ4KExtra>();
    const Ints low4 = Ints::splat8(0x0F);
    Floats acc[NC];
    for (int c = 0; c < NC; ++c) acc[c] = Floats::zero();
    for (int64_t b = 0; b < n_blocks; ++b) {
        const std::byte *w = group + size_t(b) * kGroupBlock;
        prefetch_weights<kGroupBlock, NC>(w);
        const std::byte *a = panel + size_t(b) * NC * col;
        const Q4KScales scales = unpack_q4k_scales(w + kScales);
        Ints high[8];
        if constexpr (kFifthBit) {
            for (int t = 0; t < 8; ++t) high[t] = Ints::load(w + kHigh + size_t(t) * 64);
        }
        Ints sumi[NC];
        for (int c = 0; c < NC; ++c) sumi[c] = Ints::zero();
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) {
            // Sub-block j: the low (even j) or high nibbles of units 8(j/2) .. 8(j/2) + 7.
            Ints q[8];
#pragma GCC unroll 8
            for (int t = 0; t < 8; ++t) {
                const Ints v = Ints::load(w + kQuants + size_t(8 * (j / 2) + t) * 64);
                q[t] = (j % 2 == 0 ? v : srli16(v, 4)) & low4;
                if constexpr (kFifthBit) {
                    // Bit j of each qh byte to bit 4 (16-bit shifts: bit 4 of a byte comes from
                    // the same byte for shifts of at most 4 either way).
                    const Ints h = j <= 4 ? slli16(high[t], 4 - j) : srli16(high[t], j - 4);
                    q[t] = q[t] | (h & bit4);
                }
            }
#pragma GCC unroll 12
            for (int c = 0; c < NC; ++c) {
                auto x = [&](int t) { return Ints::broadcast32(a + c * QK_K + 4 * (8 * j + t)); };
                sumi[c] = scaled_dot < 8, kFifthBit ? 31 : 15 > (sumi[c], q, x, scales.scale[j]);
            }
        }
        const Floats dw = Floats::load_f16(w), dmin = Floats::load_f16(w + 2 * kRepackRows);
        for (int c = 0; c < NC; ++c) {
            Ints mins = Ints::zero();
            for (int i = 0; i < 4; ++i) {
                mins = dot_s16(mins, scales.min_pairs[i],
                               Ints::broadcast32(a + NC * (QK_K + 4) + 16 * c + 4 * i));
            }
            const float da = load_f32(a + NC * QK_K + 4 * c);
            acc[c] = fmadd(Floats::from_ints(sumi[c]), dw * Floats::splat(da), acc[c]);
            acc[c] = fmadd(Floats::from_ints(mins), dmin * Floats::splat(-da), acc[c]);
        }
    }
    for (int c = 0; c < NC; ++c) acc[c].store(out + c * kGroupRows);
}

// Q6_K in the float order of ggml's AVX2 ggml_vec_dot_q6_K_q8_K, the kernel llama.cpp runs for
// Q6_K on x86 (it does not repack Q6_K there): per row 8 int32 lanes, lane m holding, for every
// 32-element chunk, the scaled products of its elements 4m .. 4m + 3 (q + 32 times the
// activations), less 32 * (the scaled activation sums of sub-blocks 2m and 2m + 1); each lane
// goes through its own float accumulator (one fma with d_w * d_a per super-block) and the 8 are
// added at the end as ggml's hsum_float_8.
//
// The scales multiply in 16 bits: a unit's product sum (4 * 63 * 128 at most) and a Q8_K 16-sum
// fit in int16, so VPDPWSSD (or VPMADDWD on the pair sums, scaled_dot) adds exactly sum * scale
// to the lane, one instruction instead of VPMULLD's two and an add. The panel stores each 16-sum
// in the low half of its int32 (zero above), which either form of Scale16 multiplies exactly.
template <int NC>
void tile_q6k(const std::byte *group, int64_t n_blocks, const std::byte *panel, float *out) {
    constexpr size_t kGroupBlock = kRepackRows * sizeof(quant::BlockQ6K);
    constexpr size_t kHigh = 128 * kRepackRows, kScales = 192 * kRepackRows,
                     kScale = 208 * kRepackRows;
    const size_t col = column_block<kQ6KExtra>();
    const Ints low4 = Ints::splat8(0x0F), bits45 = Ints::splat8(0x30);
    Floats acc[NC][8];
    for (int c = 0; c < NC; ++c) {
        for (int m = 0; m < 8; ++m) acc[c][m] = Floats::zero();
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
        const std::byte *w = group + size_t(b) * kGroupBlock;
        prefetch_weights<kGroupBlock, NC>(w);
        const std::byte *a = panel + size_t(b) * NC * col;
        // The 16 sub-block scales, each in the low 16 bits of its row's lane.
        Scale16 scale[16];
        for (int sub = 0; sub < 16; ++sub) {
            scale[sub] = Scale16::of(Ints::widen_i8(
                _mm_loadu_si128(reinterpret_cast<const __m128i *>(w + kScales + 16 * sub))));
        }
        // Unit u of chunk 4h + qq (elements 128h + 32qq + 4u ..): low bits from ql unit
        // 16h + 8(qq % 2) + u (high nibble when qq >= 2), bits 4-5 from bits 2qq, 2qq + 1 of qh
        // unit 8h + u. Units 0-3 of a chunk are in sub-block 2 * chunk, 4-7 in the next.
        auto levels = [&](int chunk, int u) [[gnu::always_inline]] {
            const int h = chunk / 4, qq = chunk % 4;
            const Ints lo = Ints::load(w + size_t(16 * h + 8 * (qq % 2) + u) * 64);
            const Ints hi = Ints::load(w + kHigh + size_t(8 * h + u) * 64);
            const Ints hi45 = qq == 0   ? slli16(hi, 4)
                              : qq == 1 ? slli16(hi, 2)
                              : qq == 2 ? hi
                                        : srli16(hi, 2);
            const Ints lo4 = (qq < 2 ? lo : srli16(lo, 4)) & low4;
            return lo4 | (hi45 & bits45);
        };
        // Lane m of column c starts at -32 * (scaled 16-sums of sub-blocks 2m and 2m + 1).
        auto start = [&](int c, int m) [[gnu::always_inline]] {
            const std::byte *bsums = a + NC * (QK_K + 4) + 4 * kQ6KExtra * c;
            Ints t = dot_s16(Ints::zero(), Ints::broadcast32(bsums + 4 * (2 * m)), scale[2 * m].v);
            t = dot_s16(t, Ints::broadcast32(bsums + 4 * (2 * m + 1)), scale[2 * m + 1].v);
            return Ints::zero() - slli32(t, 5);
        };
        auto add_unit = [&](Ints lane, Ints q, int c, int chunk, int u) [[gnu::always_inline]] {
            auto x = [&](int) { return Ints::broadcast32(a + c * QK_K + 4 * (8 * chunk + u)); };
            return scaled_dot<1, 63>(lane, &q, x, scale[2 * chunk + u / 4]);
        };
        Ints lane[NC][8];
        if constexpr (NC <= kStreamColumns) {
            // Generation: every column's lanes stay in registers while each chunk is decoded.
            for (int c = 0; c < NC; ++c) {
                for (int m = 0; m < 8; ++m) lane[c][m] = start(c, m);
            }
#pragma GCC unroll 8
            for (int chunk = 0; chunk < 8; ++chunk) {
                Ints q[8];
#pragma GCC unroll 8
                for (int u = 0; u < 8; ++u) q[u] = levels(chunk, u);
                for (int c = 0; c < NC; ++c) {
#pragma GCC unroll 8
                    for (int u = 0; u < 8; ++u)
                        lane[c][u] = add_unit(lane[c][u], q[u], c, chunk, u);
                }
            }
        } else {
            // Wide panels: the block is decoded once into L1, then each column's 8 lanes run
            // through it (8 lanes per column would not fit the registers for 12 columns).
            Ints q[64];
#pragma GCC unroll 8
            for (int chunk = 0; chunk < 8; ++chunk) {
#pragma GCC unroll 8
                for (int u = 0; u < 8; ++u) q[8 * chunk + u] = levels(chunk, u);
            }
            for (int c = 0; c < NC; ++c) {
#pragma GCC unroll 8
                for (int m = 0; m < 8; ++m) lane[c][m] = start(c, m);
#pragma GCC unroll 8
                for (int chunk = 0; chunk < 8; ++chunk) {
#pragma GCC unroll 8
                    for (int u = 0; u < 8; ++u) {
                        lane[c][u] = add_unit(lane[c][u], q[8 * chunk + u], c, chunk, u);
                    }
                }
            }
        }
        const Floats dw = Floats::load_f16(w + kScale);
        for (int c = 0; c < NC; ++c) {
            const Floats d = dw * Floats::splat(load_f32(a + NC * QK_K + 4 * c));
#pragma GCC unroll 8
            for (int m = 0; m < 8; ++m)
                acc[c][m] = fmadd(Floats::from_ints(lane[c][m]), d, acc[c][m]);
        }
    }
    for (int c = 0; c < NC; ++c) {
        const Floats sum = ((acc[c][0] + acc[c][4]) + (acc[c][2] + acc[c][6])) +
                           ((acc[c][1] + acc[c][5]) + (acc[c][3] + acc[c][7]));
        sum.store(out + c * kGroupRows);
    }
}

template <bool kFifthBit, size_t... I>
constexpr std::array<Tile, kPanel> q4k_tiles(std::index_sequence<I...>) {
    return {tile_q4k<kFifthBit, int(I) + 1>...};
}
template <size_t... I>
constexpr std::array<Tile, kPanel> q6k_tiles(std::index_sequence<I...>) {
    return {tile_q6k<int(I) + 1>...};
}
constexpr auto kPanelWidths = std::make_index_sequence<kPanel>();

}  // namespace

const Format kFormatQ4_K{.act_type = DType::Q8_K,
                         .block = QK_K,
                         .extra = kQ4KExtra,
                         .prepare = prepare<kQ4KExtra>,
                         .tiles = q4k_tiles<false>(kPanelWidths)};
const Format kFormatQ5_K{.act_type = DType::Q8_K,
                         .block = QK_K,
                         .extra = kQ4KExtra,
                         .prepare = prepare<kQ4KExtra>,
                         .tiles = q4k_tiles<true>(kPanelWidths)};
const Format kFormatQ6_K{.act_type = DType::Q8_K,
                         .block = QK_K,
                         .extra = kQ6KExtra,
                         .prepare = prepare<kQ6KExtra>,
                         .tiles = q6k_tiles(kPanelWidths)};
#else
const Format kFormatQ4_K{}, kFormatQ5_K{}, kFormatQ6_K{};
#endif

}  // namespace loom::cpu::inline LOOM_ISA::qgemm
