// Tiles for repacked IQ4_XS weights against Q8_K columns (core/cpu/qgemm.h).
//
// A group block (16 rows, one 256-element super-block each) keeps the fields of the file's block
// side by side for the 16 rows (core/cpu/repack.h):
//   d[16] F16 | scales_h[16] u16 | scales_l: 4 bytes x 16 rows | 32 quant units x 64 bytes
// Unit 4 ib + t holds elements 4t.. of sub-block ib in its low nibbles and 16 + 4t.. in its high
// ones. VPERMB (or VPSHUFB) looks each code up in the table shifted by 128 to unsigned bytes
// (VPDPBUSD's unsigned side); the panel's per-sub-block term -128 * sum(a) starts each sub-block's
// sum, which then is that sub-block's exact integer dot product. Its 6-bit scale multiplies it in
// integers (VPMULLD), so a lane ends the super-block with its exact sum, and
//   acc = fma(sum, d_w * d_a, acc)
// once per super-block: fewer roundings than llama.cpp's AVX2 vec_dot (8 lanes summed in float
// at the end), whose results differ from these by float rounding only. Builds without AVX-512
// VNNI compute the same exact sums with the Ints of qgemm_simd.h: without VNNI from the signed
// values, each unit's pair sums |q| * sign(a, q) times the scale by VPMADDWD.
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/cpu/qgemm.h"
#include "core/cpu/qgemm_simd.h"
#include "core/quant/lut4_formats.h"

namespace loom::cpu::inline LOOM_ISA::qgemm {

#if LOOM_INTEGER_KERNELS
namespace {

using quant::QK_K;
constexpr int kSub = QK_K / quant::kLut4Block;  // sub-blocks per super-block
// The table's values are -127 .. 113: unsigned (+ 128) for VPDPBUSD, else signed.
constexpr int kOffset = kVnni ? 128 : 0;
constexpr size_t kColumnBlock =
    QK_K + 4 + 4 * kSub;  // quants, d_a, -kOffset * sum(a) per sub-block

void prepare(const void *act, int64_t n_blocks, int w, int slot, std::byte *panel) {
    const auto *blocks = static_cast<const quant::BlockQ8K *>(act);
    for (int64_t b = 0; b < n_blocks; ++b) {
        const quant::BlockQ8K &y = blocks[b];
        std::byte *p = panel + size_t(b) * size_t(w) * kColumnBlock;
        std::memcpy(p + slot * QK_K, y.qs, QK_K);
        std::memcpy(p + w * QK_K + slot * 4, &y.d, 4);
        int32_t terms[kSub];
        for (int ib = 0; ib < kSub; ++ib) {
            terms[ib] = -kOffset * (int32_t(y.bsums[2 * ib]) + y.bsums[2 * ib + 1]);
        }
        std::memcpy(p + w * (QK_K + 4) + slot * sizeof terms, terms, sizeof terms);
    }
}

#if LOOM_VNNI512_KERNELS
// The 16 rows' sub-block scales, ls - 32, as int32 lanes (quant::iq4xs_scale).
void unpack_scales(const std::byte *w, __m512i *scale) {
    constexpr size_t kHigh = 2 * kRepackRows, kLow = 4 * kRepackRows;
    const __m512i high =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(w + kHigh)));
    const __m512i low4 = _mm512_set1_epi32(0x0F), two = _mm512_set1_epi32(3);
    const __m512i bias = _mm512_set1_epi32(32);
    for (int i = 0; i < kSub / 2; ++i) {
        const __m512i low = _mm512_cvtepu8_epi32(
            _mm_loadu_si128(reinterpret_cast<const __m128i *>(w + kLow + 16 * i)));
        for (int h = 0; h < 2; ++h) {
            const int ib = 2 * i + h;
            const __m512i l = _mm512_and_si512(_mm512_srli_epi32(low, 4 * h), low4);
            const __m512i hi = _mm512_and_si512(_mm512_srli_epi32(high, 2 * ib), two);
            scale[ib] = _mm512_sub_epi32(_mm512_or_si512(l, _mm512_slli_epi32(hi, 4)), bias);
        }
    }
}

template <int NC, int NG = 1>
void tile(const std::byte *group, size_t stride, int64_t n_blocks, const std::byte *panel,
          float *out) {
    constexpr size_t kGroupBlock = kRepackRows * sizeof(quant::BlockIQ4XS);
    constexpr size_t kQuants = 8 * kRepackRows;
    uint8_t shifted[16];
    for (int i = 0; i < 16; ++i) shifted[i] = uint8_t(quant::kValuesIq4nl[i] + kOffset);
    const NibbleTable table(shifted);
    __m512 sums[NG][NC]{};
    auto one_block = [&](int g, const std::byte *w, int64_t b) LOOM_INLINE_LAMBDA {
        __m512 *acc = sums[g];
        const std::byte *a = panel + size_t(b) * NC * kColumnBlock;
        __m512i scale[kSub];
        unpack_scales(w, scale);
        __m512i total[NC];
        for (int c = 0; c < NC; ++c) total[c] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int ib = 0; ib < kSub; ++ib) {
            prefetch_weights<kGroupBlock, NC, kSub>(w, ib);
            __m512i q[8];  // q[t], q[t + 4]: elements 4t.. and 16 + 4t.. of sub-block ib
#pragma GCC unroll 4
            for (int t = 0; t < 4; ++t) {
                const __m512i v = load512(w + kQuants + size_t(4 * ib + t) * 64);
                q[t] = table.low(v);
                q[t + 4] = table.high(v);
            }
#pragma GCC unroll 12
            for (int c = 0; c < NC; ++c) {
                const std::byte *qa = a + c * QK_K + 32 * ib;
                // Generation: two chains of 4 for the latency (integer sums: the split changes
                // no bit); wide panels have independent columns enough, and no registers to
                // spare.
                __m512i s = broadcast_i32(a + NC * (QK_K + 4) + 4 * (kSub * c + ib));
                __m512i s_high = _mm512_setzero_si512();
#pragma GCC unroll 4
                for (int t = 0; t < 4; ++t) {
                    s = _mm512_dpbusd_epi32(s, q[t], broadcast_i32(qa + 4 * t));
                    __m512i &high = NC <= kStreamColumns ? s_high : s;
                    high = _mm512_dpbusd_epi32(high, q[t + 4], broadcast_i32(qa + 16 + 4 * t));
                }
                if constexpr (NC <= kStreamColumns) s = _mm512_add_epi32(s, s_high);
                total[c] = _mm512_add_epi32(total[c], _mm512_mullo_epi32(s, scale[ib]));
            }
        }
        const __m512 dw = load_f16x16(w);
        for (int c = 0; c < NC; ++c) {
            const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(load_f32(a + NC * QK_K + 4 * c)));
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(total[c]), d, acc[c]);
        }
    };
    for_blocks<NG, kGroupBlock>(group, stride, n_blocks, one_block);
    store_sums(sums, out);
}
#else
// The 16 rows' scale of sub-block ib, ls - 32, as int32 lanes (quant::iq4xs_scale).
inline Ints sub_block_scale(const std::byte *w, int ib) {
    constexpr size_t kHigh = 2 * kRepackRows, kLow = 4 * kRepackRows;
    const Ints high = Ints::widen_u16(w + kHigh);
    const Ints low = Ints::widen_u8(
        _mm_loadu_si128(reinterpret_cast<const __m128i *>(w + kLow + 16 * (ib / 2))));
    const Ints l = srli32(low, 4 * (ib % 2)) & Ints::splat32(0x0F);
    const Ints hi = srli32(high, 2 * ib) & Ints::splat32(3);
    return (l | slli32(hi, 4)) - Ints::splat32(32);
}

template <int NC, int NG = 1>
void tile(const std::byte *group, size_t stride, int64_t n_blocks, const std::byte *panel,
          float *out) {
    constexpr size_t kGroupBlock = kRepackRows * sizeof(quant::BlockIQ4XS);
    constexpr size_t kQuants = 8 * kRepackRows;
    using Unit = std::conditional_t<kVnni, Ints, SignedUnit>;  // a unit's levels as multiplied
    const CodeTable table(quant::kValuesIq4nl, kOffset);
    Floats sums[NG][NC]{};
    auto one_block = [&](int g, const std::byte *w, int64_t b) LOOM_INLINE_LAMBDA {
        Floats *acc = group_sums(sums, g);
        const std::byte *a = panel + size_t(b) * NC * kColumnBlock;
        // Unit t of sub-block ib: elements 4t.. (t < 4, low nibbles) or 16 + 4(t - 4).. (high).
        auto unit = [&](const std::byte *w, int ib, int t) [[gnu::always_inline]] {
            const Ints v = Ints::load(w + kQuants + size_t(4 * ib + t % 4) * 64);
            const Ints q = t < 4 ? table.low(v) : table.high(v);
            if constexpr (kVnni) {
                return q;
            } else {
                return SignedUnit::of(q);
            }
        };
        // Sub-block ib of column c, its scale applied: with VNNI from the unsigned units (the
        // panel's term takes the offset out), else from the signed ones, each unit's pair sums
        // times the scale (Scale16) by VPMADDWD.
        auto add_sub_block = [&](Ints total, auto q, int c, int ib,
                                 Ints scale) [[gnu::always_inline]] {
            const std::byte *qa = a + c * QK_K + 32 * ib;
            auto x = [&](int t) { return Ints::broadcast32(qa + 4 * t); };
            if constexpr (kVnni) {
                Ints s = Ints::broadcast32(a + NC * (QK_K + 4) + 4 * (kSub * c + ib));
                s = dot_units<8, 241>(s, q, x);
                return total + mullo32(s, scale);
            } else {
                const Scale16 scale16 = Scale16::of(scale);
#pragma GCC unroll 8
                for (int t = 0; t < 8; ++t) {
                    total = dot_s16(total, signed_pair_sums(unit_at(q, t), x(t)), scale16.v);
                    settle(total);  // in this order (qgemm_simd.h's pair_sums)
                }
                return total;
            }
        };
        auto finish = [&](int c, Ints total) [[gnu::always_inline]] {
            const Floats d = Floats::load_f16(w) * Floats::splat(load_f32(a + NC * QK_K + 4 * c));
            acc[c] = fmadd(Floats::from_ints(total), d, acc[c]);
        };
        if constexpr (kUnitsInRegisters<NC>) {
            Ints total[NC];
            for (int c = 0; c < NC; ++c) total[c] = Ints::zero();
#pragma GCC unroll 8
            for (int ib = 0; ib < kSub; ++ib) {
                prefetch_weights<kGroupBlock, NC, kSub>(w, ib);
                // The scale and (one column) each unit found where they are used: a block's 8
                // scales, or a sub-block's 8 units, held would take AVX2's registers.
                const std::byte *wb = at(w);
                const Ints scale = sub_block_scale(wb, ib);
                if constexpr (NC == 1) {
                    auto q = [&](int t) { return unit(wb, ib, t); };
                    total[0] = add_sub_block(total[0], q, 0, ib, scale);
                } else {
                    Unit q[8];
#pragma GCC unroll 8
                    for (int t = 0; t < 8; ++t) q[t] = unit(wb, ib, t);
#pragma GCC unroll 12
                    for (int c = 0; c < NC; ++c) {
                        total[c] = add_sub_block(total[c], +q, c, ib, scale);
                    }
                }
            }
            for (int c = 0; c < NC; ++c) finish(c, total[c]);
        } else {
            Unit q[8 * kSub];
            Ints scale[kSub];
#pragma GCC unroll 8
            for (int ib = 0; ib < kSub; ++ib) {
                scale[ib] = sub_block_scale(w, ib);
#pragma GCC unroll 8
                for (int t = 0; t < 8; ++t) q[8 * ib + t] = unit(w, ib, t);
            }
            for (int c = 0; c < NC; ++c) {
                Ints total = Ints::zero();
#pragma GCC unroll 8
                for (int ib = 0; ib < kSub; ++ib) {
                    total = add_sub_block(total, &q[8 * ib], c, ib, scale[ib]);
                }
                finish(c, total);
            }
        }
    };
    for_blocks<NG, kGroupBlock>(group, stride, n_blocks, one_block);
    store_sums(sums, out);
}
#endif

template <size_t... I>
constexpr std::array<Tile, kPanel> tiles(std::index_sequence<I...>) {
    return {tile<int(I) + 1>...};
}

}  // namespace

const Format kFormatIQ4_XS{.act_type = DType::Q8_K,
                           .block = QK_K,
                           .extra = kSub,
                           .prepare = prepare,
                           .tiles = tiles(std::make_index_sequence<kPanel>()),
                           .streams = tile<1, kStreamGroups>};
#else
const Format kFormatIQ4_XS{};
#endif

}  // namespace loom::cpu::inline LOOM_ISA::qgemm
