// Fused attention (flash_attn_ext): for each (query, head) row, scores against every kv
// position, online softmax and the weighted sum of values, with F32 accumulation throughout.
//
// Rows that read the same kv head are processed in tiles (see "Tiles" below), and the kv
// positions in blocks of kBlock. Per block:
//   1. the positions some row of the tile can see are listed (K/V rows masked for every row,
//      which may be stale cache slots, are never read);
//   2. their scores q·k * scale (softcapped, plus slope * mask) are computed, each K row once
//      for the whole tile;
//   3. each row's running maximum is raised once for the whole block, rescaling its accumulator;
//   4. the weights exp(s - max) are computed a vector at a time;
//   5. the values are accumulated a slice of the head at a time, the slices of every row of the
//      tile held in registers while each V row of the block is loaded once and added to them.
// The order of every sum depends only on the shapes, never on the thread count.
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/cpu/kernels.h"
#include "core/cpu/simd.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

using namespace simd;

constexpr int64_t kBlock = 64;  // kv positions per rescale of the accumulator
static_assert(kBlock % VL == 0);

#if defined(__clang__)
// clang has no __builtin_shuffle (the sanitized fuzzing build): the four trees one at a time,
// the same sums in the same order.
inline void hsum4(const vf (&v)[4], float (&out)[4]) {
    for (int r = 0; r < 4; ++r) out[r] = hsum(v[r]);
}
#else
// Shuffle indices for hsum4, fixed at compile time.
typedef int32_t vindex __attribute__((vector_size(LOOM_VEC_BYTES)));
template <typename F>
constexpr vindex make_index(F lane_source) {
    std::array<int32_t, VL> index{};
    for (int l = 0; l < VL; ++l) index[size_t(l)] = lane_source(l);
    return std::bit_cast<vindex>(index);
}
constexpr int kHalf = VL / 2, kQuarter = VL / 4;
// Two vectors' halves side by side: lanes [0, VL/2) from the first, [VL/2, VL) from the second
// (whose lane i is operand lane VL + i); the low halves, then the high ones.
constexpr vindex kLowHalves = make_index([](int l) { return l < kHalf ? l : VL + l - kHalf; });
constexpr vindex kHighHalves =
    make_index([](int l) { return kHalf + (l < kHalf ? l : VL + l - kHalf); });
// Four rows of a quarter each: rows 0, 1 from the first operand's halves, 2, 3 from the second's.
constexpr int quarter_source(int l) {
    const int row = l / kQuarter;
    return (row < 2 ? 0 : VL) + (row % 2) * kHalf + l % kQuarter;
}
constexpr vindex kLowQuarters = make_index(quarter_source);
constexpr vindex kHighQuarters = make_index([](int l) { return quarter_source(l) + kQuarter; });
// Lane l + w (lanes past each row's w are unused).
template <int W>
constexpr vindex kShiftDown = make_index([](int l) { return (l + W) % VL; });

// The lane sums of four vectors, each by the same pairwise tree as hsum (lane i + lane i + VL/2,
// then + VL/4, ...), but with the four trees packed into shared shuffles: first the halves of two
// vectors are added into one, then the quarters of two of those, then within the vector.
inline void hsum4(const vf (&v)[4], float (&out)[4]) {
    const vf pair01 =
        __builtin_shuffle(v[0], v[1], kLowHalves) + __builtin_shuffle(v[0], v[1], kHighHalves);
    const vf pair23 =
        __builtin_shuffle(v[2], v[3], kLowHalves) + __builtin_shuffle(v[2], v[3], kHighHalves);
    vf x = __builtin_shuffle(pair01, pair23, kLowQuarters) +
           __builtin_shuffle(pair01, pair23, kHighQuarters);
    if constexpr (kQuarter >= 4) x += __builtin_shuffle(x, kShiftDown<2>);
    if constexpr (kQuarter >= 2) x += __builtin_shuffle(x, kShiftDown<1>);
    for (int r = 0; r < 4; ++r) out[r] = x[r * kQuarter];
}
#endif

// ---------------------------------------------------------------------------------------------
// Tiles: up to kTile rows that read the same kv head go through the kv positions together, so
// every K and V row is loaded once for all of them (the query heads of a GQA group, or
// neighbouring queries). Each row's arithmetic is the same whatever tile it is in: its dot
// products keep their chains and reduction tree, its weights stay at their block positions, and
// a position another row sees but it does not adds a weight of exactly 0, which changes nothing
// (short of turning an accumulator that underflowed to -0 into +0). Results thus do not depend
// on how rows fall into tiles, nor on the thread count. (The scalar tails call std::fma
// explicitly: GCC contracts a * b + c in C++ whatever the -std, and might do so differently in
// each tile size's instantiation.)

constexpr int kTile = 4;  // hsum4 reduces four rows at once
// Accumulator chains per dot product: enough to cover the FMA latency, few enough that a tile's
// kTile * chains accumulators fit the register file (32 vectors with AVX-512, else 16).
constexpr int kDotChains = VL == 16 ? 4 : 2;

// out[t] = q[t] · k over n elements, for T queries.
template <typename Load, int T>
void dot_tile(const float *const *q, const void *k, int64_t n, float *out) {
    constexpr int C = kDotChains;
    vf acc[T][C];
    for (auto &row : acc) {
        for (vf &chain : row) chain = vf{};  // (an aggregate {} becomes a memset call)
    }
    int64_t i = 0;
    for (; i + C * VL <= n; i += C * VL) {
        for (int c = 0; c < C; ++c) {
            const vf kv = Load::vec(k, i + c * VL);
            for (int t = 0; t < T; ++t) acc[t][c] = fmadd(load(q[t] + i + c * VL), kv, acc[t][c]);
        }
    }
    for (; i + VL <= n; i += VL) {
        const vf kv = Load::vec(k, i);
        for (int t = 0; t < T; ++t) acc[t][0] = fmadd(load(q[t] + i), kv, acc[t][0]);
    }
    // Every tile size reduces through hsum4 (rows past T are zeros): one tree for all.
    vf sums[4] = {};
    for (int t = 0; t < T; ++t) {
        sums[t] = acc[t][0];
        for (int c = 1; c < C; ++c) sums[t] += acc[t][c];
    }
    float totals[4];
    hsum4(sums, totals);
    for (int t = 0; t < T; ++t) {
        float total = totals[t];
        for (int64_t j = i; j < n; ++j) total = std::fma(q[t][j], Load::one(k, j), total);
        out[t] = total;
    }
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

using DotTile = void (*)(const float *const *q, const void *k, int64_t n, float *out);
using AccumulateTile = void (*)(float *const *acc, int64_t dv, const void *const *rows,
                                const float *const *w, const int32_t *at, int64_t count);

template <typename Load>
constexpr std::array<DotTile, kTile> kDotTiles = {dot_tile<Load, 1>, dot_tile<Load, 2>,
                                                  dot_tile<Load, 3>, dot_tile<Load, 4>};
template <typename Load>
constexpr std::array<AccumulateTile, kTile> kAccumulateTiles = {
    accumulate_tile<Load, 1>, accumulate_tile<Load, 2>, accumulate_tile<Load, 3>,
    accumulate_tile<Load, 4>};

// Per dtype (F32, F16, BF16), then per tile size - 1.
constexpr std::array<std::array<DotTile, kTile>, 3> kDotTilesByType = {
    kDotTiles<LoadF32>, kDotTiles<LoadF16>, kDotTiles<LoadBF16>};
constexpr std::array<std::array<AccumulateTile, kTile>, 3> kAccumulateTilesByType = {
    kAccumulateTiles<LoadF32>, kAccumulateTiles<LoadF16>, kAccumulateTiles<LoadBF16>};

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
    float *bias;              // [kTile + 1][kBlock] slope * mask per row, then the rows' largest
    const void **value_rows;  // [kBlock] V rows of the visible positions
    int32_t *visible_at;      // [kBlock] their block positions
    int64_t q_stride, acc_stride;

    static size_t bytes(int64_t d, int64_t dv) {
        const int64_t floats =
            (kTile + 1) * padded(d) + kTile * padded(dv) + (2 * kTile + 1) * kBlock;
        return size_t(floats) * sizeof(float) + kBlock * (sizeof(void *) + sizeof(int32_t));
    }
    static Scratch carve(std::byte *work, int64_t d, int64_t dv) {
        auto *f = reinterpret_cast<float *>(work);
        Scratch s{};
        s.q_stride = padded(d);
        s.acc_stride = padded(dv);
        s.q = f;
        s.q_narrow = s.q + kTile * s.q_stride;
        s.acc = s.q + (kTile + 1) * s.q_stride;
        s.scores = s.acc + kTile * s.acc_stride;
        s.bias = s.scores + kTile * kBlock;
        s.value_rows = reinterpret_cast<const void **>(s.bias + (kTile + 1) * kBlock);
        s.visible_at = reinterpret_cast<int32_t *>(s.value_rows + kBlock);
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

void attend_tile(const Inputs &in, const Scratch &s, const TileRow *rows, int n_rows) {
    const Tensor *q = in.q, *k = in.k, *v = in.v, *mask = in.mask;
    const int64_t d = q->ne[0], dv = v->ne[0], n_kv = k->ne[1];
    // grouped-query attention: n_head / n_head_kv query heads share one kv head (and likewise
    // along dim 3); every row of a tile has the same one
    const int64_t ik2 = rows[0].iq2 / (q->ne[2] / k->ne[2]);
    const int64_t ik3 = rows[0].iq3 / (q->ne[3] / k->ne[3]);
    const DotTile dot = kDotTilesByType[type_index(k->type)][n_rows - 1];
    const AccumulateTile accumulate = kAccumulateTilesByType[type_index(v->type)][n_rows - 1];

    float *qs[kTile], *acc[kTile], *scores[kTile];
    const std::byte *mask_rows[kTile] = {};
    float slope[kTile];
    RowState state[kTile];
    for (int t = 0; t < n_rows; ++t) {
        const TileRow &r = rows[t];
        qs[t] = s.q + t * s.q_stride;
        acc[t] = s.acc + t * s.acc_stride;
        scores[t] = s.scores + t * kBlock;
        std::fill_n(acc[t], dv, 0.0f);
        // The query is rounded to K's dtype first, as ggml's vec_dot_type does for F16/BF16
        // keys, so the scores are the ones llama.cpp computes.
        const auto *q_row = static_cast<const float *>(q->row_ptr(r.iq1, r.iq2, r.iq3));
        if (k->type == DType::F32) {
            std::copy_n(q_row, d, qs[t]);
        } else {
            traits(k->type).from_float(q_row, s.q_narrow, d);
            traits(k->type).to_float(s.q_narrow, qs[t], d);
        }
        slope[t] = alibi_slope(in.max_bias, r.iq2, q->ne[2]);
        if (mask != nullptr) {
            mask_rows[t] = static_cast<const std::byte *>(
                mask->row_ptr(r.iq1, r.iq2 % mask->ne[2], r.iq3 % mask->ne[3]));
        }
    }

    for (int64_t c0 = 0; c0 < n_kv; c0 += kBlock) {
        const int64_t n = std::min(kBlock, n_kv - c0);
        // slope * mask per row; a position is visible when some row of the tile sees it, that
        // is when the largest of the rows' biases is above -inf
        float *largest_bias = s.bias + kTile * kBlock;
        for (int t = 0; mask != nullptr && t < n_rows; ++t) {
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
            float dots[kTile];
            dot(qs, k->row_ptr(c0 + j, ik2, ik3), d, dots);
            for (int t = 0; t < n_rows; ++t) {
                const float bias = mask != nullptr ? s.bias[t * kBlock + j] : 0.0f;
                float score = dots[t] * in.scale;
                if (in.softcap != 0.0f) score = in.softcap * std::tanh(score);
                scores[t][j] = bias == -INFINITY ? -INFINITY : score + bias;
            }
            s.visible_at[count] = int32_t(j);
            s.value_rows[count++] = v->row_ptr(c0 + j, ik2, ik3);
        }
        if (count == 0) continue;
        for (int t = 0; t < n_rows; ++t) weigh(state[t], acc[t], dv, scores[t], n);
        accumulate(acc, dv, s.value_rows, scores, s.visible_at, count);
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

    const Scratch scratch = Scratch::carve(params.work, in.q->ne[0], in.v->ne[0]);
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

bool supports_flash_attn(const Tensor *dst) {
    const Tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2];
    const Tensor *mask = dst->src[3], *sinks = dst->src[4];
    const bool mask_ok = mask == nullptr || mask->type == DType::F32 || mask->type == DType::F16;
    return q->type == DType::F32 && q->rows_contiguous() && is_float(k->type) &&
           k->rows_contiguous() && is_float(v->type) && v->rows_contiguous() && mask_ok &&
           (sinks == nullptr || sinks->type == DType::F32) && dst->type == DType::F32 &&
           dst->rows_contiguous();
}

size_t flash_attn_work_size(const Tensor *dst) {
    return Scratch::bytes(dst->src[0]->ne[0], dst->src[2]->ne[0]);
}

}  // namespace

void register_attention_kernels(KernelTable &table) {
    table[size_t(Op::flash_attn_ext)] = {.compute = compute_flash_attn,
                                         .supports = supports_flash_attn,
                                         .work_size = flash_attn_work_size};
}

}  // namespace loom::cpu::inline LOOM_ISA
