// Fused attention (flash_attn_ext): for each (query, head) row, scores against every kv
// position, online softmax and the weighted sum of values, with F32 accumulation throughout.
//
// Rows that read the same kv head are processed in tiles (see "Tiles" below), and the kv
// positions in blocks of kBlock. Per block:
//   1. the positions some row of the tile can see are listed (K/V rows masked for every row,
//      which may be stale cache slots, are never read);
//   2. their scores q·k * scale (softcapped, plus slope * mask) are computed, four rows of the
//      tile against VL / 4 K rows at a time (see "Scores"), the block's K rows staying in L1
//      for the whole tile;
//   3. each row's running maximum is raised once for the whole block, rescaling its accumulator;
//   4. the weights exp(s - max) are computed a vector at a time;
//   5. the values are accumulated a slice of the head at a time, the slices of four rows held in
//      registers while each V row of the block is loaded (from L1 after the first four) and
//      added to them.
// The order of every sum depends only on the shapes, never on the thread count.
//
// K and V may also be in a block format (a quantized KV cache: Q8_0, Q4_0, ...). Block-format
// keys meet the query quantized to the format's vec_dot_type (Q8_0 or Q8_1) in the format's own
// dot product, bit for bit what llama.cpp computes for each (row, position), four rows at a time
// against every visible key (quant::legacy_dot_grid). Q8_0 and Q4_0 values are read from their
// blocks as they are accumulated; other formats' visible V rows are expanded to F32 once per
// tile and accumulated from there.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/cpu/kernels.h"
#include "core/cpu/simd.h"
#include "core/quant/half.h"
#include "core/quant/legacy_formats.h"
#include "core/quant/lut4_formats.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

using namespace simd;

constexpr int64_t kBlock = 64;  // kv positions per rescale of the accumulator
static_assert(kBlock % VL == 0);

// ---------------------------------------------------------------------------------------------
// Tiles: up to kTile rows that read the same kv head go through the kv positions together, so
// every K and V row of a block is read from memory once for all of them and from L1 after that
// (the query heads of a GQA group, and neighbouring queries of a ubatch). Each row's arithmetic
// is the same whatever tile it is in: its dot products keep their chain and reduction tree, its
// weights stay at their block positions, and a position another row sees but it does not adds a
// weight of exactly 0, which changes nothing (short of turning an accumulator that underflowed to
// -0 into +0). Results thus do not depend on how rows fall into tiles, nor on the thread count.
// (The scalar tails call std::fma explicitly: GCC contracts a * b + c in C++ whatever the -std,
// and might do so differently in each instantiation.)

constexpr int kTile = 16;  // four row groups (below): a block of K and V read from memory once

// ---------------------------------------------------------------------------------------------
// Scores. A group of kRowGroup queries meets kPosGroup K rows at a time: kRowGroup * kPosGroup =
// VL accumulators, one per (query, position), each a single chain of FMAs over the head's
// vectors. Their lane sums then come out of one reduction that packs all VL trees into shared
// shuffles, leaving the VL scores side by side in one vector (no horizontal sum per score).

constexpr int kRowGroup = 4;
constexpr int kPosGroup = VL / kRowGroup;
static_assert(kPosGroup >= 1 && kTile % kRowGroup == 0);

#if defined(__clang__)
// clang has no __builtin_shuffle (the sanitized fuzzing build): the trees one at a time, the
// same sums in the same order.
inline vf lane_sums(vf (&v)[VL]) {
    vf out;
    for (int s = 0; s < VL; ++s) out[s] = hsum(v[s]);
    return out;
}
#else
typedef int32_t vindex __attribute__((vector_size(LOOM_VEC_BYTES)));

// Level L of the reduction combines two vectors X, Y that each hold 2^L sources' partial sums in
// segments of w = VL >> L lanes into one holding 2^(L+1) sources in segments of w / 2: X's
// sources, then Y's, each segment the sum of its low and high halves (High selects the high
// halves, whose lanes lie w / 2 further). Every source is thus summed by hsum's pairwise tree
// (lane i + lane i + VL/2, then + VL/4, ...).
template <int L, bool High>
constexpr vindex level_index() {
    constexpr int w = VL >> L, half = w / 2, sources = 1 << L;
    std::array<int32_t, VL> index{};
    for (int l = 0; l < VL; ++l) {
        const int segment = l / half, offset = l % half + (High ? half : 0);
        index[size_t(l)] =
            segment < sources ? segment * w + offset : VL + (segment - sources) * w + offset;
    }
    return std::bit_cast<vindex>(index);
}

// Fully unrolled and inlined, so that the vectors stay in registers.
template <int L>
[[gnu::always_inline]] inline void reduce_level(vf (&v)[VL]) {
    constexpr vindex low = level_index<L, false>(), high = level_index<L, true>();
    constexpr int n = VL >> L;  // vectors left at this level
#pragma GCC unroll 16
    for (int i = 0; i < n / 2; ++i) {
        v[i] = __builtin_shuffle(v[2 * i], v[2 * i + 1], low) +
               __builtin_shuffle(v[2 * i], v[2 * i + 1], high);
    }
    if constexpr (n > 2) reduce_level<L + 1>(v);
}

// Lane s of the result: the lane sum of v[s], for VL vectors (which it overwrites).
[[gnu::always_inline]] inline vf lane_sums(vf (&v)[VL]) {
    if constexpr (VL > 1) reduce_level<0>(v);
    return v[0];
}
#endif

// Stores lanes [t * kPosGroup, (t + 1) * kPosGroup) of v at out[t], for each row t.
template <size_t T, size_t... J>
void store_slice(vf v, float *out, std::index_sequence<J...>) {
    typedef float slice __attribute__((vector_size(kPosGroup * sizeof(float))));
    const slice x = __builtin_shufflevector(v, v, int(T * kPosGroup + J)...);
    std::memcpy(out, &x, sizeof x);
}
template <size_t... T>
void store_slices(vf v, float *const *out, std::index_sequence<T...>) {
    (store_slice<T>(v, out[T], std::make_index_sequence<kPosGroup>()), ...);
}

// out[t][j] = q[t] · k[j] over n elements, for t < kRowGroup, j < kPosGroup.
template <typename Load>
void dot_group(const float *const *q, const void *const *k, int64_t n, float *const *out) {
    vf acc[VL];
#pragma GCC unroll 16
    for (vf &a : acc) a = vf{};  // (an aggregate {} becomes a memset call)
    int64_t i = 0;
    for (; i + VL <= n; i += VL) {
        vf kv[kPosGroup];
        for (int j = 0; j < kPosGroup; ++j) kv[j] = Load::vec(k[j], i);
        for (int t = 0; t < kRowGroup; ++t) {
            const vf qv = load(q[t] + i);
            for (int j = 0; j < kPosGroup; ++j) {
                acc[t * kPosGroup + j] = fmadd(qv, kv[j], acc[t * kPosGroup + j]);
            }
        }
    }
    vf sums = lane_sums(acc);
    for (; i < n; ++i) {
        for (int t = 0; t < kRowGroup; ++t) {
            for (int j = 0; j < kPosGroup; ++j) {
                sums[t * kPosGroup + j] =
                    std::fma(q[t][i], Load::one(k[j], i), sums[t * kPosGroup + j]);
            }
        }
    }
    store_slices(sums, out, std::make_index_sequence<kRowGroup>());
}

// acc[t][i] += w[t][at[p]] * rows[p][i] for p < count, in p order for every element: rows[p]
// is the V row of block position at[p]. U vectors of each of the T accumulators stay in
// registers while all the rows pass.
template <typename Load, int T, int U>
int64_t accumulate_slices(float *const *acc, int64_t i, int64_t dv, const void *const *rows,
                          const float *const *w, const int32_t *at, int64_t count) {
    for (; i + U * VL <= dv; i += U * VL) {
        vf a[T][U];
        for (int t = 0; t < T; ++t) {
            for (int u = 0; u < U; ++u) a[t][u] = load(acc[t] + i + u * VL);
        }
        for (int64_t p = 0; p < count; ++p) {
            vf wt[T];
            for (int t = 0; t < T; ++t) wt[t] = splat(w[t][at[p]]);
            for (int u = 0; u < U; ++u) {
                const vf v = Load::vec(rows[p], i + u * VL);
                for (int t = 0; t < T; ++t) a[t][u] = fmadd(wt[t], v, a[t][u]);
            }
        }
        for (int t = 0; t < T; ++t) {
            for (int u = 0; u < U; ++u) store(acc[t] + i + u * VL, a[t][u]);
        }
    }
    return i;
}

template <typename Load, int T>
void accumulate_tile(float *const *acc, int64_t dv, const void *const *rows, const float *const *w,
                     const int32_t *at, int64_t count) {
    // Slices as wide as the registers allow: T * U accumulators (a power of two per row, so
    // that head sizes of 64, 128, 256 need no narrower pass) plus T weights and a load.
    constexpr int kAccRegs = VL == 16 ? 16 : 8;
    constexpr int U = kAccRegs / T >= 8 ? 8 : kAccRegs / T >= 4 ? 4 : kAccRegs / T >= 2 ? 2 : 1;
    int64_t i = accumulate_slices<Load, T, U>(acc, 0, dv, rows, w, at, count);
    i = accumulate_slices<Load, T, 1>(acc, i, dv, rows, w, at, count);
    for (; i < dv; ++i) {
        for (int t = 0; t < T; ++t) {
            float a = acc[t][i];
            for (int64_t p = 0; p < count; ++p) a = std::fma(w[t][at[p]], Load::one(rows[p], i), a);
            acc[t][i] = a;
        }
    }
}

using DotGroup = void (*)(const float *const *q, const void *const *k, int64_t n,
                          float *const *out);
using AccumulateTile = void (*)(float *const *acc, int64_t dv, const void *const *rows,
                                const float *const *w, const int32_t *at, int64_t count);

template <typename Load>
constexpr std::array<AccumulateTile, kRowGroup> kAccumulateTiles = {
    accumulate_tile<Load, 1>, accumulate_tile<Load, 2>, accumulate_tile<Load, 3>,
    accumulate_tile<Load, 4>};

// Values read straight from their blocks (Q8_0, Q4_0, the common quantized caches): the VL
// elements of a vector lie in one 32-value block, and come out as the floats to_float gives
// them, q * d.
static_assert(quant::kLegacyBlock % VL == 0);

// VL bytes as 32-bit lanes, sign- or zero-extended (GCC 12 turns a __builtin_convertvector
// between these widths into one element at a time).
template <bool Signed>
vi widen_bytes(const void *p) {
#if LOOM_VEC_BYTES == 64
    const __m128i b = _mm_loadu_si128(static_cast<const __m128i *>(p));
    return vi(Signed ? _mm512_maskz_cvtepi8_epi32(__mmask16(0xffff), b)
                     : _mm512_maskz_cvtepu8_epi32(__mmask16(0xffff), b));
#elif LOOM_VEC_BYTES == 32
    const __m128i b = _mm_loadl_epi64(static_cast<const __m128i *>(p));
    return vi(Signed ? _mm256_cvtepi8_epi32(b) : _mm256_cvtepu8_epi32(b));
#else
    vi v;
    for (int l = 0; l < VL; ++l) {
        v[l] = Signed ? static_cast<const int8_t *>(p)[l] : static_cast<const uint8_t *>(p)[l];
    }
    return v;
#endif
}

struct LoadQ8_0 {
    static vf vec(const void *row, int64_t i) {
        const auto &b = static_cast<const quant::BlockQ8_0 *>(row)[i / quant::kLegacyBlock];
        const vi q = widen_bytes<true>(b.qs + i % quant::kLegacyBlock);
        return __builtin_convertvector(q, vf) * splat(quant::half_to_float(b.d));
    }
    static float one(const void *row, int64_t i) {
        const auto &b = static_cast<const quant::BlockQ8_0 *>(row)[i / quant::kLegacyBlock];
        return float(b.qs[i % quant::kLegacyBlock]) * quant::half_to_float(b.d);
    }
};

struct LoadQ4_0 {  // element j of a block: the low nibble of byte j, then (j >= 16) the high
    static constexpr int kHalf = quant::kLegacyBlock / 2;
    static vf vec(const void *row, int64_t i) {
        const auto &b = static_cast<const quant::BlockQ4_0 *>(row)[i / quant::kLegacyBlock];
        const int64_t j = i % quant::kLegacyBlock;
        const vi packed = widen_bytes<false>(b.qs + j % kHalf);
        const vi q = (j < kHalf ? packed & 0x0f : packed >> 4) - 8;
        return __builtin_convertvector(q, vf) * splat(quant::half_to_float(b.d));
    }
    static float one(const void *row, int64_t i) {
        const auto &b = static_cast<const quant::BlockQ4_0 *>(row)[i / quant::kLegacyBlock];
        const int64_t j = i % quant::kLegacyBlock;
        const int nibble = j < kHalf ? b.qs[j] & 0x0f : b.qs[j - kHalf] >> 4;
        return float(nibble - 8) * quant::half_to_float(b.d);
    }
};

// Keys per dtype (F32, F16, BF16); values per dtype (those, then Q8_0, Q4_0), then per row
// group size - 1. Other block formats are expanded to F32 rows first.
constexpr std::array<DotGroup, 3> kDotGroupsByType = {dot_group<LoadF32>, dot_group<LoadF16>,
                                                      dot_group<LoadBF16>};
constexpr std::array<std::array<AccumulateTile, kRowGroup>, 5> kAccumulateTilesByType = {
    kAccumulateTiles<LoadF32>, kAccumulateTiles<LoadF16>, kAccumulateTiles<LoadBF16>,
    kAccumulateTiles<LoadQ8_0>, kAccumulateTiles<LoadQ4_0>};

int value_type_index(DType t) {
    switch (t) {
        case DType::F16:
            return 1;
        case DType::BF16:
            return 2;
        case DType::Q8_0:
            return 3;
        case DType::Q4_0:
            return 4;
        default:
            return 0;  // F32, or a block format expanded to it
    }
}

// Whether V rows of this type are expanded to F32 per tile rather than read in place.
bool expands_values(DType t) {
    return traits(t).is_quantized && value_type_index(t) == 0;
}

// out[t][p] = the format's vec_dot of block-format key p with query t (in K's vec_dot_type), for
// t < n_q <= kRowGroup: the legacy formats' grid (two keys a vector), else one key at a time for
// all the queries, else one product at a time.
void key_dots(DType type, int64_t d, const void *const *keys, int64_t count, const void *const *q,
              int n_q, float *const *out) {
    static_assert(kRowGroup <= quant::kMaxDotColumns);
    if (const quant::DotGrid grid = quant::legacy_dot_grid(type)) {
        grid(d, keys, count, q, n_q, out);
    } else if (const quant::DotColumns columns = quant::lut4_dot_columns(type)) {
        for (int64_t p = 0; p < count; ++p) {
            float dots[kRowGroup];
            columns(d, keys[p], q, n_q, dots);
            for (int t = 0; t < n_q; ++t) out[t][p] = dots[t];
        }
    } else {
        const auto vec_dot = traits(type).vec_dot;
        for (int t = 0; t < n_q; ++t) {
            for (int64_t p = 0; p < count; ++p) out[t][p] = vec_dot(d, keys[p], q[t]);
        }
    }
}

// Every cache line the row touches (a block-format row need not start on one), into L2
// (prefetcht1): on Zen 5 that reads the cache twice as fast as prefetching into L1, which
// measured no better than no prefetch at all (flash_attn/tg_d4096: 22 ms with either, 12.5 ms).
void prefetch_row(const void *row, size_t bytes) {
    const uintptr_t first = reinterpret_cast<uintptr_t>(row) & ~uintptr_t(63);
    const uintptr_t end = reinterpret_cast<uintptr_t>(row) + bytes;
    for (uintptr_t line = first; line < end; line += 64) {
        __builtin_prefetch(reinterpret_cast<const char *>(line), 0, 2);
    }
}

int type_index(DType t) {
    return t == DType::F16 ? 1 : t == DType::BF16 ? 2 : 0;
}

void scale_in_place(float *y, float s, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] *= s;
}

// ---------------------------------------------------------------------------------------------
// One tile of rows.

// Floats rounded up to whole 64-byte lines.
int64_t padded(int64_t n_floats) {
    return (n_floats + 15) / 16 * 16;
}

// Per-thread scratch, each part padded to 64 bytes.
struct Scratch {
    float *q;                 // [kTile][D] the queries, rounded to K's dtype
    void *q_narrow;           // [D] a query in K's dtype (F16/BF16 keys), on the way to q
    float *acc;               // [kTile][Dv] running sums of exp(s - max) * v
    float *scores;            // [kTile][kBlock] scores, then weights, per block position
    float *dense;             // [kTile][kBlock] dot products, per visible position
    float *bias;              // [kTile + 1][kBlock] slope * mask per row, then the rows' largest
    const void **key_rows;    // [kBlock] K rows of the visible positions
    const void **value_rows;  // [kBlock] V rows of the visible positions
    int32_t *visible_at;      // [kBlock] their block positions
    std::byte *q_blocks;      // [kTile] queries in a block-format K's vec_dot_type, or null
    size_t q_blocks_stride;
    float *value_floats;  // [kBlock][Dv] block-format V rows expanded, or null
    int64_t q_stride, acc_stride;

    static size_t bytes(int64_t d, int64_t dv, bool expand_k, bool expand_v) {
        const int64_t floats = (kTile + 1) * padded(d) + kTile * padded(dv) +
                               (3 * kTile + 1) * kBlock + (expand_k ? kTile * padded(d) : 0) +
                               (expand_v ? kBlock * padded(dv) : 0);
        return size_t(floats) * sizeof(float) + kBlock * (2 * sizeof(void *) + sizeof(int32_t));
    }
    static Scratch carve(std::byte *work, int64_t d, int64_t dv, bool expand_k, bool expand_v) {
        auto *f = reinterpret_cast<float *>(work);
        Scratch s{};
        s.q_stride = padded(d);
        s.acc_stride = padded(dv);
        s.q = f;
        s.q_narrow = s.q + kTile * s.q_stride;
        s.acc = s.q + (kTile + 1) * s.q_stride;
        s.scores = s.acc + kTile * s.acc_stride;
        s.dense = s.scores + kTile * kBlock;
        s.bias = s.dense + kTile * kBlock;
        s.key_rows = reinterpret_cast<const void **>(s.bias + (kTile + 1) * kBlock);
        s.value_rows = s.key_rows + kBlock;
        s.visible_at = reinterpret_cast<int32_t *>(s.value_rows + kBlock);
        float *expanded = reinterpret_cast<float *>(s.visible_at + kBlock);
        if (expand_k) {  // a vec_dot_type row takes fewer bytes than the same floats
            s.q_blocks = reinterpret_cast<std::byte *>(expanded);
            s.q_blocks_stride = size_t(s.q_stride) * sizeof(float);
            expanded += kTile * s.q_stride;
        }
        if (expand_v) s.value_floats = expanded;
        return s;
    }
};

struct Inputs {
    const Tensor *q;      // F32 [D, n_q, n_head, ne3]
    const Tensor *k;      // F32/F16/BF16 [D, n_kv, n_head_kv, k3]
    const Tensor *v;      // F32/F16/BF16 [Dv, n_kv, n_head_kv, k3]
    const Tensor *mask;   // F32/F16 [n_kv, >= n_q, m2, m3] or null
    const Tensor *sinks;  // F32 [n_head] or null
    float scale;          // q·k scale, divided by the softcap when there is one
    float softcap;
    float max_bias;
};

// Online-softmax state of one row: maximum M, denominator S, accumulator in Scratch::acc.
struct RowState {
    float max = -INFINITY;
    float sum = 0.0f;
};

// Raises the running maximum to new_max, rescaling what was accumulated under the old one.
void raise_max(RowState &state, float new_max, float *acc, int64_t dv) {
    if (!(new_max > state.max)) return;
    if (state.max != -INFINITY) {  // nothing accumulated yet otherwise
        const float ms = std::exp(state.max - new_max);
        scale_in_place(acc, ms, dv);
        state.sum *= ms;
    }
    state.max = new_max;
}

// One row of a tile: query iq1 of head iq2 in batch iq3.
struct TileRow {
    int64_t iq1, iq2, iq3;
    float *out;  // Dv floats of dst
};

// Turns one row's scores for the n positions of a block into weights exp(s - max), adding them
// to its sum. Scores are indexed by block position, never by a position's rank among the visible
// ones, so each weight meets the same vector lane and the sum the same order, whichever other
// rows share the tile. The array has room for n rounded up to whole vectors.
void weigh(RowState &state, float *acc, int64_t dv, float *scores, int64_t n) {
    const int64_t padded_n = (n + VL - 1) / VL * VL;
    std::fill(scores + n, scores + padded_n, -INFINITY);  // weigh 0
    vf block_max = splat(-INFINITY);
    for (int64_t j = 0; j < padded_n; j += VL) {
        const vf x = load(scores + j);
        block_max = x > block_max ? x : block_max;
    }
    raise_max(state, hmax(block_max), acc, dv);
    if (state.max == -INFINITY) {  // nothing visible to this row yet: every weight is 0
        std::fill_n(scores, n, 0.0f);
        return;
    }
    const vf max = splat(state.max);
    vf sum = {};
    for (int64_t j = 0; j < padded_n; j += VL) {
        const vf w = exp_nonpositive(load(scores + j) - max);
        store(scores + j, w);
        sum += w;
    }
    state.sum += hsum(sum);
}

// Scores of one block: q·k * scale, softcapped, plus the row's bias (-inf stays -inf whatever
// the product), in place over the raw dot products.
void finish_scores(const Inputs &in, float *scores, const float *bias, int64_t n) {
    for (int64_t j = 0; j < n; ++j) scores[j] *= in.scale;
    if (in.softcap != 0.0f) {
        for (int64_t j = 0; j < n; ++j) scores[j] = in.softcap * std::tanh(scores[j]);
    }
    if (bias == nullptr) return;
    for (int64_t j = 0; j < n; ++j) {
        scores[j] = bias[j] == -INFINITY ? -INFINITY : scores[j] + bias[j];
    }
}

void attend_tile(const Inputs &in, const Scratch &s, const TileRow *rows, int n_rows) {
    const Tensor *q = in.q, *k = in.k, *v = in.v, *mask = in.mask;
    const int64_t d = q->ne[0], dv = v->ne[0], n_kv = k->ne[1];
    // grouped-query attention: n_head / n_head_kv query heads share one kv head (and likewise
    // along dim 3); every row of a tile has the same one
    const int64_t ik2 = rows[0].iq2 / (q->ne[2] / k->ne[2]);
    const int64_t ik3 = rows[0].iq3 / (q->ne[3] / k->ne[3]);
    // Block-format rows are read as the F32 rows they expand to.
    const bool block_k = s.q_blocks != nullptr, expand_v = s.value_floats != nullptr;
    const DotGroup dot = kDotGroupsByType[size_t(type_index(k->type))];
    const auto &accumulate_by_rows = kAccumulateTilesByType[size_t(value_type_index(v->type))];
    const size_t k_row_bytes = row_size(k->type, d), v_row_bytes = row_size(v->type, dv);

    float *qs[kTile] = {}, *acc[kTile] = {}, *scores[kTile] = {};
    const std::byte *mask_rows[kTile] = {};
    float slope[kTile];
    // A row whose mask row and slope are the previous row's (the heads of one query, usually)
    // shares its bias: bias_of[t] points at the first such row's.
    const float *bias_of[kTile] = {};
    RowState state[kTile];
    for (int t = 0; t < n_rows; ++t) {
        const TileRow &r = rows[t];
        qs[t] = s.q + t * s.q_stride;
        acc[t] = s.acc + t * s.acc_stride;
        scores[t] = s.scores + t * kBlock;
        std::fill_n(acc[t], dv, 0.0f);
        // The query is rounded to the type K's dot products take first (F16 / BF16 keys: their
        // own; block formats: Q8_0 or Q8_1), as ggml's vec_dot_type, so the scores are the ones
        // llama.cpp computes.
        const auto *q_row = static_cast<const float *>(q->row_ptr(r.iq1, r.iq2, r.iq3));
        const DType q_type = block_k ? traits(k->type).vec_dot_type : k->type;
        if (block_k) {
            traits(q_type).from_float_in_ops(q_row, s.q_blocks + size_t(t) * s.q_blocks_stride, d);
        } else if (q_type == DType::F32) {
            std::copy_n(q_row, d, qs[t]);
        } else {
            traits(q_type).from_float_in_ops(q_row, s.q_narrow, d);
            traits(q_type).to_float(s.q_narrow, qs[t], d);
        }
        slope[t] = alibi_slope(in.max_bias, r.iq2, q->ne[2]);
        if (mask != nullptr) {
            mask_rows[t] = static_cast<const std::byte *>(
                mask->row_ptr(r.iq1, r.iq2 % mask->ne[2], r.iq3 % mask->ne[3]));
            const bool same = t > 0 && mask_rows[t] == mask_rows[t - 1] && slope[t] == slope[t - 1];
            bias_of[t] = same ? bias_of[t - 1] : s.bias + t * kBlock;
        }
    }
    // The dot products take kRowGroup queries at a time; a short group repeats its first query
    // (and the results for the repeats are dropped).
    const float *group_q[kTile];
    for (int t = 0; t < kTile; ++t) {
        const int first = t / kRowGroup * kRowGroup;
        group_q[t] = t < n_rows ? qs[t] : qs[first < n_rows ? first : 0];
    }

    for (int64_t c0 = 0; c0 < n_kv; c0 += kBlock) {
        const int64_t n = std::min(kBlock, n_kv - c0);
        // slope * mask per row; a position is visible when some row of the tile sees it, that
        // is when the largest of the rows' biases is above -inf
        float *largest_bias = s.bias + kTile * kBlock;
        for (int t = 0; mask != nullptr && t < n_rows; ++t) {
            if (t > 0 && bias_of[t] == bias_of[t - 1]) continue;
            float *bias = s.bias + t * kBlock;
            const float *m =
                load_row(mask->type, mask_rows[t] + c0 * mask->nb[0], mask->nb[0], n, bias);
            for (int64_t j = 0; j < n; ++j) bias[j] = slope[t] * m[j];
            if (t == 0) std::copy_n(bias, n, largest_bias);
            for (int64_t j = 0; j < n; ++j) {
                largest_bias[j] = bias[j] > largest_bias[j] ? bias[j] : largest_bias[j];
            }
        }
        int64_t count = 0;
        for (int64_t j = 0; j < n; ++j) {
            const bool visible = mask == nullptr || largest_bias[j] != -INFINITY;
            if (!visible) {
                for (int t = 0; t < n_rows; ++t) scores[t][j] = -INFINITY;
                continue;
            }
            s.visible_at[count] = int32_t(j);
            s.key_rows[count] = k->row_ptr(c0 + j, ik2, ik3);
            s.value_rows[count] = v->row_ptr(c0 + j, ik2, ik3);
            if (expand_v) {
                float *row = s.value_floats + count * s.acc_stride;
                traits(v->type).to_float(s.value_rows[count], row, dv);
                s.value_rows[count] = row;
            }
            ++count;
        }
        // The K and V rows two blocks ahead, requested now: in the cache a head's rows lie a
        // cell apart (all heads of a cell side by side), a stride the hardware prefetchers
        // follow too slowly for generation, which reads each row once (flash_attn/tg_d4096 in
        // loom-bench-matmul, one run with prefetches into L1: 12.5 ms without, 9.3 ms one block
        // ahead, 8.4 ms two; prefetch_row's L2 hint since then is measured there).
        for (int64_t j = c0 + 2 * kBlock; j < std::min(c0 + 3 * kBlock, n_kv); ++j) {
            prefetch_row(k->row_ptr(j, ik2, ik3), k_row_bytes);
            prefetch_row(v->row_ptr(j, ik2, ik3), v_row_bytes);
        }
        if (count == 0) continue;
        // The dot products of every row with every visible position, kPosGroup positions at a
        // time (a short group repeats its last position), side by side in visible order, then
        // moved to their block positions.
        for (int64_t p = count; p % kPosGroup != 0; ++p) s.key_rows[p] = s.key_rows[count - 1];
        if (block_k) {
            for (int g = 0; g < n_rows; g += kRowGroup) {
                const int in_group = std::min(kRowGroup, n_rows - g);
                const void *q_rows[kRowGroup];
                float *out[kRowGroup];
                for (int t = 0; t < in_group; ++t) {
                    q_rows[t] = s.q_blocks + size_t(g + t) * s.q_blocks_stride;
                    out[t] = s.dense + (g + t) * kBlock;
                }
                key_dots(k->type, d, s.key_rows, count, q_rows, in_group, out);
            }
        } else {
            for (int g = 0; g < n_rows; g += kRowGroup) {
                float *dense = s.dense + g * kBlock;
                for (int64_t p = 0; p < count; p += kPosGroup) {
                    float *out[kRowGroup];
                    for (int t = 0; t < kRowGroup; ++t) out[t] = dense + t * kBlock + p;
                    dot(group_q + g, s.key_rows + p, d, out);
                }
            }
        }
        for (int t = 0; t < n_rows; ++t) {
            const float *dense = s.dense + t * kBlock;
            if (count == n) {
                std::copy_n(dense, n, scores[t]);
            } else {
                for (int64_t p = 0; p < count; ++p) scores[t][s.visible_at[p]] = dense[p];
            }
        }
        for (int t = 0; t < n_rows; ++t) {
            finish_scores(in, scores[t], bias_of[t], n);
            weigh(state[t], acc[t], dv, scores[t], n);
        }
        for (int g = 0; g < n_rows; g += kRowGroup) {
            const int in_group = std::min(kRowGroup, n_rows - g);
            accumulate_by_rows[size_t(in_group - 1)](acc + g, dv, s.value_rows, scores + g,
                                                     s.visible_at, count);
        }
    }

    for (int t = 0; t < n_rows; ++t) {
        // A sink is one more logit with a zero value: it joins the maximum and the denominator.
        if (in.sinks != nullptr) {
            const float sink = *static_cast<const float *>(in.sinks->element_ptr(rows[t].iq2, 0));
            raise_max(state[t], sink, acc[t], dv);
            state[t].sum += std::exp(sink - state[t].max);
        }
        // A fully masked row has sum 0: its output is zeros, not 0/0.
        const float inv_sum = state[t].sum == 0.0f ? 0.0f : 1.0f / state[t].sum;
        for (int64_t i = 0; i < dv; ++i) rows[t].out[i] = acc[t][i] * inv_sum;
    }
}

void compute_flash_attn(const ComputeParams &params, Tensor *dst) {
    const FlashAttnParams p = get_op_params<FlashAttnParams>(dst);
    Inputs in{.q = dst->src[0],
              .k = dst->src[1],
              .v = dst->src[2],
              .mask = dst->src[3],
              .sinks = dst->src[4],
              .scale = p.scale,
              .softcap = p.logit_softcap,
              .max_bias = p.max_bias};
    // softcap * tanh(q·k * scale / softcap): the division is folded into the scale (ggml's order)
    if (in.softcap != 0.0f) in.scale /= in.softcap;

    const Scratch scratch =
        Scratch::carve(params.work, in.q->ne[0], in.v->ne[0], traits(in.k->type).is_quantized,
                       expands_values(in.v->type));
    const int64_t n_q = in.q->ne[1], n_head = in.q->ne[2], n_head_kv = in.k->ne[2];
    const int64_t group = n_head / n_head_kv;  // query heads per kv head
    // Rows are numbered ((iq3 * n_head_kv + ik2) * n_q + iq1) * group + g, head iq2 =
    // ik2 * group + g: the n_q * group rows that read kv head ik2 of batch iq3 are consecutive,
    // and a tile takes up to kTile of them.
    const int64_t rows_per_kv_head = n_q * group;
    const Range range = split_range(in.q->nrows(), params.ith, params.nth);
    for (int64_t row = range.begin; row < range.end;) {
        const int64_t kv_head_end = (row / rows_per_kv_head + 1) * rows_per_kv_head;
        const int n_rows = int(std::min({int64_t(kTile), range.end - row, kv_head_end - row}));
        TileRow rows[kTile];
        for (int t = 0; t < n_rows; ++t) {
            const int64_t r = row + t;
            const int64_t g = r % group;
            const int64_t iq1 = r / group % n_q;
            const int64_t ik2 = r / rows_per_kv_head % n_head_kv;
            const int64_t iq3 = r / (rows_per_kv_head * n_head_kv);
            const int64_t iq2 = ik2 * group + g;
            // dst F32 [Dv, n_head, n_q, ne3]: heads inner
            rows[t] = {iq1, iq2, iq3, static_cast<float *>(dst->row_ptr(iq2, iq1, iq3))};
        }
        attend_tile(in, scratch, rows, n_rows);
        row += n_rows;
    }
}

bool is_float(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

// K or V rows of n elements this kernel reads: a float type, or a block format with a dot product
// (keys) and an expansion to floats (values), in whole blocks of it and of its vec_dot_type.
bool readable(DType t, int64_t n) {
    if (is_float(t)) return true;
    const DTypeTraits &tr = traits(t);
    return tr.is_quantized && tr.to_float != nullptr && tr.vec_dot != nullptr &&
           n % tr.block_size == 0 && traits(tr.vec_dot_type).from_float_in_ops != nullptr &&
           n % traits(tr.vec_dot_type).block_size == 0;
}

bool supports_flash_attn(const Tensor *dst) {
    const Tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2];
    const Tensor *mask = dst->src[3], *sinks = dst->src[4];
    const bool mask_ok = mask == nullptr || mask->type == DType::F32 || mask->type == DType::F16;
    return q->type == DType::F32 && q->rows_contiguous() && readable(k->type, k->ne[0]) &&
           k->rows_contiguous() && readable(v->type, v->ne[0]) && v->rows_contiguous() && mask_ok &&
           (sinks == nullptr || sinks->type == DType::F32) && dst->type == DType::F32 &&
           dst->rows_contiguous();
}

size_t flash_attn_work_size(const Tensor *dst) {
    return Scratch::bytes(dst->src[0]->ne[0], dst->src[2]->ne[0],
                          traits(dst->src[1]->type).is_quantized,
                          expands_values(dst->src[2]->type));
}

}  // namespace

void register_attention_kernels(KernelTable &table) {
    table[size_t(Op::flash_attn_ext)] = {.compute = compute_flash_attn,
                                         .supports = supports_flash_attn,
                                         .work_size = flash_attn_work_size};
}

}  // namespace loom::cpu::inline LOOM_ISA
