// Dot products of the table-indexed 4-bit formats with Q8_0 / Q8_K activations in the order of
// ggml's AVX2 kernels (lut4_formats.h): AVX2 byte multiply-adds where the build has them, the same
// arithmetic lane by lane otherwise.
#include <cmath>

#include "core/quant/lut4_formats.h"
#include "core/quant/quant.h"
#include "loom/fp16.h"

#if LOOM_X86_AVX2 && LOOM_X86_FMA
#include <immintrin.h>
#define LOOM_LUT4_AVX2 1
#endif

namespace loom::quant::inline LOOM_ISA {
namespace {

constexpr int QK = kLut4Block;
constexpr int kLanes = 8;  // ggml's AVX2 accumulator: 8 floats, each fed 4 products per block

float half_to_float(uint16_t h) {
#if defined(LOOM_LUT4_AVX2) && LOOM_X86_F16C
    return _cvtsh_ss(h);
#else
    return fp16_to_f32(h);
#endif
}

// Each format: its block, its table and its block scale.
struct Mxfp4 {
    using Block = BlockMXFP4;
    static constexpr const int8_t *kValues = kValuesMxfp4;
    static float scale(const Block &b) { return e8m0_half_to_f32(b.e); }
};

struct Iq4nl {
    using Block = BlockIQ4NL;
    static constexpr const int8_t *kValues = kValuesIq4nl;
    static float scale(const Block &b) { return half_to_float(b.d); }
};

// The exact integer sum of the products of elements first .. first + count - 1 of a 32-block
// whose codes are the nibbles of qs (lane l: 4l .. 4l + 3) with the activations q8.
int lane_sum(const uint8_t *qs, const int8_t *values, const int8_t *q8, int first, int count) {
    int sum = 0;
    for (int j = first; j < first + count; ++j) {
        const uint8_t byte = qs[j % (QK / 2)];
        const int code = j < QK / 2 ? byte & 0x0f : byte >> 4;
        sum += int(values[code]) * int(q8[j]);
    }
    return sum;
}
template <typename F>
int lane_sum(const typename F::Block &x, const BlockQ8_0 &y, int first, int count) {
    return lane_sum(x.qs, F::kValues, y.qs, first, count);
}

#if defined(LOOM_LUT4_AVX2)

// The 32 values whose codes are the nibbles of qs[0, 16) as signed bytes, element j in byte j.
__m256i weight_bytes(const uint8_t *qs, const int8_t *values) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i *>(values));
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i *>(qs));
    const __m128i low4 = _mm_set1_epi8(0x0f);
    const __m128i low = _mm_shuffle_epi8(table, _mm_and_si128(packed, low4));
    const __m128i high = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(packed, 4), low4));
    return _mm256_set_m128i(high, low);
}

// Lane l: the sum of products 4l .. 4l + 3, formed as |x| times y with x's sign (maddubs wants
// one side unsigned); the 16-bit pair sums stay below 2 * 127 * 127, so nothing saturates.
__m256i lane_sums(__m256i x, __m256i y) {
    const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(x, x), _mm256_sign_epi8(y, x));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}

// ggml's hsum_float_8: halves, then pairs, then the last two lanes.
float hsum_float_8(__m256 v) {
    __m128 r = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
    r = _mm_add_ps(r, _mm_movehl_ps(r, r));
    r = _mm_add_ss(r, _mm_movehdup_ps(r));
    return _mm_cvtss_f32(r);
}

// out[c] = the dot of x with column ys[c], c < NC: each weight block is decoded once for the NC
// columns; every column's arithmetic is that of a single dot product.
template <typename F, int NC>
void dot_columns(int64_t n, const void *vx, const void *const *ys, float *out) {
    const auto *x = blocks<typename F::Block>(vx);
    const BlockQ8_0 *y[NC];
    __m256 acc[2][NC];  // even blocks, odd blocks
    for (int c = 0; c < NC; ++c) {
        y[c] = blocks<BlockQ8_0>(ys[c]);
        acc[0][c] = acc[1][c] = _mm256_setzero_ps();
    }
    const int64_t nb = n / QK;
    int64_t ib = 0;
    for (; ib + 1 < nb; ib += 2) {
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
            const __m256i qx = weight_bytes(x[ib + h].qs, F::kValues);
            const float dx = F::scale(x[ib + h]);
#pragma GCC unroll 4
            for (int c = 0; c < NC; ++c) {
                const BlockQ8_0 &b = y[c][ib + h];
                const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(b.qs));
                const __m256 scale = _mm256_set1_ps(half_to_float(b.d) * dx);
                acc[h][c] =
                    _mm256_fmadd_ps(scale, _mm256_cvtepi32_ps(lane_sums(qx, qy)), acc[h][c]);
            }
        }
    }
    for (int c = 0; c < NC; ++c) {
        float total = hsum_float_8(_mm256_add_ps(acc[0][c], acc[1][c]));
        if (ib < nb) {
            const float d = half_to_float(y[c][ib].d) * F::scale(x[ib]);
            total = std::fma(d, float(lane_sum<F>(x[ib], y[c][ib], 0, QK)), total);
        }
        out[c] = total;
    }
}

#else

template <typename F, int NC>
void dot_columns(int64_t n, const void *vx, const void *const *ys, float *out) {
    const auto *x = blocks<typename F::Block>(vx);
    const int64_t nb = n / QK;
    for (int c = 0; c < NC; ++c) {
        const auto *y = blocks<BlockQ8_0>(ys[c]);
        float acc[2][kLanes] = {};
        int64_t ib = 0;
        for (; ib + 1 < nb; ib += 2) {
            for (int h = 0; h < 2; ++h) {
                const float d = half_to_float(y[ib + h].d) * F::scale(x[ib + h]);
                for (int l = 0; l < kLanes; ++l) {
                    const int s = lane_sum<F>(x[ib + h], y[ib + h], 4 * l, 4);
                    acc[h][l] = std::fma(d, float(s), acc[h][l]);
                }
            }
        }
        float v[kLanes];
        for (int l = 0; l < kLanes; ++l) v[l] = acc[0][l] + acc[1][l];
        float total = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
        if (ib < nb) {
            const float d = half_to_float(y[ib].d) * F::scale(x[ib]);
            total = std::fma(d, float(lane_sum<F>(x[ib], y[ib], 0, QK)), total);
        }
        out[c] = total;
    }
}

#endif

// IQ4_XS against Q8_K (lut4_formats.h): per super-block 8 integer lanes, lane l summing over the
// sub-blocks their scale times the products of elements 4l .. 4l + 3; acc_l = fma(d_x * d_y,
// lane_l, acc_l); the lanes added as ggml's hsum_float_8 at the end.
#if defined(LOOM_LUT4_AVX2)

template <int NC>
void dot_columns_xs(int64_t n, const void *vx, const void *const *ys, float *out) {
    const auto *x = blocks<BlockIQ4XS>(vx);
    const BlockQ8K *y[NC];
    __m256 acc[NC];
    for (int c = 0; c < NC; ++c) {
        y[c] = blocks<BlockQ8K>(ys[c]);
        acc[c] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < n / QK_K; ++i) {
        __m256i lanes[NC];
        for (int c = 0; c < NC; ++c) lanes[c] = _mm256_setzero_si256();
        for (int ib = 0; ib < QK_K / QK; ++ib) {
            const __m256i qx = weight_bytes(x[i].qs + ib * (QK / 2), kValuesIq4nl);
            const __m256i ax = _mm256_sign_epi8(qx, qx);
            const __m256i scale = _mm256_set1_epi16(int16_t(iq4xs_scale(x[i], ib)));
#pragma GCC unroll 4
            for (int c = 0; c < NC; ++c) {
                const __m256i qy =
                    _mm256_loadu_si256(reinterpret_cast<const __m256i *>(y[c][i].qs + ib * QK));
                const __m256i pairs = _mm256_maddubs_epi16(ax, _mm256_sign_epi8(qy, qx));
                lanes[c] = _mm256_add_epi32(lanes[c], _mm256_madd_epi16(pairs, scale));
            }
        }
        const float dx = half_to_float(x[i].d);
        for (int c = 0; c < NC; ++c) {
            acc[c] = _mm256_fmadd_ps(_mm256_set1_ps(dx * y[c][i].d), _mm256_cvtepi32_ps(lanes[c]),
                                     acc[c]);
        }
    }
    for (int c = 0; c < NC; ++c) out[c] = hsum_float_8(acc[c]);
}

#else

template <int NC>
void dot_columns_xs(int64_t n, const void *vx, const void *const *ys, float *out) {
    const auto *x = blocks<BlockIQ4XS>(vx);
    for (int c = 0; c < NC; ++c) {
        const auto *y = blocks<BlockQ8K>(ys[c]);
        float acc[kLanes] = {};
        for (int64_t i = 0; i < n / QK_K; ++i) {
            int lanes[kLanes] = {};
            for (int ib = 0; ib < QK_K / QK; ++ib) {
                const int scale = iq4xs_scale(x[i], ib);
                for (int l = 0; l < kLanes; ++l) {
                    lanes[l] += scale * lane_sum(x[i].qs + ib * (QK / 2), kValuesIq4nl,
                                                 y[i].qs + ib * QK, 4 * l, 4);
                }
            }
            const float d = half_to_float(x[i].d) * y[i].d;
            for (int l = 0; l < kLanes; ++l) acc[l] = std::fma(d, float(lanes[l]), acc[l]);
        }
        out[c] = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
    }
}

#endif

void dot_column_group_xs(int64_t n, const void *x, const void *const *ys, int n_cols, float *out) {
    static_assert(kMaxDotColumns == 4, "one instantiation per column count");
    constexpr void (*kByCount[])(int64_t, const void *, const void *const *, float *) = {
        dot_columns_xs<1>, dot_columns_xs<2>, dot_columns_xs<3>, dot_columns_xs<4>};
    kByCount[n_cols - 1](n, x, ys, out);
}

template <typename F>
float dot(int64_t n, const void *vx, const void *vy) {
    float out;
    dot_columns<F, 1>(n, vx, &vy, &out);
    return out;
}

template <typename F>
void dot_column_group(int64_t n, const void *x, const void *const *ys, int n_cols, float *out) {
    static_assert(kMaxDotColumns == 4, "one instantiation per column count");
    constexpr void (*kByCount[])(int64_t, const void *, const void *const *, float *) = {
        dot_columns<F, 1>, dot_columns<F, 2>, dot_columns<F, 3>, dot_columns<F, 4>};
    kByCount[n_cols - 1](n, x, ys, out);
}

}  // namespace

float vec_dot_mxfp4_q8_0(int64_t n, const void *x, const void *y) {
    return dot<Mxfp4>(n, x, y);
}
float vec_dot_iq4_nl_q8_0(int64_t n, const void *x, const void *y) {
    return dot<Iq4nl>(n, x, y);
}
float vec_dot_iq4_xs_q8_k(int64_t n, const void *x, const void *y) {
    float out;
    dot_columns_xs<1>(n, x, &y, &out);
    return out;
}

DotColumns lut4_dot_columns(DType type) {
    switch (type) {
        case DType::MXFP4:
            return dot_column_group<Mxfp4>;
        case DType::IQ4_NL:
            return dot_column_group<Iq4nl>;
        case DType::IQ4_XS:
            return dot_column_group_xs;
        default:
            return nullptr;
    }
}

}  // namespace loom::quant::inline LOOM_ISA
