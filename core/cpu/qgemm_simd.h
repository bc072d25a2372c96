#pragma once
// The vectors of the integer tiles (qgemm_legacy.cpp, qgemm_k.cpp): a group's 16 rows as 16 int32
// lanes (or 64 bytes, 4 per row), and their 16 float sums. One AVX-512 register each, or two AVX2
// registers (rows 0-7, rows 8-15), so one tile source serves both. Every operation is exact
// integer arithmetic or the same float operation per lane on either width, so a tile's results do
// not depend on which one the build has.
//
// Below them, the AVX-512 VNNI helpers of the table-indexed tiles (qgemm_lut4.cpp,
// qgemm_iq4xs.cpp), whose unsigned bytes reach 241 and so need VPDPBUSD itself.
#include <cstring>
#include <type_traits>

#include "core/cpu/qgemm.h"
#include "core/cpu/repack.h"
#include "core/isa.h"

#if LOOM_INTEGER_KERNELS
#include <immintrin.h>
// GCC 12's AVX-512 headers start some conversions (vcvtph2ps, vpmovzx) from an "undefined"
// vector (__Y) and then warn that it is or may be used uninitialized; it is not.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace loom::cpu::inline LOOM_ISA::qgemm {

#if LOOM_X86_AVX512BW
#define LOOM_QGEMM_512 1
#else
#define LOOM_QGEMM_512 0
#endif
// A VNNI dot product (VPDPBUSD) takes unsigned bytes up to 255; the AVX2 emulation
// (VPMADDUBSW, which saturates the sum of two products to int16) only up to 127.
#if (LOOM_QGEMM_512 && LOOM_X86_AVX512VNNI) || (!LOOM_QGEMM_512 && LOOM_X86_AVXVNNI)
#define LOOM_QGEMM_VNNI 1
#else
#define LOOM_QGEMM_VNNI 0
#endif
inline constexpr bool kVnni = LOOM_QGEMM_VNNI;

inline float load_f32(const std::byte *p) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
}

// 64 bytes of a group: 16 int32 lanes, lane r for row r (or 4 bytes, or two int16, of row r).
struct Ints {
#if LOOM_QGEMM_512
    __m512i v;
#else
    __m256i lo, hi;  // rows 0-7, rows 8-15
#endif

    static Ints load(const std::byte *p) {
#if LOOM_QGEMM_512
        return {_mm512_loadu_si512(p)};
#else
        return {_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)),
                _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p + 32))};
#endif
    }
    static Ints splat32(int32_t x) {
#if LOOM_QGEMM_512
        return {_mm512_set1_epi32(x)};
#else
        const __m256i v = _mm256_set1_epi32(x);
        return {v, v};
#endif
    }
    static Ints splat8(int8_t x) {
        return splat32(int32_t(uint32_t(uint8_t(x)) * 0x01010101u));  // unsigned: 0x80 wraps
    }
    static Ints zero() {
        return splat32(0);
    }
    // Panels are byte arrays: scalars are read with memcpy, which the compiler folds into the
    // broadcast operand of the instruction that uses them.
    static Ints broadcast32(const std::byte *p) {
        int32_t v;
        std::memcpy(&v, p, 4);
        return splat32(v);
    }
    // 16 bytes, one per row, widened to the row's lane.
    static Ints widen_u8(__m128i rows) {
#if LOOM_QGEMM_512
        return {_mm512_cvtepu8_epi32(rows)};
#else
        return {_mm256_cvtepu8_epi32(rows), _mm256_cvtepu8_epi32(_mm_srli_si128(rows, 8))};
#endif
    }
    static Ints widen_i8(__m128i rows) {
#if LOOM_QGEMM_512
        return {_mm512_cvtepi8_epi32(rows)};
#else
        return {_mm256_cvtepi8_epi32(rows), _mm256_cvtepi8_epi32(_mm_srli_si128(rows, 8))};
#endif
    }
    // Bytes 16k .. 16k + 15, k < 4 (a constant once inlined).
    __m128i quarter(int k) const {
#if LOOM_QGEMM_512
        switch (k) {
            case 0:
                return _mm512_castsi512_si128(v);
            case 1:
                return _mm512_extracti32x4_epi32(v, 1);
            case 2:
                return _mm512_extracti32x4_epi32(v, 2);
            default:
                return _mm512_extracti32x4_epi32(v, 3);
        }
#else
        const __m256i half = k < 2 ? lo : hi;
        return k % 2 == 0 ? _mm256_castsi256_si128(half) : _mm256_extracti128_si256(half, 1);
#endif
    }
    // 16 uint16 values, one per row, widened to the row's lane.
    static Ints widen_u16(const std::byte *p) {
#if LOOM_QGEMM_512
        return {_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)))};
#else
        return {_mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))),
                _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 16)))};
#endif
    }
    // Two bytes per row (rows 0-7, then 8-15), widened to the two int16 halves of its lane.
    static Ints widen_u8_pairs(__m128i rows0_7, __m128i rows8_15) {
#if LOOM_QGEMM_512
        return {_mm512_cvtepu8_epi16(_mm256_set_m128i(rows8_15, rows0_7))};
#else
        return {_mm256_cvtepu8_epi16(rows0_7), _mm256_cvtepu8_epi16(rows8_15)};
#endif
    }
};

#if LOOM_QGEMM_512
#define LOOM_INTS_OP(name, expr)       \
    inline Ints name(Ints a, Ints b) { \
        return {expr(a.v, b.v)};       \
    }
#define LOOM_INTS_SHIFT(name, expr)   \
    inline Ints name(Ints a, int n) { \
        return {expr(a.v, n)};        \
    }
#else
#define LOOM_INTS_OP(name, expr)                     \
    inline Ints name(Ints a, Ints b) {               \
        return {expr(a.lo, b.lo), expr(a.hi, b.hi)}; \
    }
#define LOOM_INTS_SHIFT(name, expr)            \
    inline Ints name(Ints a, int n) {          \
        return {expr(a.lo, n), expr(a.hi, n)}; \
    }
#endif
#if LOOM_QGEMM_512
LOOM_INTS_OP(operator&, _mm512_and_si512)
LOOM_INTS_OP(operator|, _mm512_or_si512)
LOOM_INTS_OP(operator^, _mm512_xor_si512)
LOOM_INTS_OP(operator+, _mm512_add_epi32)
LOOM_INTS_OP(operator-, _mm512_sub_epi32)
LOOM_INTS_OP(sub8, _mm512_sub_epi8)
LOOM_INTS_OP(max32, _mm512_max_epi32)
LOOM_INTS_OP(mullo32, _mm512_mullo_epi32)
LOOM_INTS_SHIFT(srli16, _mm512_srli_epi16)
LOOM_INTS_SHIFT(slli16, _mm512_slli_epi16)
LOOM_INTS_SHIFT(slli32, _mm512_slli_epi32)
LOOM_INTS_SHIFT(srli32, _mm512_srli_epi32)
LOOM_INTS_SHIFT(srai32, _mm512_srai_epi32)
#else
LOOM_INTS_OP(operator&, _mm256_and_si256)
LOOM_INTS_OP(operator|, _mm256_or_si256)
LOOM_INTS_OP(operator^, _mm256_xor_si256)
LOOM_INTS_OP(operator+, _mm256_add_epi32)
LOOM_INTS_OP(operator-, _mm256_sub_epi32)
LOOM_INTS_OP(sub8, _mm256_sub_epi8)
LOOM_INTS_OP(max32, _mm256_max_epi32)
LOOM_INTS_OP(mullo32, _mm256_mullo_epi32)
LOOM_INTS_SHIFT(srli16, _mm256_srli_epi16)
LOOM_INTS_SHIFT(slli16, _mm256_slli_epi16)
LOOM_INTS_SHIFT(slli32, _mm256_slli_epi32)
LOOM_INTS_SHIFT(srli32, _mm256_srli_epi32)
LOOM_INTS_SHIFT(srai32, _mm256_srai_epi32)
#endif
#undef LOOM_INTS_OP
#undef LOOM_INTS_SHIFT

// Code barriers for the streaming tiles, where GCC would otherwise hoist a whole block's loads
// and decoding to its start, or re-associate its integer sums, and spill what does not fit AVX2's
// 16 registers: `at(p)` hides where p points, so that loads through it happen where written;
// `settle(v)` makes v computed here.
template <typename T>
inline T *at(T *p) {
    asm volatile("" : "+r"(p));
    return p;
}
inline void settle(Ints &v) {
#if LOOM_QGEMM_512
    asm("" : "+v"(v.v));
#else
    asm("" : "+x"(v.lo), "+x"(v.hi));
#endif
}

// acc + the sum of the four products u * s of each lane's bytes, u unsigned and s signed: exact
// for u <= 127 on any width, and up to 255 with VNNI (kVnni).
inline Ints dot_u8s8(Ints acc, Ints u, Ints s) {
#if LOOM_QGEMM_512 && LOOM_QGEMM_VNNI
    return {_mm512_dpbusd_epi32(acc.v, u.v, s.v)};
#elif LOOM_QGEMM_512
    const __m512i ones = _mm512_set1_epi16(1);
    return {_mm512_add_epi32(acc.v, _mm512_madd_epi16(_mm512_maddubs_epi16(u.v, s.v), ones))};
#elif LOOM_QGEMM_VNNI
    return {_mm256_dpbusd_avx_epi32(acc.lo, u.lo, s.lo),
            _mm256_dpbusd_avx_epi32(acc.hi, u.hi, s.hi)};
#else
    const __m256i ones = _mm256_set1_epi16(1);
    return {_mm256_add_epi32(acc.lo, _mm256_madd_epi16(_mm256_maddubs_epi16(u.lo, s.lo), ones)),
            _mm256_add_epi32(acc.hi, _mm256_madd_epi16(_mm256_maddubs_epi16(u.hi, s.hi), ones))};
#endif
}

// 16 byte values looked up by 4-bit codes (the table-indexed formats' levels): VPSHUFB, the table
// in every 16-byte lane; low(v) looks up the low nibble of each byte of v, high(v) the high one.
class CodeTable {
  public:
    // The values plus `offset` (wrapping: 241 is the byte 0xF1, as VPDPBUSD's unsigned side).
    CodeTable(const int8_t *values, int offset) {
        alignas(16) int8_t shifted[16];
        for (int i = 0; i < 16; ++i) shifted[i] = int8_t(values[i] + offset);
        const __m128i t = _mm_load_si128(reinterpret_cast<const __m128i *>(shifted));
#if LOOM_QGEMM_512
        table_ = _mm512_broadcast_i32x4(t);
#else
        table_ = _mm256_broadcastsi128_si256(t);
#endif
    }
    Ints low(Ints v) const {
        return lookup(v & Ints::splat8(0x0F));
    }
    Ints high(Ints v) const {
        return lookup(srli16(v, 4) & Ints::splat8(0x0F));
    }

  private:
    Ints lookup(Ints codes) const {
#if LOOM_QGEMM_512
        return {_mm512_shuffle_epi8(table_, codes.v)};
#else
        return {_mm256_shuffle_epi8(table_, codes.lo), _mm256_shuffle_epi8(table_, codes.hi)};
#endif
    }
#if LOOM_QGEMM_512
    __m512i table_;
#else
    __m256i table_;
#endif
};
// acc + the sum of the two int16 products of each lane (VPDPWSSD).
inline Ints dot_s16(Ints acc, Ints a, Ints b) {
#if LOOM_QGEMM_512 && LOOM_QGEMM_VNNI
    return {_mm512_dpwssd_epi32(acc.v, a.v, b.v)};
#elif LOOM_QGEMM_512
    return {_mm512_add_epi32(acc.v, _mm512_madd_epi16(a.v, b.v))};
#elif LOOM_QGEMM_VNNI
    return {_mm256_dpwssd_avx_epi32(acc.lo, a.lo, b.lo),
            _mm256_dpwssd_avx_epi32(acc.hi, a.hi, b.hi)};
#else
    return {_mm256_add_epi32(acc.lo, _mm256_madd_epi16(a.lo, b.lo)),
            _mm256_add_epi32(acc.hi, _mm256_madd_epi16(a.hi, b.hi))};
#endif
}

// The units of the dot products below: an array, or a callable that decodes unit t where it is
// used (a streaming tile: decoded first, a sub-block's 8 units would take AVX2's 16 registers).
template <typename Q>
[[gnu::always_inline]] inline auto unit_at(const Q &q, int t) {
    if constexpr (std::is_pointer_v<Q>) {
        return q[t];
    } else {
        return q(t);
    }
}
// Units t0, t0 + 1, .. of q, in the same form.
template <typename Q>
[[gnu::always_inline]] inline auto units_from(Q q, int t0) {
    if constexpr (std::is_pointer_v<Q>) {
        return q + t0;
    } else {
        return [=](int t) [[gnu::always_inline]] { return q(t0 + t); };
    }
}
// column(c, units) for each of a tile's NC columns over a block's 8 units, unit(wb, t) decoding
// unit t of the block at wb: for one column each unit where its product uses it (8 held would take
// AVX2's 16 registers), for more once for all columns.
template <int NC, typename Unit, typename Column>
[[gnu::always_inline]] inline void for_columns(const std::byte *w, Unit unit, Column column) {
    if constexpr (NC == 1) {
        const std::byte *wb = at(w);
        column(0, [&](int t) [[gnu::always_inline]] { return unit(wb, t); });
    } else {
        Ints q[8];
        for (int t = 0; t < 8; ++t) q[t] = unit(w, t);
#pragma GCC unroll 12
        for (int c = 0; c < NC; ++c) column(c, +q);
    }
}

// Signed bytes q to multiply with signed bytes s in -127 .. 127, which VPMADDUBSW takes as |q|
// (unsigned; 128 for -128) times s with q's sign: both found once per unit where the registers
// hold them for every column (qgemm_iq4xs.cpp), else per product (dot_signed_units).
struct SignedUnit {
    Ints magnitude;  // |q|
    Ints sign;       // AVX2: q itself (VPSIGNB reads its signs); AVX-512: 0xFF where q < 0
    static SignedUnit of(Ints q) {
#if LOOM_QGEMM_512
        return {{_mm512_abs_epi8(q.v)}, {_mm512_movm_epi8(_mm512_movepi8_mask(q.v))}};
#else
        return {{_mm256_abs_epi8(q.lo), _mm256_abs_epi8(q.hi)}, q};
#endif
    }
    // s with the signs of q (zero where q is, which |q| zeroes anyway).
    Ints signed_as_q(Ints s) const {
#if LOOM_QGEMM_512
        return {_mm512_sub_epi8(_mm512_xor_si512(s.v, sign.v), sign.v)};
#else
        return {_mm256_sign_epi8(s.lo, sign.lo), _mm256_sign_epi8(s.hi, sign.hi)};
#endif
    }
};
// The int16 sums of each lane's two pairs of products q * s: exact (at most 2 * 128 * 127).
inline Ints signed_pair_sums(const SignedUnit &q, Ints s) {
    const Ints signed_s = q.signed_as_q(s);
#if LOOM_QGEMM_512
    return {_mm512_maddubs_epi16(q.magnitude.v, signed_s.v)};
#else
    return {_mm256_maddubs_epi16(q.magnitude.lo, signed_s.lo),
            _mm256_maddubs_epi16(q.magnitude.hi, signed_s.hi)};
#endif
}
// acc + the sum of the four products q * s of each lane's bytes.
inline Ints dot_s8s8(Ints acc, const SignedUnit &q, Ints s) {
    if constexpr (kVnni) return dot_u8s8(acc, q.magnitude, q.signed_as_q(s));
    return dot_s16(acc, signed_pair_sums(q, s), Ints::splat32(0x00010001));
}
// acc + the sum over t < N of dot_s8s8(q[t], x(t)), the units' magnitudes and signs found per
// call (held for a whole block, 8 units' pairs spill AVX2's registers).
template <int N, typename Q, typename X>
[[gnu::always_inline]] inline Ints dot_signed_units(Ints acc, Q q, X x) {
#pragma GCC unroll 8
    for (int t = 0; t < N; ++t) {
        acc = dot_s8s8(acc, SignedUnit::of(unit_at(q, t)), x(t));
        settle(acc);  // in this order (pair_sums)
    }
    return acc;
}
// Units of bytes u <= kMaxU whose VPMADDUBSW pair sums add up in int16 without overflow
// (kMaxU = 15: 8 units).
template <int kMaxU>
inline constexpr int kUnitsPerInt16 = 32767 / (2 * kMaxU * 128);

// A per-row multiplier of dot sums (scaled_dot), from lanes holding an int16 value each.
struct Scale16 {
    Ints v;  // VNNI: the value in the low half (VPDPWSSD's form); else in both halves (VPMADDWD's)
    static Scale16 of(Ints lanes) {
        if constexpr (kVnni) return {lanes & Ints::splat32(0xFFFF)};
        return in_both_halves(lanes);
    }
    // From lanes holding a value in 0 .. 32767 (a widened unsigned byte, say): VPDPWSSD's high
    // half is already clear.
    static Scale16 of_unsigned(Ints lanes) {
        if constexpr (kVnni) return {lanes};
        return in_both_halves(lanes);
    }

  private:
    // Bytes 0, 1 of each lane copied over bytes 2, 3: one shuffle for a mask, shift and or.
    static Scale16 in_both_halves(Ints lanes) {
        const __m128i pattern = _mm_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13);
#if LOOM_QGEMM_512
        return {{_mm512_shuffle_epi8(lanes.v, _mm512_broadcast_i32x4(pattern))}};
#else
        const __m256i both = _mm256_broadcastsi128_si256(pattern);
        return {{_mm256_shuffle_epi8(lanes.lo, both), _mm256_shuffle_epi8(lanes.hi, both)}};
#endif
    }
};

// Pair sums of units t0 .. t0 + n - 1, in int16.
template <typename Q, typename X>
[[gnu::always_inline]] inline Ints pair_sums(Q u, X x, int t0, int n) {
#if LOOM_QGEMM_512
    __m512i p = _mm512_maddubs_epi16(unit_at(u, t0).v, x(t0).v);
    for (int t = t0 + 1; t < t0 + n; ++t)
        p = _mm512_add_epi16(p, _mm512_maddubs_epi16(unit_at(u, t).v, x(t).v));
    return {p};
#else
    Ints sum = {};
    for (int t = t0; t < t0 + n; ++t) {
        const Ints ut = unit_at(u, t), xt = x(t);
        const __m256i lo = _mm256_maddubs_epi16(ut.lo, xt.lo);
        const __m256i hi = _mm256_maddubs_epi16(ut.hi, xt.hi);
        sum = t == t0 ? Ints{lo, hi}
                      : Ints{_mm256_add_epi16(sum.lo, lo), _mm256_add_epi16(sum.hi, hi)};
        // In this order: GCC would otherwise find every product before the first add (it
        // re-associates the sum) and spill them.
        settle(sum);
    }
    return sum;
#endif
}

// Without VNNI: acc + the pair sums of N units, kUnitsPerInt16 units at a time, each run widened
// by one VPMADDWD against `pairs` (int16 multipliers, the same in both halves of a lane).
template <int N, int kMaxU, typename Q, typename X>
[[gnu::always_inline]] inline Ints widen_pair_sums(Ints acc, Q u, X x, Ints pairs) {
    constexpr int kRun = kUnitsPerInt16<kMaxU>;
    static_assert(kRun >= 1, "unsigned bytes above 127 need VNNI");
#pragma GCC unroll 8
    for (int t0 = 0; t0 < N; t0 += kRun) {
        acc = dot_s16(acc, pair_sums(u, x, t0, N - t0 < kRun ? N - t0 : kRun), pairs);
    }
    return acc;
}

// Dot products of a row of units: acc + the sum over t < N of dot_u8s8(u[t], x(t)), unsigned
// bytes u[t] <= kMaxU. Without VNNI the products' pair sums add up in int16 before one VPMADDWD
// widens them: exact, and a third of the instructions of a unit at a time.
template <int N, int kMaxU, typename Q, typename X>
[[gnu::always_inline]] inline Ints dot_units(Ints acc, Q u, X x) {
    if constexpr (kVnni) {
#pragma GCC unroll 8
        for (int t = 0; t < N; ++t) acc = dot_u8s8(acc, unit_at(u, t), x(t));
        return acc;
    } else {
        return widen_pair_sums<N, kMaxU>(acc, u, x, Ints::splat32(0x00010001));
    }
}

// acc + scale * (the sum of dot_units): with VNNI, the sum then VPDPWSSD where it fits in int16
// (one unit, kMaxU <= 63), else VPMULLD (a scale >= 0 there); without, each run's int16 pair sums
// times the scale by VPMADDWD.
template <int N, int kMaxU, typename Q, typename X>
[[gnu::always_inline]] inline Ints scaled_dot(Ints acc, Q u, X x, Scale16 scale) {
    if constexpr (kVnni) {
        const Ints sum = dot_units<N, kMaxU>(Ints::zero(), u, x);
        if constexpr (N * 4 * kMaxU * 128 <= 32767) return dot_s16(acc, sum, scale.v);
        return acc + mullo32(sum, scale.v);
    } else {
        return widen_pair_sums<N, kMaxU>(acc, u, x, scale.v);
    }
}

// Whether a tile of NC columns keeps their sums and a sub-block's units in registers: with
// AVX-512's 32, or for generation. AVX2's 16 hold two Ints each, so a wide panel decodes a group
// block once into L1 and runs column after column through it (on a Zen 2 EPYC, Q4_K n = 512 at
// 132 GFLOPS the other way, 226 this way; Q4_0's 236).
template <int NC>
inline constexpr bool kUnitsInRegisters = LOOM_QGEMM_512 || NC <= kStreamColumns;
// The 16 rows' float sums.
struct Floats {
#if LOOM_QGEMM_512
    __m512 v;
#else
    __m256 lo, hi;
#endif

    static Floats splat(float x) {
#if LOOM_QGEMM_512
        return {_mm512_set1_ps(x)};
#else
        const __m256 v = _mm256_set1_ps(x);
        return {v, v};
#endif
    }
    static Floats zero() {
        return splat(0.0f);
    }
    // 16 F16 values, one per row, widened.
    static Floats load_f16(const std::byte *p) {
#if LOOM_QGEMM_512
        return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)))};
#else
        return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))),
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 16)))};
#endif
    }
    // The lanes' bits as floats.
    static Floats from_bits(Ints a) {
#if LOOM_QGEMM_512
        return {_mm512_castsi512_ps(a.v)};
#else
        return {_mm256_castsi256_ps(a.lo), _mm256_castsi256_ps(a.hi)};
#endif
    }
    static Floats from_ints(Ints a) {
#if LOOM_QGEMM_512
        return {_mm512_cvtepi32_ps(a.v)};
#else
        return {_mm256_cvtepi32_ps(a.lo), _mm256_cvtepi32_ps(a.hi)};
#endif
    }
    void store(float *p) const {
#if LOOM_QGEMM_512
        _mm512_storeu_ps(p, v);
#else
        _mm256_storeu_ps(p, lo);
        _mm256_storeu_ps(p + 8, hi);
#endif
    }
};

#if LOOM_QGEMM_512
inline Floats operator+(Floats a, Floats b) {
    return {_mm512_add_ps(a.v, b.v)};
}
inline Floats operator-(Floats a, Floats b) {
    return {_mm512_sub_ps(a.v, b.v)};
}
inline Floats operator*(Floats a, Floats b) {
    return {_mm512_mul_ps(a.v, b.v)};
}
// a * b + c, one rounding.
inline Floats fmadd(Floats a, Floats b, Floats c) {
    return {_mm512_fmadd_ps(a.v, b.v, c.v)};
}
#else
inline Floats operator+(Floats a, Floats b) {
    return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)};
}
inline Floats operator-(Floats a, Floats b) {
    return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)};
}
inline Floats operator*(Floats a, Floats b) {
    return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)};
}
inline Floats fmadd(Floats a, Floats b, Floats c) {
    return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)};
}
#endif

// Group g's sums of a tile of NG groups, for the K-quant and IQ4_XS tiles: with several groups,
// in memory the compiler cannot see through, read and written once per block (the other groups'
// sums held in registers across a block spill AVX2's 16: on a Zen 2 EPYC, Q4_K n = 1 in L2 at
// 19.6 GB/s that way, 22.2 this way).
template <int NG, int NC>
inline Floats *group_sums(Floats (&sums)[NG][NC], int g) {
    return NG > 1 ? at(sums[g]) : sums[g];
}
// A tile's sums, [groups][columns] (value-initialised: zero), to `out` in that order (qgemm.h's
// Tile): Floats, or the AVX-512 tiles' __m512.
inline void store_rows(const Floats &sums, float *out) {
    sums.store(out);
}
#if LOOM_QGEMM_512
inline void store_rows(__m512 sums, float *out) {
    _mm512_storeu_ps(out, sums);
}
#endif
template <typename Sums, int NG, int NC>
inline void store_sums(const Sums (&sums)[NG][NC], float *out) {
    for (int g = 0; g < NG; ++g) {
        for (int c = 0; c < NC; ++c) store_rows(sums[g][c], out + (g * NC + c) * kGroupRows);
    }
}

}  // namespace loom::cpu::inline LOOM_ISA::qgemm

#if LOOM_VNNI512_KERNELS
namespace loom::cpu::inline LOOM_ISA::qgemm {

// The table-indexed tiles' AVX-512 helpers.
inline __m512i broadcast_i32(const std::byte *p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}
// 16 F16 scales of a group block, widened.
inline __m512 load_f16x16(const std::byte *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
}
inline __m512i load512(const std::byte *p) {
    return _mm512_loadu_si512(p);
}

// 16 byte values indexed by 4-bit codes (the table-indexed formats' levels, made unsigned):
// low(v) looks up the low nibble of each byte of v, high(v) the high nibble.
class NibbleTable {
  public:
    explicit NibbleTable(const uint8_t *values)
        : table_(
              _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i *>(values)))) {}
#if LOOM_X86_AVX512VBMI
    // VPERMB reads 6 bits of each index and the table repeats every 16 bytes, so the 2 bits above
    // the nibble do not matter: no mask.
    __m512i low(__m512i v) const {
        return _mm512_permutexvar_epi8(v, table_);
    }
    __m512i high(__m512i v) const {
        return _mm512_permutexvar_epi8(_mm512_srli_epi16(v, 4), table_);
    }
#else
    // VPSHUFB zeroes a byte whose index has bit 7 set: mask the nibble first.
    __m512i low(__m512i v) const {
        return _mm512_shuffle_epi8(table_, _mm512_and_si512(v, mask()));
    }
    __m512i high(__m512i v) const {
        return _mm512_shuffle_epi8(table_, _mm512_and_si512(_mm512_srli_epi16(v, 4), mask()));
    }
#endif

  private:
    static __m512i mask() {
        return _mm512_set1_epi8(0x0F);
    }
    __m512i table_;
};

}  // namespace loom::cpu::inline LOOM_ISA::qgemm

#endif

#endif
