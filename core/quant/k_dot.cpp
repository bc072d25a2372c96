// Dot products of K-quant rows with Q8_K rows, in the order of ggml's generic kernels: per
// super-block, 8 int32 lane sums (lane l takes the elements i with i % 8 == l, each product
// q * q8 times its sub-block's scale), then sums[l] += d * lane[l] in float, the min terms
// subtracted per block, and the 8 float sums added last. The vector variant unpacks the quants
// and forms the lane sums with GCC vector arithmetic (AVX2 or AVX-512 with -march=native, SSE2
// otherwise); integers are exact and the float steps are shared, so both variants give the same
// float, bit for bit.
#include <cstring>

#include "core/quant/k_blocks.h"
#include "loom/fp16.h"

namespace loom::quant::inline LOOM_ISA {
namespace {

constexpr int kLanes = 8;

// lanes[l] += scales[i / group] * q[i] * q8[i] for i % 8 == l, over one super-block.
template <int group>
void lane_sums_scalar(const int8_t *q, const int8_t *q8, const int *scales, int32_t *lanes) {
    for (int i = 0; i < QK_K; i += kLanes) {
        for (int l = 0; l < kLanes; ++l) lanes[l] += scales[i / group] * (q[i + l] * q8[i + l]);
    }
}

// The same with vectors: products of 16 elements at a time in int16 lanes (|q * q8| <= 32 * 128,
// so two still fit), summed over the sub-block, then widened to int32 and scaled. Lane k of 16
// holds elements k mod 16, so adding the two halves leaves each int32 lane l with exactly the
// elements l mod 8.
typedef int8_t Bytes16 __attribute__((vector_size(16)));
typedef int16_t Shorts16 __attribute__((vector_size(32)));
typedef int16_t Shorts8 __attribute__((vector_size(16)));
typedef int32_t Ints8 __attribute__((vector_size(32)));
template <int group>
void lane_sums_vector(const int8_t *q, const int8_t *q8, const int *scales, int32_t *lanes) {
    Ints8 acc;
    std::memcpy(&acc, lanes, sizeof acc);
    for (int g = 0; g < QK_K; g += group) {
        Shorts16 products = {};
        for (int i = g; i < g + group; i += 16) {
            Bytes16 a, b;
            std::memcpy(&a, q + i, sizeof a);
            std::memcpy(&b, q8 + i, sizeof b);
            products += __builtin_convertvector(a, Shorts16) * __builtin_convertvector(b, Shorts16);
        }
        Shorts8 low, high;
        std::memcpy(&low, &products, sizeof low);
        std::memcpy(&high, reinterpret_cast<const char *>(&products) + sizeof low, sizeof high);
        acc += scales[g / group] *
               (__builtin_convertvector(low, Ints8) + __builtin_convertvector(high, Ints8));
    }
    std::memcpy(lanes, &acc, sizeof acc);
}

// A super-block of 16 sub-blocks of 16 without mins (Q3_K, Q6_K), unpacked to signed levels.
struct Unpacked16 {
    int8_t q[QK_K];
    int scales[QK_K / 16];
    float d;
};

// A super-block of 8 sub-blocks of 32 with mins (Q4_K, Q5_K).
struct Unpacked32 {
    int8_t q[QK_K];
    int scales[QK_K / 32];
    int mins[QK_K / 32];
    float d, dmin;
};

// Unpacking the quants, element by element (the reference) or 32 bytes at a time. Byte
// arithmetic wraps, so an unsigned level minus its offset reads back as the signed level.
typedef uint8_t Bytes32 __attribute__((vector_size(32)));
// By reference: a 32-byte vector passed by value has a different ABI with and without AVX.
void load32(Bytes32 &v, const uint8_t *p) {
    std::memcpy(&v, p, sizeof v);
}
void store32(int8_t *p, const Bytes32 &v) {
    std::memcpy(p, &v, sizeof v);
}

// Q2_K and Q3_K: per 128 elements, bits 2s..2s+1 of byte l of 32 hold element 32s + l.
int two_bits(const uint8_t *qs, int j) {
    return (qs[32 * (j / 128) + j % 32] >> (2 * ((j % 128) / 32))) & 3;
}

template <bool vector>
void unpack_quants(const BlockQ2K &x, int8_t *q) {
    if constexpr (vector) {
        for (int half = 0; half < 2; ++half) {
            Bytes32 v;
            load32(v, x.qs + 32 * half);
            for (int s = 0; s < 4; ++s) store32(q + 128 * half + 32 * s, (v >> (2 * s)) & 3);
        }
    } else {
        for (int j = 0; j < QK_K; ++j) q[j] = int8_t(two_bits(x.qs, j));
    }
}

// Q3_K: the high bit of element j is bit j / 32 of hmask[j % 32]; a clear bit means level - 4.
template <bool vector>
void unpack_quants(const BlockQ3K &x, int8_t *q) {
    if constexpr (vector) {
        Bytes32 hm;
        load32(hm, x.hmask);
        for (int half = 0; half < 2; ++half) {
            Bytes32 v;
            load32(v, x.qs + 32 * half);
            for (int s = 0; s < 4; ++s) {
                const Bytes32 high = (hm >> (4 * half + s)) & 1;
                store32(q + 128 * half + 32 * s, ((v >> (2 * s)) & 3) + (high << 2) - 4);
            }
        }
    } else {
        for (int j = 0; j < QK_K; ++j) {
            const bool high = x.hmask[j % 32] & (1 << (j / 32));
            q[j] = int8_t(two_bits(x.qs, j) - (high ? 0 : 4));
        }
    }
}

// Q4_K: per 64 elements, 32 bytes hold the first 32 in low nibbles, the next 32 in high ones.
template <bool vector>
void unpack_quants(const BlockQ4K &x, int8_t *q) {
    if constexpr (vector) {
        for (int k = 0; k < 4; ++k) {
            Bytes32 v;
            load32(v, x.qs + 32 * k);
            store32(q + 64 * k, v & 0xF);
            store32(q + 64 * k + 32, v >> 4);
        }
    } else {
        for (int j = 0; j < QK_K; ++j) {
            const uint8_t byte = x.qs[32 * (j / 64) + j % 32];
            q[j] = int8_t((j % 64) < 32 ? byte & 0xF : byte >> 4);
        }
    }
}

// Q5_K: nibbles as Q4_K; the fifth bit of element j is bit j / 32 of qh[j % 32].
template <bool vector>
void unpack_quants(const BlockQ5K &x, int8_t *q) {
    if constexpr (vector) {
        Bytes32 h;
        load32(h, x.qh);
        for (int k = 0; k < 4; ++k) {
            Bytes32 v;
            load32(v, x.qs + 32 * k);
            store32(q + 64 * k, (v & 0xF) | (((h >> (2 * k)) & 1) << 4));
            store32(q + 64 * k + 32, (v >> 4) | (((h >> (2 * k + 1)) & 1) << 4));
        }
    } else {
        for (int j = 0; j < QK_K; ++j) {
            const uint8_t byte = x.qs[32 * (j / 64) + j % 32];
            const int low = (j % 64) < 32 ? byte & 0xF : byte >> 4;
            const int high = (x.qh[j % 32] >> (j / 32)) & 1;
            q[j] = int8_t(low | (high << 4));
        }
    }
}

// Q6_K: per 128 elements, ql[l] holds elements l and l + 64 (low, high nibble), ql[l + 32]
// elements l + 32 and l + 96, and bits 2s..2s+1 of qh[l] the top bits of element 32s + l.
template <bool vector>
void unpack_quants(const BlockQ6K &x, int8_t *q) {
    if constexpr (vector) {
        for (int half = 0; half < 2; ++half, q += 128) {
            Bytes32 a;
            load32(a, x.ql + 64 * half);
            Bytes32 b;
            load32(b, x.ql + 64 * half + 32);
            Bytes32 h;
            load32(h, x.qh + 32 * half);
            store32(q, ((a & 0xF) | ((h & 3) << 4)) - 32);
            store32(q + 32, ((b & 0xF) | (((h >> 2) & 3) << 4)) - 32);
            store32(q + 64, ((a >> 4) | (((h >> 4) & 3) << 4)) - 32);
            store32(q + 96, ((b >> 4) | ((h >> 6) << 4)) - 32);
        }
    } else {
        for (int j = 0; j < QK_K; ++j) {
            const int half = j / 128, quarter = (j % 128) / 32, l = j % 32;
            const uint8_t ql = x.ql[64 * half + 32 * (quarter & 1) + l];
            const int low = quarter < 2 ? ql & 0xF : ql >> 4;
            const int high = (x.qh[32 * half + l] >> (2 * quarter)) & 3;
            q[j] = int8_t((low | (high << 4)) - 32);
        }
    }
}

void unpack_scales(const BlockQ3K &x, Unpacked16 &u) {
    for (int j = 0; j < QK_K / 16; ++j) {
        const int low = j < 8 ? x.scales[j] & 0xF : x.scales[j - 8] >> 4;
        u.scales[j] = (low | (((x.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
    }
    u.d = fp16_to_f32(x.d);
}

void unpack_scales(const BlockQ6K &x, Unpacked16 &u) {
    for (int j = 0; j < QK_K / 16; ++j) u.scales[j] = x.scales[j];
    u.d = fp16_to_f32(x.d);
}

template <typename Block>
void unpack_scales(const Block &x, Unpacked32 &u) {
    for (int j = 0; j < QK_K / 32; ++j) {
        uint8_t sc, m;
        scale_min_k4(j, x.scales, sc, m);
        u.scales[j] = sc;
        u.mins[j] = m;
    }
    u.d = fp16_to_f32(x.d);
    u.dmin = fp16_to_f32(x.dmin);
}

template <int group, bool vector>
void lane_sums(const int8_t *q, const int8_t *q8, const int *scales, int32_t *lanes) {
    if constexpr (vector) {
        lane_sums_vector<group>(q, q8, scales, lanes);
    } else {
        lane_sums_scalar<group>(q, q8, scales, lanes);
    }
}

// Q3_K and Q6_K.
template <typename Block, bool vector>
float dot_without_mins(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const Block *>(vx);
    const auto *y = static_cast<const BlockQ8K *>(vy);
    float sums[kLanes] = {};
    Unpacked16 u;
    for (int64_t b = 0; b < n / QK_K; ++b) {
        unpack_quants<vector>(x[b], u.q);
        unpack_scales(x[b], u);
        int32_t lanes[kLanes] = {};
        lane_sums<16, vector>(u.q, y[b].qs, u.scales, lanes);
        const float d = u.d * y[b].d;
        for (int l = 0; l < kLanes; ++l) sums[l] += d * lanes[l];
    }
    float sumf = 0;
    for (int l = 0; l < kLanes; ++l) sumf += sums[l];
    return sumf;
}

// Q4_K and Q5_K.
template <typename Block, bool vector>
float dot_with_mins(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const Block *>(vx);
    const auto *y = static_cast<const BlockQ8K *>(vy);
    float sums[kLanes] = {};
    float sumf = 0;
    Unpacked32 u;
    for (int64_t b = 0; b < n / QK_K; ++b) {
        unpack_quants<vector>(x[b], u.q);
        unpack_scales(x[b], u);
        int sum_mins = 0;  // sum of min * q8 over the block, from Q8_K's sums of 16
        for (int j = 0; j < QK_K / 16; ++j) sum_mins += y[b].bsums[j] * u.mins[j / 2];
        int32_t lanes[kLanes] = {};
        lane_sums<32, vector>(u.q, y[b].qs, u.scales, lanes);
        const float d = u.d * y[b].d;
        for (int l = 0; l < kLanes; ++l) sums[l] += d * lanes[l];
        const float dmin = u.dmin * y[b].d;
        sumf -= dmin * sum_mins;
    }
    for (int l = 0; l < kLanes; ++l) sumf += sums[l];
    return sumf;
}

// Q2_K keeps one integer sum per block (ggml's generic q2_K kernel).
template <bool vector>
float dot_q2_k_impl(int64_t n, const void *vx, const void *vy) {
    const auto *x = static_cast<const BlockQ2K *>(vx);
    const auto *y = static_cast<const BlockQ8K *>(vy);
    float sumf = 0;
    int8_t q[QK_K];
    int scales[QK_K / 16];
    for (int64_t b = 0; b < n / QK_K; ++b) {
        int sum_mins = 0;
        for (int j = 0; j < QK_K / 16; ++j) sum_mins += y[b].bsums[j] * (x[b].scales[j] >> 4);
        unpack_quants<vector>(x[b], q);
        for (int j = 0; j < QK_K / 16; ++j) scales[j] = x[b].scales[j] & 0xF;
        int32_t lanes[kLanes] = {};
        lane_sums<16, vector>(q, y[b].qs, scales, lanes);
        int isum = 0;
        for (int l = 0; l < kLanes; ++l) isum += lanes[l];
        const float dall = y[b].d * fp16_to_f32(x[b].d);
        const float dmin = y[b].d * fp16_to_f32(x[b].dmin);
        sumf += dall * isum - dmin * sum_mins;
    }
    return sumf;
}

}  // namespace

float dot_q2_k(int64_t n, const void *x, const void *y) {
    return dot_q2_k_impl<true>(n, x, y);
}
float dot_q3_k(int64_t n, const void *x, const void *y) {
    return dot_without_mins<BlockQ3K, true>(n, x, y);
}
float dot_q4_k(int64_t n, const void *x, const void *y) {
    return dot_with_mins<BlockQ4K, true>(n, x, y);
}
float dot_q5_k(int64_t n, const void *x, const void *y) {
    return dot_with_mins<BlockQ5K, true>(n, x, y);
}
float dot_q6_k(int64_t n, const void *x, const void *y) {
    return dot_without_mins<BlockQ6K, true>(n, x, y);
}

float dot_q2_k_scalar(int64_t n, const void *x, const void *y) {
    return dot_q2_k_impl<false>(n, x, y);
}
float dot_q3_k_scalar(int64_t n, const void *x, const void *y) {
    return dot_without_mins<BlockQ3K, false>(n, x, y);
}
float dot_q4_k_scalar(int64_t n, const void *x, const void *y) {
    return dot_with_mins<BlockQ4K, false>(n, x, y);
}
float dot_q5_k_scalar(int64_t n, const void *x, const void *y) {
    return dot_with_mins<BlockQ5K, false>(n, x, y);
}
float dot_q6_k_scalar(int64_t n, const void *x, const void *y) {
    return dot_without_mins<BlockQ6K, false>(n, x, y);
}

}  // namespace loom::quant::inline LOOM_ISA
