// K-quant dot products with AVX2 byte multiply-adds, in the float order of ggml's AVX2 kernels
// (the ones llama.cpp's x86 CPU backends run): per super-block, 8 int32 lanes where lane k holds
// bytes 4k..4k+3 of every 32-element chunk times their scale, fused into 8 float accumulators
// with d, and the lanes added last as hsum_float_8 does. The min terms go through 4 accumulators
// of their own (Q4_K), one scalar (Q5_K) or the main 8 before the quants (Q2_K). Integer sums are
// exact, so only this float order decides the result.
#include "core/quant/k_blocks.h"

#if LOOM_X86_AVX2 && LOOM_X86_FMA
#include <immintrin.h>
// GCC 12's AVX-512 headers start some operations (broadcasts, inserts, conversions) from an
// "undefined" vector and then warn that it may be used uninitialized; it is not.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <cmath>
#include <cstring>

#include "core/quant/half.h"

namespace loom::quant::inline LOOM_ISA {
namespace {

// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)), as ggml's hsum_float_8.
float hsum_float_8(__m256 x) {
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

__m256i load256(const void *p) {
    return _mm256_loadu_si256(static_cast<const __m256i *>(p));
}

// The unpacked 6-bit scales and mins of a Q4_K/Q5_K block.
struct ScalesMins {
    uint8_t scales[8];
    uint8_t mins[8];
};
template <typename Block>
ScalesMins scales_mins(const Block &x) {
    ScalesMins sm;
    for (int j = 0; j < 8; ++j) scale_min_k4(j, x.scales, sm.scales[j], sm.mins[j]);
    return sm;
}

// min[2k] * (sum of the q8 of sub-block 2k) + the same for 2k + 1, in 4 int32 lanes.
__m128i min_products(const ScalesMins &sm, const BlockQ8K &y) {
    const __m256i bsums = load256(y.bsums);
    const __m128i sums32 =
        _mm_hadd_epi16(_mm256_castsi256_si128(bsums), _mm256_extracti128_si256(bsums, 1));
    const __m128i mins16 = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)sm.mins));
    return _mm_madd_epi16(mins16, sums32);
}

// The scaled sums of q * q8 over a Q4_K/Q5_K block in 8 lanes; high_bits is Q5_K's qh or null.
// |q * q8| summed over a byte pair stays below 2 * 31 * 128: maddubs does not saturate.
__m256i scaled_sums(const uint8_t *qs, const uint8_t *high_bits, const int8_t *q8,
                    const ScalesMins &sm) {
    const __m256i low_nibble = _mm256_set1_epi8(0xF);
    const __m256i one = _mm256_set1_epi8(1);
    const __m256i qh = high_bits ? load256(high_bits) : _mm256_setzero_si256();
    __m256i sumi = _mm256_setzero_si256();
    for (int j = 0; j < QK_K / 64; ++j) {
        const __m256i bits = load256(qs + 32 * j);
        __m256i q_low = _mm256_and_si256(bits, low_nibble);
        __m256i q_high = _mm256_and_si256(_mm256_srli_epi16(bits, 4), low_nibble);
        if (high_bits) {  // the fifth bit of element 64j + 32h + l is bit 2j + h of qh[l]
            const __m256i fifth_low = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one);
            const __m256i fifth_high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one);
            q_low = _mm256_or_si256(q_low, _mm256_slli_epi16(fifth_low, 4));
            q_high = _mm256_or_si256(q_high, _mm256_slli_epi16(fifth_high, 4));
        }
        const __m256i p_low = _mm256_madd_epi16(_mm256_set1_epi16(sm.scales[2 * j]),
                                                _mm256_maddubs_epi16(q_low, load256(q8 + 64 * j)));
        const __m256i p_high =
            _mm256_madd_epi16(_mm256_set1_epi16(sm.scales[2 * j + 1]),
                              _mm256_maddubs_epi16(q_high, load256(q8 + 64 * j + 32)));
        sumi = _mm256_add_epi32(sumi, _mm256_add_epi32(p_low, p_high));
    }
    return sumi;
}

// Half a block of 16-element sub-blocks (Q2_K, Q3_K, Q6_K): levels[k] holds the unsigned levels
// q + offset of elements 32k .. 32k + 31, scales the 8 sub-blocks' scales. Returns the 8 lanes of
// sum scale * q * q8, formed as (q + offset) * q8 - offset * q8; pair sums stay below
// 2 * 63 * 128, so maddubs does not saturate.
__m256i half_block_sums(const __m256i levels[4], int offset, const int8_t *q8, const int *scales) {
    const __m256i offset8 = _mm256_set1_epi8(char(offset));
    __m256i sumi = _mm256_setzero_si256();
    for (int k = 0; k < 4; ++k) {
        const __m256i q8k = load256(q8 + 32 * k);
        const __m256i products = _mm256_sub_epi16(_mm256_maddubs_epi16(levels[k], q8k),
                                                  _mm256_maddubs_epi16(offset8, q8k));
        const __m256i scale16 = _mm256_set_m128i(_mm_set1_epi16(int16_t(scales[2 * k + 1])),
                                                 _mm_set1_epi16(int16_t(scales[2 * k])));
        sumi = _mm256_add_epi32(sumi, _mm256_madd_epi16(scale16, products));
    }
    return sumi;
}

// A Q2_K block's min terms, which come first, in the same 8 accumulators: lane k takes
// sub-blocks 2k and 2k + 1.
__m256 add_q2_k_mins(const BlockQ2K &x, const BlockQ8K &y, __m256 acc) {
    const float dmin = -y.d * half_to_float(x.dmin);
    const __m128i packed = _mm_loadu_si128((const __m128i *)x.scales);
    const __m256i mins16 =
        _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0xF)));
    const __m256i min_products = _mm256_madd_epi16(mins16, load256(y.bsums));
    return _mm256_fmadd_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(min_products), acc);
}

}  // namespace

float dot_q4_k_avx2(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const BlockQ4K *>(vx);
    const auto *y = static_cast<const BlockQ8K *>(vy);
    __m256 acc = _mm256_setzero_ps();
    __m128 acc_mins = _mm_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = y[b].d * half_to_float(x[b].d);
        const float dmin = -y[b].d * half_to_float(x[b].dmin);
        const ScalesMins sm = scales_mins(x[b]);
        acc_mins =
            _mm_fmadd_ps(_mm_set1_ps(dmin), _mm_cvtepi32_ps(min_products(sm, y[b])), acc_mins);
        const __m256i sumi = scaled_sums(x[b].qs, nullptr, y[b].qs, sm);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    acc_mins = _mm_add_ps(acc_mins, _mm_movehl_ps(acc_mins, acc_mins));
    acc_mins = _mm_add_ss(acc_mins, _mm_movehdup_ps(acc_mins));
    return hsum_float_8(acc) + _mm_cvtss_f32(acc_mins);
}

float dot_q5_k_avx2(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const BlockQ5K *>(vx);
    const auto *y = static_cast<const BlockQ8K *>(vy);
    __m256 acc = _mm256_setzero_ps();
    float sum_mins = 0.f;
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = y[b].d * half_to_float(x[b].d);
        const float dmin = -y[b].d * half_to_float(x[b].dmin);
        const ScalesMins sm = scales_mins(x[b]);
        const __m128i mp = min_products(sm, y[b]);
        const int mins_total = _mm_extract_epi32(mp, 0) + _mm_extract_epi32(mp, 1) +
                               _mm_extract_epi32(mp, 2) + _mm_extract_epi32(mp, 3);
        // ggml writes summs += dmin * total; compilers fuse it where FMA is enabled
        sum_mins = std::fma(dmin, float(mins_total), sum_mins);
        const __m256i sumi = scaled_sums(x[b].qs, x[b].qh, y[b].qs, sm);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_float_8(acc) + sum_mins;
}

float dot_q2_k_avx2(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const BlockQ2K *>(vx);
    const auto *y = static_cast<const BlockQ8K *>(vy);
    const __m256i two_bits = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = y[b].d * half_to_float(x[b].d);
        int scales[16];
        for (int j = 0; j < 16; ++j) scales[j] = x[b].scales[j] & 0xF;
        acc = add_q2_k_mins(x[b], y[b], acc);

        __m256i sumi = _mm256_setzero_si256();
        for (int half = 0; half < 2; ++half) {
            const __m256i bits = load256(x[b].qs + 32 * half);
            __m256i levels[4];
            for (int k = 0; k < 4; ++k) {
                levels[k] = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * k), two_bits);
            }
            sumi = _mm256_add_epi32(
                sumi, half_block_sums(levels, 0, y[b].qs + 128 * half, scales + 8 * half));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_float_8(acc);
}

float dot_q3_k_avx2(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const BlockQ3K *>(vx);
    const auto *y = static_cast<const BlockQ8K *>(vy);
    const __m256i two_bits = _mm256_set1_epi8(3);
    const __m256i one = _mm256_set1_epi8(1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = y[b].d * half_to_float(x[b].d);
        int scales[16];
        for (int j = 0; j < 16; ++j) {
            const int low = j < 8 ? x[b].scales[j] & 0xF : x[b].scales[j - 8] >> 4;
            scales[j] = (low | (((x[b].scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
        }
        const __m256i hmask = load256(x[b].hmask);
        __m256i sumi = _mm256_setzero_si256();
        for (int half = 0; half < 2; ++half) {
            const __m256i bits = load256(x[b].qs + 32 * half);
            __m256i levels[4];  // q + 4: the low two bits, plus 4 where the high bit is set
            for (int k = 0; k < 4; ++k) {
                const __m256i low = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * k), two_bits);
                const __m256i high = _mm256_and_si256(_mm256_srli_epi16(hmask, 4 * half + k), one);
                levels[k] = _mm256_or_si256(low, _mm256_slli_epi16(high, 2));
            }
            sumi = _mm256_add_epi32(
                sumi, half_block_sums(levels, 4, y[b].qs + 128 * half, scales + 8 * half));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_float_8(acc);
}

#if LOOM_X86_AVX512VNNI && LOOM_X86_AVX512BW
namespace {

// The AVX-512 forms of the Q2_K and Q3_K kernels above: the same 8 integer lanes per block, so
// the same float steps and the same bits. A 512-bit vector holds chunk k (elements 32k .. 32k + 31)
// of both halves of a block: half 0 in lanes 0-7, half 1 in lanes 8-15. VPDPBUSD sums each lane's
// 4 byte products exactly (what maddubs then madd sum in pairs), the lane is multiplied by its
// 16-element sub-block's scale, and the two halves are added at the end.

// Lane l of the result: scales32[sub-block of lane l in chunk k], where lane l of half h covers
// elements 128h + 32k + 4(l % 8) .., sub-block 8h + 2k + (l % 8) / 4.
__m512i chunk_scales(__m512i scales32, int k) {
    const __m512i base = _mm512_set_epi32(9, 9, 9, 9, 8, 8, 8, 8, 1, 1, 1, 1, 0, 0, 0, 0);
    return _mm512_permutexvar_epi32(_mm512_add_epi32(base, _mm512_set1_epi32(2 * k)), scales32);
}

// q8 of chunk k for both halves: elements 32k .. and 128 + 32k ...
__m512i chunk_q8(const int8_t *q8, int k) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(load256(q8 + 32 * k)),
                              load256(q8 + 128 + 32 * k), 1);
}

// Lanes 0-7 plus lanes 8-15: the 8 lanes of the AVX2 kernel's sumi.
__m256i fold_halves(__m512i v) {
    return _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64(v, 1));
}

}  // namespace

float dot_q2_k_avx512(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const BlockQ2K *>(vx);
    const auto *y = static_cast<const BlockQ8K *>(vy);
    const __m512i two_bits = _mm512_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = y[b].d * half_to_float(x[b].d);
        acc = add_q2_k_mins(x[b], y[b], acc);
        const __m128i packed = _mm_loadu_si128((const __m128i *)x[b].scales);

        const __m512i scales32 = _mm512_cvtepu8_epi32(_mm_and_si128(packed, _mm_set1_epi8(0xF)));
        const __m512i bits = _mm512_loadu_si512(x[b].qs);  // half 0's 32 bytes, then half 1's
        __m512i sumi = _mm512_setzero_si512();
        for (int k = 0; k < 4; ++k) {
            const __m512i levels = _mm512_and_si512(_mm512_srli_epi16(bits, 2 * k), two_bits);
            const __m512i products =
                _mm512_dpbusd_epi32(_mm512_setzero_si512(), levels, chunk_q8(y[b].qs, k));
            sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(products, chunk_scales(scales32, k)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(fold_halves(sumi)), acc);
    }
    return hsum_float_8(acc);
}

float dot_q3_k_avx512(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const BlockQ3K *>(vx);
    const auto *y = static_cast<const BlockQ8K *>(vy);
    const __m512i two_bits = _mm512_set1_epi8(3);
    const __m512i one = _mm512_set1_epi8(1);
    const __m512i four = _mm512_set1_epi8(4);
    // Scale j (16 of 6 bits, 12 bytes): the low 4 bits from byte j % 8, shifted by 4 (j / 8),
    // the high 2 from byte 8 + j % 4, shifted by 2 (j / 4); minus 32.
    const __m512i lane = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    const __m512i low_byte = _mm512_and_si512(lane, _mm512_set1_epi32(7));
    const __m512i low_shift = _mm512_slli_epi32(_mm512_srli_epi32(lane, 3), 2);
    const __m512i high_byte =
        _mm512_add_epi32(_mm512_and_si512(lane, _mm512_set1_epi32(3)), _mm512_set1_epi32(8));
    const __m512i high_shift = _mm512_slli_epi32(_mm512_srli_epi32(lane, 2), 1);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = y[b].d * half_to_float(x[b].d);
        uint64_t low8;
        uint32_t high4;
        std::memcpy(&low8, x[b].scales, 8);
        std::memcpy(&high4, x[b].scales + 8, 4);
        const __m512i bytes32 =
            _mm512_cvtepu8_epi32(_mm_insert_epi32(_mm_cvtsi64_si128(int64_t(low8)), int(high4), 2));
        const __m512i low = _mm512_and_si512(
            _mm512_srlv_epi32(_mm512_permutexvar_epi32(low_byte, bytes32), low_shift),
            _mm512_set1_epi32(0xF));
        const __m512i high = _mm512_and_si512(
            _mm512_srlv_epi32(_mm512_permutexvar_epi32(high_byte, bytes32), high_shift),
            _mm512_set1_epi32(3));
        const __m512i scales32 = _mm512_sub_epi32(_mm512_or_si512(low, _mm512_slli_epi32(high, 4)),
                                                  _mm512_set1_epi32(32));

        const __m512i bits = _mm512_loadu_si512(x[b].qs);
        // The high bit of element 128h + 32k + l is bit 4h + k of hmask[l]: half 1's copy of
        // hmask comes shifted down by 4 already.
        const __m256i hmask = load256(x[b].hmask);
        const __m512i hbits =
            _mm512_inserti64x4(_mm512_castsi256_si512(hmask), _mm256_srli_epi16(hmask, 4), 1);
        __m512i sumi = _mm512_setzero_si512();
        for (int k = 0; k < 4; ++k) {
            const __m512i low_bits = _mm512_and_si512(_mm512_srli_epi16(bits, 2 * k), two_bits);
            const __m512i high_bit = _mm512_and_si512(_mm512_srli_epi16(hbits, k), one);
            // q + 4: the low two bits, plus 4 where the high bit is set
            const __m512i levels = _mm512_or_si512(low_bits, _mm512_slli_epi16(high_bit, 2));
            const __m512i q8 = chunk_q8(y[b].qs, k);
            const __m512i products =
                _mm512_sub_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), levels, q8),
                                 _mm512_dpbusd_epi32(_mm512_setzero_si512(), four, q8));
            sumi = _mm512_add_epi32(sumi, _mm512_mullo_epi32(products, chunk_scales(scales32, k)));
        }
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(fold_halves(sumi)), acc);
    }
    return hsum_float_8(acc);
}
#endif

float dot_q6_k_avx2(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const BlockQ6K *>(vx);
    const auto *y = static_cast<const BlockQ8K *>(vy);
    const __m256i low_nibble = _mm256_set1_epi8(0xF);
    const __m256i two_bits = _mm256_set1_epi8(3);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < n / QK_K; ++b) {
        const float d = y[b].d * half_to_float(x[b].d);
        int scales[16];
        for (int j = 0; j < 16; ++j) scales[j] = x[b].scales[j];
        // The offset 32 comes off once per block, lane k taking sub-blocks 2k and 2k + 1
        // (ggml's current AVX2 kernel); which lane holds which product decides the float sum.
        const __m256i scale_bsums =
            _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)x[b].scales)),
                              load256(y[b].bsums));
        __m256i sumi = _mm256_setzero_si256();
        for (int half = 0; half < 2; ++half) {
            const __m256i ql1 = load256(x[b].ql + 64 * half);
            const __m256i ql2 = load256(x[b].ql + 64 * half + 32);
            const __m256i qh = load256(x[b].qh + 32 * half);
            __m256i levels[4];  // q + 32
            for (int k = 0; k < 4; ++k) {
                const __m256i low = k % 2 == 0 ? ql1 : ql2;
                const __m256i nibble =
                    k < 2 ? _mm256_and_si256(low, low_nibble)
                          : _mm256_and_si256(_mm256_srli_epi16(low, 4), low_nibble);
                const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * k), two_bits);
                levels[k] = _mm256_or_si256(nibble, _mm256_slli_epi16(high, 4));
            }
            sumi = _mm256_add_epi32(
                sumi, half_block_sums(levels, 0, y[b].qs + 128 * half, scales + 8 * half));
        }
        sumi = _mm256_sub_epi32(sumi, _mm256_slli_epi32(scale_bsums, 5));
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(sumi), acc);
    }
    return hsum_float_8(acc);
}

}  // namespace loom::quant::inline LOOM_ISA

#endif
