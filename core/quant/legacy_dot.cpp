// Dot products of the legacy formats with Q8_0 / Q8_1 activations in the lane order of ggml's
// AVX2 kernels (see legacy_formats.h): AVX2 with integer multiply-adds where the build has it,
// the same arithmetic lane by lane otherwise.
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/quant/half.h"
#include "core/quant/legacy_formats.h"
#include "core/quant/quant.h"
#include "loom/fp16.h"

#if LOOM_X86_AVX2 && LOOM_X86_FMA
#include <immintrin.h>
#define LOOM_LEGACY_AVX2 1
// GCC 12's AVX-512 headers start some operations (broadcasts, inserts, conversions) from an
// "undefined" vector and then warn that it may be used uninitialized; it is not.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace loom::quant::inline LOOM_ISA {
namespace {

constexpr int QK = kLegacyBlock;
constexpr int kLanes = 8;  // ggml's AVX2 accumulator: 8 floats, each fed 4 products per block

uint32_t load_qh(const uint8_t *qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, sizeof bits);
    return bits;
}

// Each format: the 32 weight quants of a block as bytes (signed, or unsigned for the formats
// with a minimum), and its scales.
struct Q4_0 {
    using Block = BlockQ4_0;
    using Act = BlockQ8_0;
    static constexpr bool kSigned = true;
    static void quants(const Block &b, int8_t *q) {
        for (int j = 0; j < QK / 2; ++j) {
            q[j] = int8_t((b.qs[j] & 0x0f) - 8);
            q[j + QK / 2] = int8_t((b.qs[j] >> 4) - 8);
        }
    }
};
struct Q4_1 {
    using Block = BlockQ4_1;
    using Act = BlockQ8_1;
    static constexpr bool kSigned = false;
    static void quants(const Block &b, int8_t *q) {
        for (int j = 0; j < QK / 2; ++j) {
            q[j] = int8_t(b.qs[j] & 0x0f);
            q[j + QK / 2] = int8_t(b.qs[j] >> 4);
        }
    }
};
struct Q5_0 {
    using Block = BlockQ5_0;
    using Act = BlockQ8_0;
    static constexpr bool kSigned = true;
    static void quants(const Block &b, int8_t *q) {
        const uint32_t qh = load_qh(b.qh);
        for (int j = 0; j < QK / 2; ++j) {
            q[j] = int8_t(((b.qs[j] & 0x0f) | ((qh >> j) & 1u) << 4) - 16);
            q[j + QK / 2] = int8_t(((b.qs[j] >> 4) | ((qh >> (j + QK / 2)) & 1u) << 4) - 16);
        }
    }
};
struct Q5_1 {
    using Block = BlockQ5_1;
    using Act = BlockQ8_1;
    static constexpr bool kSigned = false;
    static void quants(const Block &b, int8_t *q) {
        const uint32_t qh = load_qh(b.qh);
        for (int j = 0; j < QK / 2; ++j) {
            q[j] = int8_t((b.qs[j] & 0x0f) | ((qh >> j) & 1u) << 4);
            q[j + QK / 2] = int8_t((b.qs[j] >> 4) | ((qh >> (j + QK / 2)) & 1u) << 4);
        }
    }
};
struct Q8_0 {
    using Block = BlockQ8_0;
    using Act = BlockQ8_0;
    static constexpr bool kSigned = true;
    static void quants(const Block &b, int8_t *q) { std::memcpy(q, b.qs, QK); }
};

template <typename F>
constexpr bool kHasMin = requires(const typename F::Block &b) {
    b.m;
};

#if defined(LOOM_LEGACY_AVX2)

// The block's weight quants as 32 bytes, element j in byte j.
__m256i nibbles(const uint8_t *qs) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i *>(qs));
    const __m256i both =
        _mm256_inserti128_si256(_mm256_castsi128_si256(packed), _mm_srli_epi16(packed, 4), 1);
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}
// 0xff in byte j where bit j of qh is set.
__m256i bits_to_bytes(const uint8_t *qh) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(int(load_qh(qh))),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i select = _mm256_set1_epi64x(int64_t(0x8040201008040201));
    return _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
}
template <typename F>
__m256i weight_bytes(const typename F::Block &b) {
    if constexpr (std::is_same_v<F, Q8_0>) {
        return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b.qs));
    } else if constexpr (std::is_same_v<F, Q4_0>) {
        return _mm256_sub_epi8(nibbles(b.qs), _mm256_set1_epi8(8));
    } else if constexpr (std::is_same_v<F, Q4_1>) {
        return nibbles(b.qs);
    } else if constexpr (std::is_same_v<F, Q5_0>) {  // q - 16: the nibble, or nibble - 16
        return _mm256_or_si256(
            nibbles(b.qs), _mm256_andnot_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(char(0xf0))));
    } else {
        return _mm256_or_si256(nibbles(b.qs),
                               _mm256_and_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(0x10)));
    }
}

// Lane l: the sum of products 4l .. 4l + 3 of unsigned x and signed y bytes (exact: the 16-bit
// pair sums of maddubs stay below 2 * 128 * 127).
__m256i lane_sums_unsigned(__m256i x, __m256i y) {
#if LOOM_X86_AVX512VNNI && LOOM_X86_AVX512VL
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), x, y);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(x, y), _mm256_set1_epi16(1));
#endif
}

// out[c] = the dot of x with column ys[c], c < NC: each weight block is decoded once for the NC
// columns; every column's arithmetic is that of a single dot product.
template <typename F, int NC>
void dot_columns(int64_t n, const void *vx, const void *const *ys, float *out) {
    const auto *x = blocks<typename F::Block>(vx);
    const typename F::Act *y[NC];
    __m256 acc[NC];
    float min_sum[NC];
    for (int c = 0; c < NC; ++c) {
        y[c] = blocks<typename F::Act>(ys[c]);
        acc[c] = _mm256_setzero_ps();
        min_sum[c] = 0.0f;
    }
    for (int64_t i = 0; i < n / QK; ++i) {
        const __m256i qx = weight_bytes<F>(x[i]);
        // Signed weights: |x| times y with x's sign, so the multiply stays unsigned x signed.
        const __m256i ux = F::kSigned ? _mm256_sign_epi8(qx, qx) : qx;
        const float dx = half_to_float(x[i].d);
#pragma GCC unroll 4
        for (int c = 0; c < NC; ++c) {
            const typename F::Act &b = y[c][i];
            const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b.qs));
            const __m256i sums = lane_sums_unsigned(ux, F::kSigned ? _mm256_sign_epi8(qy, qx) : qy);
            const float scale = dx * half_to_float(b.d);
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(sums), acc[c]);
            if constexpr (kHasMin<F>) {
                min_sum[c] = std::fma(half_to_float(x[i].m), half_to_float(b.s), min_sum[c]);
            }
        }
    }
    for (int c = 0; c < NC; ++c) {
        // ggml's hsum_float_8: halves, then pairs, then the last two lanes.
        __m128 r = _mm_add_ps(_mm256_extractf128_ps(acc[c], 1), _mm256_castps256_ps128(acc[c]));
        r = _mm_add_ps(r, _mm_movehl_ps(r, r));
        r = _mm_add_ss(r, _mm_movehdup_ps(r));
        out[c] = _mm_cvtss_f32(r) + min_sum[c];
    }
}

template <typename F>
float dot(int64_t n, const void *vx, const void *vy) {
    float out;
    dot_columns<F, 1>(n, vx, &vy, &out);
    return out;
}

#else

template <typename F>
float dot(int64_t n, const void *vx, const void *vy) {
    const auto *x = blocks<typename F::Block>(vx);
    const auto *y = blocks<typename F::Act>(vy);
    float acc[kLanes] = {};
    float min_sum = 0.0f;
    for (int64_t i = 0; i < n / QK; ++i) {
        int8_t q[QK];
        F::quants(x[i], q);
        const float scale = fp16_to_f32(x[i].d) * fp16_to_f32(y[i].d);
        for (int l = 0; l < kLanes; ++l) {
            int sum = 0;
            for (int j = 4 * l; j < 4 * l + 4; ++j) sum += int(q[j]) * int(y[i].qs[j]);
            acc[l] = std::fma(scale, float(sum), acc[l]);
        }
        if constexpr (kHasMin<F>) {
            min_sum = std::fma(fp16_to_f32(x[i].m), fp16_to_f32(y[i].s), min_sum);
        }
    }
    for (int w = kLanes / 2; w >= 1; w /= 2) {
        for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
    }
    return acc[0] + min_sum;
}

template <typename F, int NC>
void dot_columns(int64_t n, const void *vx, const void *const *ys, float *out) {
    for (int c = 0; c < NC; ++c) out[c] = dot<F>(n, vx, ys[c]);
}

#endif

// The grid, row after row: each weight block decoded once for the n_cols columns.
template <typename F, int NC>
void dot_grid_by_rows(int64_t n, const void *const *xs, int64_t n_rows, const void *const *ys,
                      float *const *out) {
    for (int64_t r = 0; r < n_rows; ++r) {
        float row[NC];
        dot_columns<F, NC>(n, xs[r], ys, row);
        for (int c = 0; c < NC; ++c) out[c][r] = row[c];
    }
}

#if defined(LOOM_LEGACY_AVX2) && LOOM_X86_AVX512VNNI && LOOM_X86_AVX512BW

// Two weight rows at a time, one in each 256-bit half of a 512-bit vector, each half doing
// exactly what dot_columns does for its row. The weights enter VNNI's unsigned x signed product
// as unsigned bytes u = q + kOffset (no sign trick, which has no 512-bit form); subtracting
// kOffset * (the activation's lane sums), which the accumulator starts from, makes every lane
// sum the exact integer dot_columns forms.
template <typename F>
constexpr int kOffset = std::is_same_v<F, Q8_0>   ? 128
                        : std::is_same_v<F, Q4_0> ? 8
                        : std::is_same_v<F, Q5_0> ? 16
                                                  : 0;

template <typename F>
__m256i unsigned_bytes(const typename F::Block &b) {
    if constexpr (std::is_same_v<F, Q8_0>) {
        return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(b.qs)),
                                _mm256_set1_epi8(char(0x80)));
    } else if constexpr (std::is_same_v<F, Q4_0> || std::is_same_v<F, Q4_1>) {
        return nibbles(b.qs);
    } else {  // Q5_0, Q5_1: the nibble and the fifth bit
        return _mm256_or_si256(nibbles(b.qs),
                               _mm256_and_si256(bits_to_bytes(b.qh), _mm256_set1_epi8(0x10)));
    }
}

// hsum_float_8 (see dot_columns) of each 256-bit half, in lanes 0 and 8: every step adds lanes
// within a 128-bit lane, in the tree's order.
__m512 half_sums(__m512 v) {
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));  // l + (l + 4)
    v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));        // + (l + 2)
    return _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(2, 3, 0, 1)));     // + (l + 1)
}

constexpr int64_t kGridMaxBlocks = 16;  // activation rows held decoded: 512 values

template <typename F, int NC>
void dot_grid(int64_t n, const void *const *xs, int64_t n_rows, const void *const *ys,
              float *const *out) {
    using Block = typename F::Block;
    using Act = typename F::Act;
    const int64_t nb = n / QK;
    if (nb > kGridMaxBlocks) return dot_grid_by_rows<F, NC>(n, xs, n_rows, ys, out);
    // Per column and block: the activation's bytes in both halves, the accumulator's start, the
    // scale (and, for the formats with a minimum, the activation's s).
    __m512i qy[NC][kGridMaxBlocks], start[NC][kGridMaxBlocks];
    float dy[NC][kGridMaxBlocks], sy[NC][kGridMaxBlocks];
    for (int c = 0; c < NC; ++c) {
        const Act *y = blocks<Act>(ys[c]);
        for (int64_t b = 0; b < nb; ++b) {
            qy[c][b] = _mm512_broadcast_i64x4(
                _mm256_loadu_si256(reinterpret_cast<const __m256i *>(y[b].qs)));
            const __m512i lane_sums =
                _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), qy[c][b]);
            start[c][b] = _mm512_mullo_epi32(lane_sums, _mm512_set1_epi32(-kOffset<F>));
            dy[c][b] = half_to_float(y[b].d);
            if constexpr (kHasMin<F>) sy[c][b] = half_to_float(y[b].s);
        }
    }
    for (int64_t r = 0; r < n_rows; r += 2) {
        const bool pair = r + 1 < n_rows;
        const Block *x0 = blocks<Block>(xs[r]), *x1 = blocks<Block>(xs[pair ? r + 1 : r]);
        __m512 acc[NC];
        float min0[NC], min1[NC];
        for (int c = 0; c < NC; ++c) {
            acc[c] = _mm512_setzero_ps();
            min0[c] = min1[c] = 0.0f;
        }
        for (int64_t b = 0; b < nb; ++b) {
            const __m512i u = _mm512_inserti64x4(_mm512_castsi256_si512(unsigned_bytes<F>(x0[b])),
                                                 unsigned_bytes<F>(x1[b]), 1);
            const __m512 dx =
                _mm512_mask_mov_ps(_mm512_set1_ps(half_to_float(x0[b].d)), __mmask16(0xff00),
                                   _mm512_set1_ps(half_to_float(x1[b].d)));
#pragma GCC unroll 4
            for (int c = 0; c < NC; ++c) {
                const __m512i sums = _mm512_dpbusd_epi32(start[c][b], u, qy[c][b]);
                const __m512 scale = _mm512_mul_ps(dx, _mm512_set1_ps(dy[c][b]));
                acc[c] = _mm512_fmadd_ps(scale, _mm512_cvtepi32_ps(sums), acc[c]);
                if constexpr (kHasMin<F>) {
                    min0[c] = std::fma(half_to_float(x0[b].m), sy[c][b], min0[c]);
                    min1[c] = std::fma(half_to_float(x1[b].m), sy[c][b], min1[c]);
                }
            }
        }
        for (int c = 0; c < NC; ++c) {
            const __m512 sums = half_sums(acc[c]);
            out[c][r] = sums[0] + min0[c];
            if (pair) out[c][r + 1] = sums[8] + min1[c];
        }
    }
}

#else

template <typename F, int NC>
void dot_grid(int64_t n, const void *const *xs, int64_t n_rows, const void *const *ys,
              float *const *out) {
    dot_grid_by_rows<F, NC>(n, xs, n_rows, ys, out);
}

#endif

template <typename F>
void dot_grid_group(int64_t n, const void *const *xs, int64_t n_rows, const void *const *ys,
                    int n_cols, float *const *out) {
    static_assert(kMaxDotColumns == 4, "one instantiation per column count");
    constexpr void (*kByCount[])(int64_t, const void *const *, int64_t, const void *const *,
                                 float *const *) = {dot_grid<F, 1>, dot_grid<F, 2>, dot_grid<F, 3>,
                                                    dot_grid<F, 4>};
    kByCount[n_cols - 1](n, xs, n_rows, ys, out);
}

template <typename F>
void dot_column_group(int64_t n, const void *x, const void *const *ys, int n_cols, float *out) {
    static_assert(kMaxDotColumns == 4, "one instantiation per column count");
    constexpr void (*kByCount[])(int64_t, const void *, const void *const *, float *) = {
        dot_columns<F, 1>, dot_columns<F, 2>, dot_columns<F, 3>, dot_columns<F, 4>};
    kByCount[n_cols - 1](n, x, ys, out);
}

// Entry<F>::fn for the format of this type, or null for other types.
template <template <typename> typename Entry>
auto by_format(DType type) -> std::remove_const_t<decltype(Entry<Q8_0>::fn)> {
    switch (type) {
        case DType::Q4_0:
            return Entry<Q4_0>::fn;
        case DType::Q4_1:
            return Entry<Q4_1>::fn;
        case DType::Q5_0:
            return Entry<Q5_0>::fn;
        case DType::Q5_1:
            return Entry<Q5_1>::fn;
        case DType::Q8_0:
            return Entry<Q8_0>::fn;
        default:
            return nullptr;
    }
}
template <typename F>
struct ColumnsOf {
    static constexpr DotColumns fn = dot_column_group<F>;
};
template <typename F>
struct GridOf {
    static constexpr DotGrid fn = dot_grid_group<F>;
};

}  // namespace

float vec_dot_q4_0_q8_0(int64_t n, const void *x, const void *y) {
    return dot<Q4_0>(n, x, y);
}
float vec_dot_q4_1_q8_1(int64_t n, const void *x, const void *y) {
    return dot<Q4_1>(n, x, y);
}
float vec_dot_q5_0_q8_0(int64_t n, const void *x, const void *y) {
    return dot<Q5_0>(n, x, y);
}
float vec_dot_q5_1_q8_1(int64_t n, const void *x, const void *y) {
    return dot<Q5_1>(n, x, y);
}
float vec_dot_q8_0_q8_0(int64_t n, const void *x, const void *y) {
    return dot<Q8_0>(n, x, y);
}

DotColumns legacy_dot_columns(DType type) {
    return by_format<ColumnsOf>(type);
}
DotGrid legacy_dot_grid(DType type) {
    return by_format<GridOf>(type);
}

}  // namespace loom::quant::inline LOOM_ISA
