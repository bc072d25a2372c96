// Tiles for repacked MXFP4 and IQ4_NL weights (core/quant/lut4_formats.h) against Q8_0 columns
// (core/cpu/qgemm.h).
//
// A group block (16 rows, one 32-element block each) is the 16 rows' scales side by side (MXFP4:
// one E8M0 byte each; IQ4_NL: one F16 each), then the quants as 4-byte units of the 16 rows: unit t
// holds elements 4t..4t+3 in its low nibbles and 16+4t..16+4t+3 in its high ones
// (core/cpu/repack.h).
//
// VPERMB (VPSHUFB without AVX512-VBMI) looks each code up in the format's table shifted to
// unsigned bytes (value + offset), as VPDPBUSD wants one side unsigned; the panel's per-block term
// -offset * sum(a) starts each lane, so a lane ends a block with its exact integer sum. Then acc =
// fma(sum, d_w * d_a, acc), block after block: the arithmetic of llama.cpp's x86 repacked kernels
// for these formats (gemv/gemm_q4_b32_8x8_q8_0_lut_avx), so a product matches llama.cpp's bit for
// bit. Builds without AVX-512 VNNI compute the same exact sums with the Ints of qgemm_simd.h:
// MXFP4 from its unsigned values (0 .. 24, which VPMADDUBSW multiplies exactly), IQ4_NL from its
// signed ones, |q| * sign(a, q), as ggml's AVX2 kernels do (unsigned with VNNI, as above).
#include <cstring>
#include <utility>

#include "core/cpu/qgemm.h"
#include "core/cpu/qgemm_q8_0_panel.h"
#include "core/cpu/qgemm_simd.h"
#include "core/quant/lut4_formats.h"
#include "loom/fp16.h"

namespace loom::cpu::inline LOOM_ISA::qgemm {

#if LOOM_INTEGER_KERNELS
namespace {

using q8_0_panel::kBlock;
using q8_0_panel::kColumnBlock;
using q8_0_panel::prepare;
static_assert(quant::kLut4Block == kBlock, "MXFP4 and IQ4_NL blocks are Q8_0 blocks long");

#if LOOM_VNNI512_KERNELS

// The table plus kOffset, as unsigned bytes.
template <int kOffset>
NibbleTable unsigned_table(const int8_t *values) {
    uint8_t shifted[16];
    for (int i = 0; i < 16; ++i) shifted[i] = uint8_t(values[i] + kOffset);
    return NibbleTable(shifted);
}

struct Mxfp4 {
    static constexpr size_t kBlockBytes = sizeof(quant::BlockMXFP4);
    static constexpr size_t kScaleBytes = 1;  // per row, before the quants
    static constexpr int kOffset = 12;        // -12 is the table's least value
    static NibbleTable table() { return unsigned_table<kOffset>(quant::kValuesMxfp4); }
    // The 16 rows' scales 2^(e - 128) (quant::e8m0_half_to_f32) as their exponents e - 128;
    // times(w, d_a) = d_a * 2^(e - 128) by VSCALEFPS, which rounds that product as a multiply
    // would (it is exact but for subnormal results).
    static __m512 scales(const std::byte *w) {
        const __m512i e =
            _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(w)));
        return _mm512_cvtepi32_ps(_mm512_sub_epi32(e, _mm512_set1_epi32(128)));
    }
    static __m512 times(__m512 scales, float d_a) {
        return _mm512_scalef_ps(_mm512_set1_ps(d_a), scales);
    }
};

struct Iq4nl {
    static constexpr size_t kBlockBytes = sizeof(quant::BlockIQ4NL);
    static constexpr size_t kScaleBytes = 2;  // F16 d per row
    static constexpr int kOffset = 128;       // the table's values are -127 .. 113
    static NibbleTable table() { return unsigned_table<kOffset>(quant::kValuesIq4nl); }
    static __m512 scales(const std::byte *w) { return load_f16x16(w); }
    static __m512 times(__m512 scales, float d_a) {
        return _mm512_mul_ps(scales, _mm512_set1_ps(d_a));
    }
};

template <typename F, int NC, int NG = 1>
void tile(const std::byte *group, size_t stride, int64_t n_blocks, const std::byte *panel,
          float *out) {
    constexpr size_t kGroupBlock = kRepackRows * F::kBlockBytes;
    constexpr size_t kQuants = kRepackRows * F::kScaleBytes;
    const NibbleTable table = F::table();
    __m512 sums[NG][NC]{};
    auto one_block = [&](int g, const std::byte *w, int64_t b) LOOM_INLINE_LAMBDA {
        __m512 *acc = sums[g];
        prefetch_weights<kGroupBlock, NC>(w);
        const std::byte *a = panel + size_t(b) * NC * kColumnBlock;
        const __m512 dw = F::scales(w);
        __m512i q[8];  // q[t]: elements 4t..4t+3 of the 16 rows, as table value + offset
        for (int t = 0; t < 4; ++t) {
            const __m512i v = load512(w + kQuants + 64 * t);
            q[t] = table.low(v);
            q[t + 4] = table.high(v);
        }
#pragma GCC unroll 12
        for (int c = 0; c < NC; ++c) {
            // Generation: two chains of 4 for the latency (integer sums: the split changes no
            // bit); wide panels have independent columns enough, and no registers to spare.
            __m512i sum = broadcast_i32(a + NC * (kBlock + 4) + 4 * c);
            __m512i sum_high = _mm512_setzero_si512();
#pragma GCC unroll 4
            for (int t = 0; t < 4; ++t) {
                sum = _mm512_dpbusd_epi32(sum, q[t], broadcast_i32(a + c * kBlock + 4 * t));
                __m512i &high = NC <= kStreamColumns ? sum_high : sum;
                high =
                    _mm512_dpbusd_epi32(high, q[t + 4], broadcast_i32(a + c * kBlock + 16 + 4 * t));
            }
            if constexpr (NC <= kStreamColumns) sum = _mm512_add_epi32(sum, sum_high);
            const __m512 scale = F::times(dw, load_f32(a + NC * kBlock + 4 * c));
            acc[c] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), scale, acc[c]);
        }
    };
    for_blocks<NG, kGroupBlock>(group, stride, n_blocks, one_block);
    store_sums(sums, out);
}
#else
struct Mxfp4 {
    static constexpr size_t kBlockBytes = sizeof(quant::BlockMXFP4);
    static constexpr size_t kScaleBytes = 1;  // per row, before the quants
    static constexpr int kOffset = 12;        // -12 is the table's least value
    static constexpr int kMaxLevel = 24;
    static CodeTable table() { return CodeTable(quant::kValuesMxfp4, kOffset); }
    // The 16 rows' 2^(e - 128) (quant::e8m0_half_to_f32): the bits (e - 1) << 23 for e >= 2, the
    // subnormals (e + 1) << 21 for e < 2; the larger of the two as int32 is the one that applies.
    static Floats scales(const std::byte *w) {
        const Ints e = Ints::widen_u8(_mm_loadu_si128(reinterpret_cast<const __m128i *>(w)));
        const Ints one = Ints::splat32(1);
        return Floats::from_bits(max32(slli32(e - one, 23), slli32(e + one, 21)));
    }
};

struct Iq4nl {
    static constexpr size_t kBlockBytes = sizeof(quant::BlockIQ4NL);
    static constexpr size_t kScaleBytes = 2;  // F16 d per row
    // The table's values are -127 .. 113: unsigned (+ 128) for VPDPBUSD, else signed.
    static constexpr int kOffset = kVnni ? 128 : 0;
    static constexpr int kMaxLevel = 241;
    static CodeTable table() { return CodeTable(quant::kValuesIq4nl, kOffset); }
    static Floats scales(const std::byte *w) { return Floats::load_f16(w); }
};

template <typename F, int NC, int NG = 1>
void tile(const std::byte *group, size_t stride, int64_t n_blocks, const std::byte *panel,
          float *out) {
    constexpr size_t kGroupBlock = kRepackRows * F::kBlockBytes;
    constexpr size_t kQuants = kRepackRows * F::kScaleBytes;
    const CodeTable table = F::table();
    Floats sums[NG][NC]{};
    auto one_block = [&](int g, const std::byte *w, int64_t b) LOOM_INLINE_LAMBDA {
        Floats *acc = sums[g];
        prefetch_weights<kGroupBlock, NC>(w);
        const std::byte *a = panel + size_t(b) * NC * kColumnBlock;
        // Unit t: elements 4t..4t+3 of the 16 rows, as table value + offset.
        auto unit = [&](const std::byte *wb, int t) [[gnu::always_inline]] {
            const Ints v = Ints::load(wb + kQuants + 64 * (t % 4));
            return t < 4 ? table.low(v) : table.high(v);
        };
        const Floats dw = F::scales(w);
        auto column = [&](int c, auto q) [[gnu::always_inline]] {
            auto x = [&](int t) { return Ints::broadcast32(a + c * kBlock + 4 * t); };
            Ints sum = Ints::broadcast32(a + NC * (kBlock + 4) + 4 * c);  // -offset * sum(a)
            if constexpr (F::kOffset > 0) {
                sum = dot_units<8, F::kMaxLevel>(sum, q, x);
            } else {
                sum = dot_signed_units<8>(sum, q, x);
            }
            const Floats scale = dw * Floats::splat(load_f32(a + NC * kBlock + 4 * c));
            acc[c] = fmadd(Floats::from_ints(sum), scale, acc[c]);
        };
        for_columns<NC>(w, unit, column);
    };
    for_blocks<NG, kGroupBlock>(group, stride, n_blocks, one_block);
    store_sums(sums, out);
}
#endif

template <typename F, size_t... I>
constexpr std::array<Tile, kPanel> tiles(std::index_sequence<I...>) {
    return {tile<F, int(I) + 1>...};
}
constexpr auto kPanelWidths = std::make_index_sequence<kPanel>();

}  // namespace

const Format kFormatMXFP4{.act_type = DType::Q8_0,
                          .block = kBlock,
                          .extra = 1,
                          .prepare = prepare<Mxfp4::kOffset>,
                          .tiles = tiles<Mxfp4>(kPanelWidths),
                          .streams = tile<Mxfp4, 1, kStreamGroups>};
const Format kFormatIQ4_NL{.act_type = DType::Q8_0,
                           .block = kBlock,
                           .extra = 1,
                           .prepare = prepare<Iq4nl::kOffset>,
                           .tiles = tiles<Iq4nl>(kPanelWidths),
                           .streams = tile<Iq4nl, 1, kStreamGroups>};
#else
const Format kFormatMXFP4{}, kFormatIQ4_NL{};
#endif

}  // namespace loom::cpu::inline LOOM_ISA::qgemm
