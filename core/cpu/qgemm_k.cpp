// Tiles for repacked Q2_K, Q3_K, Q4_K, Q5_K and Q6_K weights against Q8_K columns
// (core/cpu/qgemm.h).
//
// Group blocks (16 rows, one 256-element super-block each) keep the fields of the file's block
// side by side for the 16 rows (core/cpu/repack.h):
//   Q2_K: 16 scale bytes x 16 rows (scale | min << 4) | 16 quant units x 64 bytes | d[16] |
//         dmin[16]; unit 8h + t holds in bits 2j, 2j + 1 of its bytes elements 128h + 32j + 4t..
//   Q3_K: 8 hmask units x 64 | the quant units as Q2_K's | 12 scale bytes x 16 rows | d[16];
//         bit 4h + j of hmask unit t is the third bit of the elements of quant unit 8h + t's
//         field j
//   Q4_K: d[16] F16 | dmin[16] F16 | 12 scale bytes x 16 rows | 32 quant units x 64 bytes
//         unit 8c + t: elements 64c + 4t.. in the low nibbles, 64c + 32 + 4t.. in the high ones
//   Q5_K: as Q4_K, with 8 qh units x 64 bytes before the quants: unit t, bit j holds the fifth
//         bit of element 4t.. of sub-block j (the elements of quant units 8(j/2) + t)
//   Q6_K: 16 scales x 16 rows (int8) | d[16] F16 | per lane u < 8, per half h: ql unit
//         16h + u, qh unit 8h + u, ql unit 16h + 8 + u (the order the tile reads them in)
// Each sub-block's integer sum is multiplied by its scale in integers (VPMULLD or VPDPWSSD), so a
// lane's sum over the super-block is exact; the F16 scales enter once per super-block (Q2_K, Q5_K
// and Q6_K: once per lane of ggml's AVX2 kernels, see tile_lanes).
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

// Two int16 values in one int32 term, `lo` in the low half: the form VPDPWSSD multiplies.
int32_t int16_pair(int32_t lo, int32_t hi) {
    return int32_t(uint32_t(uint16_t(lo)) | (uint32_t(uint16_t(hi)) << 16));
}

// The int32 terms each format's tiles take per column and block, from a Q8_K block's 16-sums.
// Q4_K: 4 terms, each the two 32-element sums of sub-blocks 2i, 2i + 1 (as int16 pairs), that
// VPDPWSSD multiplies with the rows' 6-bit mins.
struct Q4KTerms {
    static constexpr int kCount = 4;
    static void fill(const quant::BlockQ8K &y, int32_t *terms) {
        for (int i = 0; i < kCount; ++i) {
            terms[i] = int16_pair(y.bsums[4 * i] + y.bsums[4 * i + 1],
                                  y.bsums[4 * i + 2] + y.bsums[4 * i + 3]);
        }
    }
};
// Q2_K and Q3_K: 8 terms, the 16-sums of sub-blocks 2i and 2i + 1 as an int16 pair, for the
// rows' mins (Q2_K) or the -4 offset of the levels times the scales (Q3_K).
struct SubBlockPairTerms {
    static constexpr int kCount = 8;
    static void fill(const quant::BlockQ8K &y, int32_t *terms) {
        for (int i = 0; i < kCount; ++i) terms[i] = int16_pair(y.bsums[2 * i], y.bsums[2 * i + 1]);
    }
};
// Q6_K: 16 terms, the sum of each 16 quants in the low half (zero above), for the -32 offset of
// Q6_K's levels (lane m starts at -32 * the scaled sums of sub-blocks 2m and 2m + 1).
struct Q6KTerms {
    static constexpr int kCount = 16;
    static void fill(const quant::BlockQ8K &y, int32_t *terms) {
        for (int i = 0; i < kCount; ++i) terms[i] = int16_pair(y.bsums[i], 0);
    }
};

// Q2_K and Q3_K stream their weights twice as far ahead as qgemm.h's distance: on a Zen 4 EPYC
// (AVX-512 VNNI, 2 cores), alternating, three rounds each, the Q2_K 1B file's generation 70.6-73.9
// t/s at 4 KiB (Q2_K's tiles), 79.6-82.1 at 8 KiB, 73.5-75.1 at 16 KiB (2 KiB lost 14-33 % in the
// 1 GiB n = 1 product); the Q3_K product of 1 GiB, one thread, 13.8-17.8 -> 21.5-22.6 GB/s, and
// the Q3_K_M file 70-88 -> 88-90 % of the read loop (docs/PERFORMANCE.md).
constexpr size_t kLowBitStreamAhead = 8192;

template <typename Terms>
size_t column_block() {
    return QK_K + 4 + 4 * Terms::kCount;
}

template <typename Terms>
void prepare(const void *act, int64_t n_blocks, int w, int slot, std::byte *panel) {
    const auto *blocks = static_cast<const quant::BlockQ8K *>(act);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const quant::BlockQ8K &y = blocks[b];
        std::byte *p = panel + size_t(b) * size_t(w) * column_block<Terms>();
        std::memcpy(p + slot * QK_K, y.qs, QK_K);
        std::memcpy(p + w * QK_K + slot * 4, &y.d, 4);
        int32_t terms[Terms::kCount];
        Terms::fill(y, terms);
        std::memcpy(p + w * (QK_K + 4) + slot * 4 * Terms::kCount, terms, sizeof terms);
    }
}

inline __m128i load_rows(const std::byte *p) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
}

// Sub-block j's 6-bit scales (kMins: mins) of the 16 rows of a Q4_K group block, one byte per row,
// from its 12 scale bytes per row (ggml's get_scale_min_k4 packing; byte i of the 16 rows is at
// 16 i).
template <bool kMins>
inline __m128i q4k_scale_bytes(const std::byte *bytes, int j) {
    const __m128i m6 = _mm_set1_epi8(63), m4 = _mm_set1_epi8(0x0F), top2 = _mm_set1_epi8(0x30);
    auto byte = [&](int i) { return load_rows(bytes + 16 * i); };
    if (j < 4) return _mm_and_si128(byte(kMins ? j + 4 : j), m6);
    // Bits 6-7 of bytes j-4 (scales) and j (mins) are bits 4-5 of scales and mins 4-7.
    const __m128i low = kMins ? _mm_srli_epi16(byte(j + 4), 4) : byte(j + 4);
    return _mm_or_si128(_mm_and_si128(low, m4),
                        _mm_and_si128(_mm_srli_epi16(byte(kMins ? j : j - 4), 2), top2));
}
inline Scale16 q4k_scale(const std::byte *bytes, int j) {
    return Scale16::of_unsigned(Ints::widen_u8(q4k_scale_bytes<false>(bytes, j)));
}
// The mins of sub-blocks 2i and 2i + 1 as int16 pairs.
inline Ints q4k_min_pair(const std::byte *bytes, int i) {
    const __m128i m0 = q4k_scale_bytes<true>(bytes, 2 * i);
    const __m128i m1 = q4k_scale_bytes<true>(bytes, 2 * i + 1);
    return Ints::widen_u8_pairs(_mm_unpacklo_epi8(m0, m1), _mm_unpackhi_epi8(m0, m1));
}

// Q4_K's and Q5_K's (kFifthBit) units, the levels 0..15 or 0..31.
// Unit t of sub-block j: the low (even j) or high nibbles of quant unit 8(j/2) + t, and for Q5_K
// bit j of qh unit t.
template <bool kFifthBit>
struct Q4KUnits {
    using Block = std::conditional_t<kFifthBit, quant::BlockQ5K, quant::BlockQ4K>;
    static constexpr size_t kGroupBlock = kRepackRows * sizeof(Block);
    static constexpr size_t kScales = 4 * kRepackRows, kHigh = 16 * kRepackRows;
    static constexpr size_t kQuants = (kFifthBit ? 48 : 16) * kRepackRows;
    static constexpr int kMaxLevel = kFifthBit ? 31 : 15;

    [[gnu::always_inline]] static Ints unit(const std::byte *w, int j, int t) {
        const Ints v = Ints::load(w + kQuants + size_t(8 * (j / 2) + t) * 64);
        Ints q = (j % 2 == 0 ? v : srli16(v, 4)) & Ints::splat8(0x0F);
        if constexpr (kFifthBit) {
            // Bit j of each qh byte to bit 4 (16-bit shifts: bit 4 of a byte comes from the same
            // byte for shifts of at most 4 either way). Loaded per unit: held for the block, the
            // 8 qh units would take AVX2's 16 registers.
            const Ints high = Ints::load(w + kHigh + size_t(t) * 64);
            const Ints h = j <= 4 ? slli16(high, 4 - j) : srli16(high, j - 4);
            q = q | (h & Ints::splat8(0x10));
        }
        return q;
    }
};

// Q4_K: per row, each super-block's scaled sub-block sums in one integer, then its mins, one
// fused step each.
template <int NC, int NG = 1>
void tile_q4k(const std::byte *group, size_t stride, int64_t n_blocks, const std::byte *panel,
              float *out) {
    using U = Q4KUnits<false>;
    const size_t col = column_block<Q4KTerms>();
    Floats sums[NG][NC]{};
    auto one_block = [&](int g, const std::byte *w, int64_t b) LOOM_INLINE_LAMBDA {
        Floats *acc = group_sums(sums, g);
        const std::byte *a = panel + size_t(b) * NC * col;
        const std::byte *scale_bytes = w + U::kScales;
        auto x = [&](int c, int j) {
            return [=](int t) { return Ints::broadcast32(a + c * QK_K + 4 * (8 * j + t)); };
        };
        // Column c's block into its float sum: the scaled sub-block sums, then the mins (the
        // block's scales are loaded here, not held in registers across the sums).
        auto finish = [&](int c, Ints sumi, auto min_pair) [[gnu::always_inline]] {
            const Floats dw = Floats::load_f16(w), dmin = Floats::load_f16(w + 2 * kRepackRows);
            Ints mins = Ints::zero();
            for (int i = 0; i < 4; ++i) {
                mins = dot_s16(mins, min_pair(i),
                               Ints::broadcast32(a + NC * (QK_K + 4) + 16 * c + 4 * i));
            }
            const float da = load_f32(a + NC * QK_K + 4 * c);
            acc[c] = fmadd(Floats::from_ints(sumi), dw * Floats::splat(da), acc[c]);
            acc[c] = fmadd(Floats::from_ints(mins), dmin * Floats::splat(-da), acc[c]);
        };
        if constexpr (kUnitsInRegisters<NC>) {
            Ints sumi[NC];
            for (int c = 0; c < NC; ++c) sumi[c] = Ints::zero();
#pragma GCC unroll 8
            for (int j = 0; j < 8; ++j) {
                prefetch_weights<U::kGroupBlock, NC, 8>(w, j);
                const std::byte *wj = at(w);
                const Scale16 scale = q4k_scale(wj + U::kScales, j);
                if constexpr (NC == 1) {
                    auto q = [&](int t) { return U::unit(wj, j, t); };
                    sumi[0] = scaled_dot<8, U::kMaxLevel>(sumi[0], q, x(0, j), scale);
                } else {
                    Ints q[8];
#pragma GCC unroll 8
                    for (int t = 0; t < 8; ++t) q[t] = U::unit(wj, j, t);
#pragma GCC unroll 12
                    for (int c = 0; c < NC; ++c) {
                        sumi[c] = scaled_dot<8, U::kMaxLevel>(sumi[c], q, x(c, j), scale);
                    }
                }
            }
            // The scales and mins found where they are used: with AVX2, a block's 8 scales and
            // 4 min pairs held across the sums would take 24 of its 16 registers.
            auto min_pair = [&](int i) { return q4k_min_pair(scale_bytes, i); };
            for (int c = 0; c < NC; ++c) finish(c, sumi[c], min_pair);
        } else {
            Ints q[64];
            Scale16 scales[8];
            Ints min_pairs[4];
            for (int j = 0; j < 8; ++j) scales[j] = q4k_scale(scale_bytes, j);
            for (int i = 0; i < 4; ++i) min_pairs[i] = q4k_min_pair(scale_bytes, i);
#pragma GCC unroll 8
            for (int j = 0; j < 8; ++j) {
#pragma GCC unroll 8
                for (int t = 0; t < 8; ++t) q[8 * j + t] = U::unit(w, j, t);
            }
            for (int c = 0; c < NC; ++c) {
                Ints sumi = Ints::zero();
#pragma GCC unroll 8
                for (int j = 0; j < 8; ++j) {
                    sumi = scaled_dot<8, U::kMaxLevel>(sumi, q + 8 * j, x(c, j), scales[j]);
                }
                finish(c, sumi, [&](int i) { return min_pairs[i]; });
            }
        }
    };
    for_blocks<NG, U::kGroupBlock>(group, stride, n_blocks, one_block);
    store_sums(sums, out);
}

// The 16 sub-block scales of a Q2_K or Q3_K group block (int16 in each row's lane, Scale16), and
// per pair of sub-blocks 2i, 2i + 1 the two values that multiply the columns' 16-sums (int16
// pairs): Q2_K's mins, Q3_K's scales.
struct SubBlockScales {
    Scale16 scale[16];
    Ints pairs[8];
};

// Q2_K: byte j of each row holds sub-block j's scale (low nibble) and min (high nibble). Each
// byte is widened to its row's lane from memory (one instruction), the nibbles then taken from
// the lane. The scales come out times 4^(2 - k) for the sub-blocks of chunk 4h + k, k < 2
// (Q2KDecoded::levels).
inline SubBlockScales unpack_q2k_scales(const std::byte *bytes) {
    SubBlockScales out;
    for (int i = 0; i < 8; ++i) {
        const Ints b0 = Ints::widen_u8(load_rows(bytes + 32 * i));
        const Ints b1 = Ints::widen_u8(load_rows(bytes + 32 * i + 16));
        // Chunk i's two sub-blocks, k = i % 4: scale << 4 (k = 0), << 2 (k = 1) or as it is.
        auto scale = [&](Ints b) {
            switch (i % 4) {
                case 0:
                    return slli32(b, 4) & Ints::splat32(0xF0);
                case 1:
                    return slli32(b, 2) & Ints::splat32(0x3C);
                default:
                    return b & Ints::splat32(0x0F);
            }
        };
        out.scale[2 * i] = Scale16::of_unsigned(scale(b0));
        out.scale[2 * i + 1] = Scale16::of_unsigned(scale(b1));
        out.pairs[i] = srli32(b0, 4) | (slli32(b1, 12) & Ints::splat32(0xF0000));
    }
    return out;
}

// Q3_K: 16 6-bit scales, less 32, from 12 bytes per row: scale j's low nibble is the low (j < 8)
// or high nibble of byte j % 8, its top two bits are bits 2(j / 4), 2(j / 4) + 1 of byte 8 + j % 4.
// Bytes 0-3, 4-7 and 8-11 of the 16 rows are one vector each (16 rows per byte), so the 6-bit
// values come out four scales to a vector, 16 bytes (rows) per scale.
inline Ints q3k_six_bit(const std::byte *bytes, int g) {  // scales 4g .. 4g + 3
    const Ints m4 = Ints::splat8(0x0F), m2 = Ints::splat8(3), m32 = Ints::splat8(32);
    const Ints low = Ints::load(bytes + (g % 2 == 0 ? 0 : 64)), b8_11 = Ints::load(bytes + 128);
    const Ints nibbles = (g < 2 ? low : srli16(low, 4)) & m4;
    const Ints top = slli16((g == 0 ? b8_11 : srli16(b8_11, 2 * g)) & m2, 4);
    return sub8(nibbles | top, m32);
}
// Two scales' int16 lanes as the pairs that multiply a sub-block pair's 16-sums.
inline Ints int16_pairs(Ints first, Ints second) {
    return (first & Ints::splat32(0xFFFF)) | slli32(second, 16);
}
inline SubBlockScales unpack_q3k_scales(const std::byte *bytes) {
    SubBlockScales out;
    Ints lanes[16];
    for (int g = 0; g < 4; ++g) {
        const Ints six_bit = q3k_six_bit(bytes, g);
        for (int k = 0; k < 4; ++k) {
            lanes[4 * g + k] = Ints::widen_i8(six_bit.quarter(k));
            out.scale[4 * g + k] = Scale16::of(lanes[4 * g + k]);
        }
    }
    for (int i = 0; i < 8; ++i) out.pairs[i] = int16_pairs(lanes[2 * i], lanes[2 * i + 1]);
    return out;
}

// Q3_K, whose levels are 0..7 less 4 (the third bit from hmask): per super-block the exact
// integer sum of levels times scales, -4 * scale * 16-sum included, then one fma.
template <int NC>
void tile_q3k(const std::byte *group, size_t stride, int64_t n_blocks, const std::byte *panel,
              float *out) {
    constexpr size_t kGroupBlock = kRepackRows * sizeof(quant::BlockQ3K);
    constexpr size_t kQuants = 32 * kRepackRows, kScales = 96 * kRepackRows, kD = 108 * kRepackRows;
    const size_t col = column_block<SubBlockPairTerms>();
    const Ints low2 = Ints::splat8(3), bit2 = Ints::splat8(4);
    Floats sums[1][NC]{};
    auto one_block = [&](int g, const std::byte *w, int64_t b) LOOM_INLINE_LAMBDA {
        Floats *acc = sums[g];
        const std::byte *a = panel + size_t(b) * NC * col;
        const std::byte *terms = a + NC * (QK_K + 4);
        // Chunk `chunk` (elements 32 chunk .., sub-blocks 2 chunk, + 1) of column c, its units
        // q (an array or a callable, qgemm_simd.h's unit_at).
        auto add_chunk = [&](Ints sumi, auto q, int c, int chunk, Scale16 first_scale,
                             Scale16 second_scale) [[gnu::always_inline]] {
            const std::byte *x = a + c * QK_K + 32 * chunk;
            auto first = [&](int t) { return Ints::broadcast32(x + 4 * t); };
            auto second = [&](int t) { return Ints::broadcast32(x + 16 + 4 * t); };
            sumi = scaled_dot<4, 7>(sumi, q, first, first_scale);
            return scaled_dot<4, 7>(sumi, units_from(q, 4), second, second_scale);
        };
        // The levels are stored + 4: column c's sum ends less 4 * the scaled 16-sums (`offset`,
        // sub-blocks 2i, 2i + 1 scaled by `pairs`). dw: the block's scales, loaded after the
        // sums where these hold every register.
        auto finish = [&](int c, Ints sumi, Ints offset, Floats dw) [[gnu::always_inline]] {
            const Floats da = Floats::splat(load_f32(a + NC * QK_K + 4 * c));
            acc[c] = fmadd(Floats::from_ints(sumi - slli32(offset, 2)), dw * da, acc[c]);
        };
        auto add_offset = [&](Ints offset, Ints pairs, int c, int i) [[gnu::always_inline]] {
            return dot_s16(offset, pairs, Ints::broadcast32(terms + 4 * (8 * c + i)));
        };
        // Unit t of chunk 4h + j: bits 2j, 2j + 1 of quant unit 8h + t (v), and bit 4h + j of
        // hmask unit t (high) to bit 2 (16-bit shifts: bit 2 of a byte comes from the same byte
        // for shifts of at most 2 left or 5 right).
        auto unit = [&](Ints v, Ints high, int chunk) [[gnu::always_inline]] {
            const int j = chunk % 4;
            const Ints hb = chunk <= 2 ? slli16(high, 2 - chunk) : srli16(high, chunk - 2);
            return ((j == 0 ? v : srli16(v, 2 * j)) & low2) | (hb & bit2);
        };
        if constexpr (kUnitsInRegisters<NC>) {
            // Everything found where it is used, chunk by chunk: a block's 16 scales, 8 pairs
            // and 16 hmask and quant vectors held across it would take AVX2's registers many
            // times.
            Ints sumi[NC], offset[NC];
            for (int c = 0; c < NC; ++c) sumi[c] = offset[c] = Ints::zero();
#pragma GCC unroll 8
            for (int chunk = 0; chunk < 8; ++chunk) {
                prefetch_weights<kGroupBlock, NC, 8, kLowBitStreamAhead>(w, chunk);
                const std::byte *wc = at(w);
                const Ints six_bit = q3k_six_bit(wc + kScales, chunk / 2);
                const Ints first = Ints::widen_i8(six_bit.quarter(2 * (chunk % 2)));
                const Ints second = Ints::widen_i8(six_bit.quarter(2 * (chunk % 2) + 1));
                const Ints pairs = int16_pairs(first, second);
                auto q = [&](int t) [[gnu::always_inline]] {
                    return unit(Ints::load(wc + kQuants + size_t(8 * (chunk / 4) + t) * 64),
                                Ints::load(wc + size_t(t) * 64), chunk);
                };
                auto run = [&](auto units) [[gnu::always_inline]] {
#pragma GCC unroll 12
                    for (int c = 0; c < NC; ++c) {
                        offset[c] = add_offset(offset[c], pairs, c, chunk);
                        sumi[c] = add_chunk(sumi[c], units, c, chunk, Scale16::of(first),
                                            Scale16::of(second));
                    }
                };
                if constexpr (NC == 1) {
                    run(q);
                } else {
                    Ints units[8];
                    for (int t = 0; t < 8; ++t) units[t] = q(t);
                    run(+units);
                }
            }
            const Floats dw = Floats::load_f16(w + kD);
            for (int c = 0; c < NC; ++c) finish(c, sumi[c], offset[c], dw);
        } else {
            const SubBlockScales scales = unpack_q3k_scales(w + kScales);
            const Floats dw = Floats::load_f16(w + kD);
            Ints high[8], q[64];
            for (int t = 0; t < 8; ++t) high[t] = Ints::load(w + size_t(t) * 64);
#pragma GCC unroll 8
            for (int chunk = 0; chunk < 8; ++chunk) {
#pragma GCC unroll 8
                for (int t = 0; t < 8; ++t) {
                    const Ints v = Ints::load(w + kQuants + size_t(8 * (chunk / 4) + t) * 64);
                    q[8 * chunk + t] = unit(v, high[t], chunk);
                }
            }
            for (int c = 0; c < NC; ++c) {
                Ints offset = Ints::zero();
                for (int i = 0; i < 8; ++i) offset = add_offset(offset, scales.pairs[i], c, i);
                Ints sumi = Ints::zero();
#pragma GCC unroll 8
                for (int chunk = 0; chunk < 8; ++chunk) {
                    sumi = add_chunk(sumi, q + 8 * chunk, c, chunk, scales.scale[2 * chunk],
                                     scales.scale[2 * chunk + 1]);
                }
                finish(c, sumi, offset, dw);
            }
        }
    };
    for_blocks<1, kGroupBlock>(group, stride, n_blocks, one_block);
    store_sums(sums, out);
}

// Q2_K, Q5_K and Q6_K in the float order of ggml's AVX2 ggml_vec_dot_q2_K_q8_K, _q5_K_q8_K and
// _q6_K_q8_K, the kernels llama.cpp's x86 backends run for them without AVX-512 (its fixtures
// and llamacpp-ref come from those):
// per row 8 int32 lanes, lane m holding, for every 32-element chunk, the scaled products of its
// elements 4m .. 4m + 3; each lane goes through its own float accumulator, and the 8 are added at
// the end as ggml's hsum_float_8. `Decoded` reads one group block: levels, scales, where each
// lane starts and how a block's lanes enter the accumulators, and for formats that sum their
// mins apart (MinsApart: Q5_K's `summs`) a float per row added after the lanes.
//
// The scales multiply in 16 bits: a unit's product sum (4 * 63 * 128 at most) and a Q8_K 16-sum
// fit in int16, so VPDPWSSD (or VPMADDWD on the pair sums, scaled_dot) adds exactly sum * scale
// to the lane, one instruction instead of VPMULLD's two and an add.
template <typename Decoded>
concept MinsApart = requires {
    Decoded::kMinsApart;
};

template <typename Decoded, int NC, int NG = 1>
void tile_lanes(const std::byte *group, size_t stride, int64_t n_blocks, const std::byte *panel,
                float *out) {
    using Terms = typename Decoded::Terms;
    const size_t col = column_block<Terms>();
    Floats lanes[NG][NC][8]{};  // ggml's 8 float accumulators per row
    Floats mins[NG][MinsApart<Decoded> ? NC : 1]{};
    auto one_block = [&](int g, const std::byte *w, int64_t b) LOOM_INLINE_LAMBDA {
        auto &acc = lanes[g];
        const std::byte *a = panel + size_t(b) * NC * col;
        auto terms = [&](int c) { return a + NC * (QK_K + 4) + 4 * Terms::kCount * c; };
        const Decoded block(w);
        auto add_unit = [&](Ints lane, Ints q, int c, int chunk, int u) [[gnu::always_inline]] {
            auto x = [&](int) { return Ints::broadcast32(a + c * QK_K + 4 * (8 * chunk + u)); };
            return scaled_dot<1, Decoded::kMaxLevel>(lane, &q, x,
                                                     block.sub_scale(2 * chunk + u / 4));
        };
        auto da = [&](int c) { return load_f32(a + NC * QK_K + 4 * c); };
        if constexpr (MinsApart<Decoded>) {
            for (int c = 0; c < NC; ++c) mins[g][c] = block.add_mins(mins[g][c], terms(c), da(c));
        }
        if constexpr (NC <= kStreamColumns) {
            // Generation: one lane at a time through the 8 chunks, so that only its unit, its
            // sums and its scales are live (the integer sums are exact: the order does not change
            // them). Chunk after chunk with all 8 lanes live spilled them with AVX2's 16
            // registers: on a Zen 2 EPYC, Q6_K n = 1 in L2 14.1-15.5 GB/s that way, 21.6-22.9
            // lane by lane unrolled, 24.4-25.5 in a loop (docs/PERFORMANCE.md).
            auto run_lane = [&](int u) LOOM_INLINE_LAMBDA {
                prefetch_weights<Decoded::kGroupBlock, NC, 8, Decoded::kStreamAhead>(w, u);
                // Even and odd chunks in two sums, half as long a chain of dependent products
                // (Zen 4, Q6_K n = 1 in L2: 33.6-34.2 -> 35.5-36.6 GB/s).
                Ints even[NC], odd[NC];
                for (int c = 0; c < NC; ++c) {
                    even[c] = block.start(terms(c), u);
                    odd[c] = Ints::zero();
                }
#pragma GCC unroll 8
                for (int chunk = 0; chunk < 8; ++chunk) {
                    const Ints q = block.levels(chunk, u);
                    for (int c = 0; c < NC; ++c) {
                        // Chunk after chunk: GCC would re-associate the lane's sum and spill the
                        // products (Zen 2, Q6_K n = 1 in L2: 17.7-18.1 GB/s, 18.3-18.8 this way).
                        Ints &sum = chunk % 2 == 0 ? even[c] : odd[c];
                        sum = add_unit(sum, q, c, chunk, u);
                        settle(sum);
                    }
                }
                for (int c = 0; c < NC; ++c)
                    acc[c][u] = block.finish(acc[c][u], even[c] + odd[c], terms(c), u, da(c));
            };
            // The lanes in a loop, so that the compiler does not interleave them again, except
            // where AVX-512's 32 registers hold a block's unrolled lanes and the format gains by
            // it: on a Zen 4 EPYC, Q6_K n = 1 in L2 27.3-32.1 -> 35.5-36.6 GB/s (from memory, the
            // same or faster within the host's swings); Q5_K in L2 31.3-33.0 -> 30.4-30.6, and
            // Q2_K's generation unrolled (its levels looked up pre-scaled) lost 3-5 points of the
            // read loop (docs/PERFORMANCE.md).
            if constexpr (LOOM_QGEMM_512 && Decoded::kUnrolledLanes) {
#pragma GCC unroll 8
                for (int u = 0; u < 8; ++u) run_lane(u);
            } else {
#pragma GCC unroll 1
                for (int u = 0; u < 8; ++u) run_lane(u);
            }
        } else {
            // Wide panels: the block is decoded once into L1, then each column's 8 lanes run
            // through it (8 lanes per column would not fit the registers for 12 columns).
            Ints q[64];
#pragma GCC unroll 8
            for (int chunk = 0; chunk < 8; ++chunk) {
#pragma GCC unroll 8
                for (int u = 0; u < 8; ++u) q[8 * chunk + u] = block.levels(chunk, u);
            }
            for (int c = 0; c < NC; ++c) {
#pragma GCC unroll 8
                for (int u = 0; u < 8; ++u) {
                    Ints lane = block.start(terms(c), u);
#pragma GCC unroll 8
                    for (int chunk = 0; chunk < 8; ++chunk)
                        lane = add_unit(lane, q[8 * chunk + u], c, chunk, u);
                    acc[c][u] = block.finish(acc[c][u], lane, terms(c), u, da(c));
                }
            }
        }
    };
    for_blocks<NG, Decoded::kGroupBlock>(group, stride, n_blocks, one_block);
    for (int g = 0; g < NG; ++g) {
        for (int c = 0; c < NC; ++c) {
            const Floats *acc = lanes[g][c];
            Floats sum =
                ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
            if constexpr (MinsApart<Decoded>) sum = sum + mins[g][c];
            sum.store(out + (g * NC + c) * kGroupRows);
        }
    }
}

// A Q2_K group block for tile_lanes: unit u of chunk 4h + k is bits 2k, 2k + 1 of quant unit
// 8h + u. Lanes start at 0; per block, lane m's mins term (min * 16-sum of sub-blocks 2m and
// 2m + 1) enters first, times -dmin_w * d_a, then the lane times d_w * d_a.
// The levels stay where they are in their byte, masked but not shifted down (shifted 2 for k = 3,
// to bits 4-5), so that each unit's products come out times 4^k (k < 3) or 16; the scales of
// chunks k = 0 and 1 are times 16 and 4 (unpack_q2k_scales), so that every scaled product is 16
// times its value and the lane's exact sum is shifted down by 4 at the end: 2 shifts per lane and
// super-block instead of 6.
struct Q2KDecoded {
    using Terms = SubBlockPairTerms;
    static constexpr size_t kGroupBlock = kRepackRows * sizeof(quant::BlockQ2K);
    static constexpr size_t kQuants = 16 * kRepackRows, kD = 80 * kRepackRows,
                            kDmin = 82 * kRepackRows;
    static constexpr int kMaxLevel = 3 << 4;
    static constexpr size_t kStreamAhead = kLowBitStreamAhead;
    static constexpr bool kUnrolledLanes = false;

    const std::byte *w;
    SubBlockScales scales;
    Floats d, dmin;

    explicit Q2KDecoded(const std::byte *group_block)
        : w(group_block),
          scales(unpack_q2k_scales(group_block)),
          d(Floats::load_f16(group_block + kD)),
          dmin(Floats::load_f16(group_block + kDmin)) {}
    Ints levels(int chunk, int u) const {
        const Ints v = Ints::load(w + kQuants + size_t(8 * (chunk / 4) + u) * 64);
        switch (chunk % 4) {
            case 0:
                return v & Ints::splat8(0x03);
            case 1:
                return v & Ints::splat8(0x0C);
            case 2:
                return v & Ints::splat8(0x30);
            default:
                return srli16(v, 2) & Ints::splat8(0x30);
        }
    }
    Scale16 sub_scale(int sub) const { return scales.scale[sub]; }
    static Ints start(const std::byte *, int) { return Ints::zero(); }
    Floats finish(Floats acc, Ints lane, const std::byte *terms, int m, float da) const {
        const Ints mins = dot_s16(Ints::zero(), scales.pairs[m], Ints::broadcast32(terms + 4 * m));
        acc = fmadd(Floats::from_ints(mins), dmin * Floats::splat(-da), acc);
        return fmadd(Floats::from_ints(srai32(lane, 4)), d * Floats::splat(da), acc);
    }
};

// A Q5_K group block for tile_lanes (Q4KUnits' layout): unit u of chunk j is unit u of sub-block
// j, whose scale multiplies it. Lanes start at 0 and enter with d_w * d_a; the mins (min_j times
// the 32-sum of sub-block j) are summed apart, times -dmin_w * d_a in one fused step per block, as
// ggml's `summs += dmin * sum` compiles in llama.cpp's x86 builds.
struct Q5KDecoded {
    using Terms = Q4KTerms;
    using Units = Q4KUnits<true>;
    static constexpr bool kMinsApart = true;
    static constexpr size_t kGroupBlock = Units::kGroupBlock;
    static constexpr int kMaxLevel = Units::kMaxLevel;
    static constexpr size_t kStreamAhead = qgemm::kStreamAhead;
    static constexpr bool kUnrolledLanes = false;

    const std::byte *w;
    Scale16 scale[8];

    explicit Q5KDecoded(const std::byte *group_block) : w(group_block) {
        for (int j = 0; j < 8; ++j) scale[j] = q4k_scale(w + Units::kScales, j);
    }
    Ints levels(int chunk, int u) const { return Units::unit(w, chunk, u); }
    Scale16 sub_scale(int sub) const {
        return scale[sub / 2];
    }  // (tile_lanes counts 16-element
       // sub-blocks)
    static Ints start(const std::byte *, int) { return Ints::zero(); }
    Floats finish(Floats acc, Ints lane, const std::byte *, int, float da) const {
        return fmadd(Floats::from_ints(lane), Floats::load_f16(w) * Floats::splat(da), acc);
    }
    Floats add_mins(Floats summs, const std::byte *terms, float da) const {
        Ints m = Ints::zero();
        for (int i = 0; i < 4; ++i) {
            m = dot_s16(m, q4k_min_pair(w + Units::kScales, i), Ints::broadcast32(terms + 4 * i));
        }
        const Floats dmin = Floats::load_f16(w + 2 * kRepackRows);
        return fmadd(Floats::from_ints(m), dmin * Floats::splat(-da), summs);
    }
};

// A Q6_K group block for tile_lanes: unit u of chunk 4h + qq (elements 128h + 32qq + 4u ..) has
// its low bits in ql unit 16h + 8(qq % 2) + u (high nibble when qq >= 2), bits 4-5 in bits 2qq,
// 2qq + 1 of qh unit 8h + u (placed as repack.cpp's q6k_read_order). Its levels are q + 32: lane m
// starts at -32 * (the scaled 16-sums of sub-blocks 2m and 2m + 1), as ggml's kernel subtracts
// them; one fma with d_w * d_a per block. The panel stores each 16-sum in the low half of its int32
// (zero above), which either form of Scale16 multiplies exactly.
struct Q6KDecoded {
    using Terms = Q6KTerms;
    static constexpr size_t kGroupBlock = kRepackRows * sizeof(quant::BlockQ6K);
    static constexpr size_t kScales = 0, kD = 16 * kRepackRows, kLanes = kD + 2 * kRepackRows;
    static constexpr size_t kHalfBytes = 3 * 64;  // a lane's half: ql unit, qh unit, ql unit
    static constexpr size_t kLaneBytes = 2 * kHalfBytes;
    // Lane u's ql unit 16h + 8(qq % 2) + u, and its qh unit 8h + u.
    static constexpr size_t ql_at(int h, int qq, int u) {
        return kLanes + kLaneBytes * size_t(u) + kHalfBytes * size_t(h) + (qq % 2 == 0 ? 0 : 128);
    }
    static constexpr size_t qh_at(int h, int u) {
        return kLanes + kLaneBytes * size_t(u) + kHalfBytes * size_t(h) + 64;
    }
    static constexpr int kMaxLevel = 63;
    // Nearer than qgemm.h's distance, as measured on a Zen 2 EPYC (1 GiB n = 1, two threads,
    // alternating, 5 rounds, medians): 2 KiB 28.3 GB/s, 3 KiB 29.7, 4 KiB 27.3, where the Q4_K
    // and Q8_0 tiles lost 5-15 % at 2 KiB, hence a distance per format (docs/PERFORMANCE.md).
    static constexpr size_t kStreamAhead = 3072;
    static constexpr bool kUnrolledLanes = true;

    const std::byte *w;
    Scale16 scale[16];  // each in the low 16 bits of its row's lane
    Floats d;

    explicit Q6KDecoded(const std::byte *group_block)
        : w(group_block), d(Floats::load_f16(group_block + kD)) {
        for (int sub = 0; sub < 16; ++sub) {
            scale[sub] = Scale16::of(Ints::widen_i8(load_rows(w + kScales + 16 * sub)));
        }
    }
    Ints levels(int chunk, int u) const {
        const int h = chunk / 4, qq = chunk % 4;
        const Ints lo = Ints::load(w + ql_at(h, qq, u));
        const Ints hi = Ints::load(w + qh_at(h, u));
        const Ints hi45 = qq == 0   ? slli16(hi, 4)
                          : qq == 1 ? slli16(hi, 2)
                          : qq == 2 ? hi
                                    : srli16(hi, 2);
        const Ints lo4 = (qq < 2 ? lo : srli16(lo, 4)) & Ints::splat8(0x0F);
        return lo4 | (hi45 & Ints::splat8(0x30));
    }
    Scale16 sub_scale(int sub) const { return scale[sub]; }
    Ints start(const std::byte *terms, int m) const {
        Ints t = dot_s16(Ints::zero(), Ints::broadcast32(terms + 4 * (2 * m)), scale[2 * m].v);
        t = dot_s16(t, Ints::broadcast32(terms + 4 * (2 * m + 1)), scale[2 * m + 1].v);
        return Ints::zero() - slli32(t, 5);
    }
    Floats finish(Floats acc, Ints lane, const std::byte *, int, float da) const {
        return fmadd(Floats::from_ints(lane), d * Floats::splat(da), acc);
    }
};

template <size_t... I>
constexpr std::array<Tile, kPanel> q4k_tiles(std::index_sequence<I...>) {
    return {tile_q4k<int(I) + 1>...};
}
template <size_t... I>
constexpr std::array<Tile, kPanel> q3k_tiles(std::index_sequence<I...>) {
    return {tile_q3k<int(I) + 1>...};
}
template <typename Decoded, size_t... I>
constexpr std::array<Tile, kPanel> lane_tiles(std::index_sequence<I...>) {
    return {tile_lanes<Decoded, int(I) + 1>...};
}
constexpr auto kPanelWidths = std::make_index_sequence<kPanel>();

// Every K-quant takes Q8_K columns, with its own terms per block.
template <typename Terms>
constexpr Format q8k_format(std::array<Tile, kPanel> tiles, Tile streams) {
    return {.act_type = DType::Q8_K,
            .block = QK_K,
            .extra = Terms::kCount,
            .prepare = prepare<Terms>,
            .tiles = tiles,
            .streams = streams};
}

}  // namespace

// Q2_K and Q3_K compute more slowly than one stream reads (docs/PERFORMANCE.md): a second stream
// only adds misses (Zen 2, 1 GiB, two threads: Q2_K 19.0 -> 16.1 GB/s, Q3_K 21.2 -> 18.4).
const Format kFormatQ2_K =
    q8k_format<SubBlockPairTerms>(lane_tiles<Q2KDecoded>(kPanelWidths), nullptr);
const Format kFormatQ3_K = q8k_format<SubBlockPairTerms>(q3k_tiles(kPanelWidths), nullptr);
const Format kFormatQ4_K =
    q8k_format<Q4KTerms>(q4k_tiles(kPanelWidths), tile_q4k<1, kStreamGroups>);
const Format kFormatQ5_K = q8k_format<Q4KTerms>(lane_tiles<Q5KDecoded>(kPanelWidths),
                                                tile_lanes<Q5KDecoded, 1, kStreamGroups>);
const Format kFormatQ6_K = q8k_format<Q6KTerms>(lane_tiles<Q6KDecoded>(kPanelWidths),
                                                tile_lanes<Q6KDecoded, 1, kStreamGroups>);
#else
const Format kFormatQ2_K{}, kFormatQ3_K{}, kFormatQ4_K{}, kFormatQ5_K{}, kFormatQ6_K{};
#endif

}  // namespace loom::cpu::inline LOOM_ISA::qgemm
