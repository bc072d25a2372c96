#pragma once
// What the float matrix products of core/cpu/gemm.cpp and their BF16 pair variant
// (core/cpu/gemm_bf16.cpp) share: the blocking, the register transpose, the per-thread scratch
// and the packed GEMM's loop over blocks, which each arithmetic fills in with its own packing and
// micro-kernel.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "core/cpu/gemm.h"
#include "core/cpu/repack.h"
#include "core/cpu/simd.h"
#include "core/cpu/stream_parts.h"

namespace loom::cpu::inline LOOM_ISA::gemm {

using simd::kVecRegs;
using simd::vf;
using simd::VL;

// ---------------------------------------------------------------------------------------------
// GEMM blocking (BLIS's scheme). The micro-kernel keeps an MR x NR tile of C in registers and,
// per k, loads two vectors of packed A and broadcasts NR values of packed B:
//   AVX-512: MR 32 x NR 12 = 24 accumulators + 2 A vectors + 1 broadcast of 32 zmm;
//   16 registers: MR 2*VL x NR 6 = 12 accumulators + 3.
constexpr int MR = 2 * VL;
constexpr int NR = kVecRegs >= 32 ? 12 : 6;
// KC: the micro-kernel's inner loop reuses one KC x NR micro-panel of B for every A panel, so it
// should hold half of the 48 KiB L1d (512 * 12 * 4 = 24 KiB) while A streams through the other
// half. 512 is also a multiple of every weight block size (256 for K-quants), since packing
// converts weights KC elements at a time.
constexpr int64_t KC = 512;
// MC: the packed A block, MC x KC floats (320 * 512 * 4 = 640 KiB), about half the 1.25 MiB L2,
// leaving room for the B micro-panels and C tiles that pass through.
constexpr int64_t MC = 10 * MR;
// NC: packed B, KC x NC floats (512 * 3072 * 4 = 6 MiB), lives in the shared L3; A is packed
// again for every NC columns, so NC is large.
constexpr int64_t NC = 256 * NR;
// The micro-kernel prefetches packed A this many k steps ahead (4 * 128 bytes), as the hardware
// prefetchers do not pull the L2-resident A panel into L1 in time; measured on Ice Lake, distances
// 3 to 16 all gain 15-25 %, 4 the most.
constexpr int64_t kPrefetchSteps = 4;
static_assert(MC % MR == 0 && NC % NR == 0);

// Packing a panel reads MR rows side by side, a few cache lines of each (a row of a KC block is
// 1 KiB of F16), which no hardware prefetcher follows: each element read is prefetched into L2 for
// the same place of the next panel's rows, MR rows on, which is what the next packing reads. The
// first tokens of an F16 model, computed from the file's mapping with 9 columns (a prompt), Zen 4:
// 0.33-0.60 s -> 0.24-0.34 s; two panels ahead the same, into L1 slower (0.36-0.41 s).
[[gnu::always_inline]] inline void prefetch_next_panel(const std::byte *element, size_t nb1) {
    __builtin_prefetch(element + size_t(MR) * nb1, 0, 2);
}

// Transposes a VL x VL block held as VL row vectors, in log2(VL) stages; stage B swaps bit B of
// the row index with bit B of the column index (the butterfly behind every SIMD transpose).
// Lane j of the new rows i and i + B, as indices into the concatenation (r[i], r[i + B]):
template <int B, int... J>
[[gnu::always_inline]] inline vf interleave_lo(vf a, vf b, std::integer_sequence<int, J...>) {
    return __builtin_shufflevector(a, b, ((J & B) ? VL + J - B : J)...);
}
template <int B, int... J>
[[gnu::always_inline]] inline vf interleave_hi(vf a, vf b, std::integer_sequence<int, J...>) {
    return __builtin_shufflevector(a, b, ((J & B) ? VL + J : J + B)...);
}

template <int B = VL / 2>
[[gnu::always_inline]] inline void transpose(vf *r) {
    constexpr auto lanes = std::make_integer_sequence<int, VL>();
    for (int i = 0; i < VL; ++i) {
        if (i & B) continue;
        const vf a = r[i], b = r[i + B];
        r[i] = interleave_lo<B>(a, b, lanes);
        r[i + B] = interleave_hi<B>(a, b, lanes);
    }
    if constexpr (B > 1) transpose<B / 2>(r);
}

// ---------------------------------------------------------------------------------------------
// Few columns (generation): the GEMM's arithmetic without its packed copy of A (gemm.cpp).

// Columns at most this many take this path.
constexpr int64_t kNarrowMaxN = 4;
// Each of the VL rows being read is prefetched this far ahead (the packed path's reason for
// prefetching holds here, with VL streams instead of one).
constexpr int64_t kNarrowPrefetchBytes = 1024;
// A group of grouped weights (narrow_groups, narrow_groups_bf16) is one contiguous stream, which
// the core's own prefetchers follow: they are not prefetched. On a Zen 4 EPYC, the 1B files'
// generation against the read loop (loom-bench-bound -n 64, two threads, alternating, three
// rounds): F16 79-94 % with prefetcht1 4 KiB ahead, 99.5-100 % without; BF16 91-93 % -> 99-100 %
// (docs/PERFORMANCE.md). An earlier Zen 5 EPYC streamed 4 KiB ahead faster than 2 KiB ahead
// (F16, 1 GiB: 79-81 against 74 GB/s) but was not measured without.

// The groups [g0, g1) of grouped weights for few columns, two at a time where `pairs` (two
// streams, as qgemm.h's kStreamGroups), in the two parts of a StreamParts
// (core/cpu/stream_parts.h). two(g, stride, d) computes groups g and g + stride into the 2 x 16
// floats of d's columns, which this puts in place; one(g, d) a group left over.
template <typename Two, typename One>
void grouped_in_halves(const Columns &cols, int nx, int64_t g0, int64_t g1, bool pairs, Two two,
                       One one) {
    constexpr int64_t kRows = kRepackRows;
    const StreamParts run(g0, g1, pairs ? 2 : 1);
    float pair[kNarrowMaxN][2 * kRows];
    float *dm[kNarrowMaxN];
    for (int c = 0; c < nx; ++c) dm[c] = pair[c];
    for (int64_t g = run.start(0); g < run.start(1); ++g) {
        two(g, run.part, dm);
        for (int c = 0; c < nx; ++c) {
            std::copy_n(pair[c], kRows, cols.dst_row(c) + g * kRows);
            std::copy_n(pair[c] + kRows, kRows, cols.dst_row(c) + (g + run.part) * kRows);
        }
    }
    for (int64_t g = run.tail; g < g1; ++g) {
        for (int c = 0; c < nx; ++c) dm[c] = cols.dst_row(c) + g * kRows;
        one(g, dm);
    }
}

// Per-thread scratch, carved from params.work; offsets depend only on K.
struct Scratch {
    float *rows;  // K floats: a gathered/converted row
    float *tile;  // MR x NR: an edge tile before it is clipped into dst
    float *a;     // MC x KC: packed A block
    float *b;     // KC x NC (or fewer): packed B block
};

// How gemm_rows packs a KC block and multiplies it (gemm.cpp: FloatSteps; gemm_bf16.cpp:
// Bf16PairSteps): Packed, the unit of a packed step (an element, or a pair of BF16 elements);
// steps(kc), a block's packed steps; pack_columns / pack_rows, which pack B's columns and A's
// rows of a block; load_step (VL units), splat_step and madd(acc, a, b), the micro-kernel's
// arithmetic.

// c[j][0, MR) (+)= the sum over the steps of a[step][0, MR) * b[step][j], for j < NT <= NR.
// a: packed [steps][MR], b: packed [steps][NR]; c: NT pointers to MR floats. Each element's terms
// are summed in step order on one chain, whatever NT is: a column's result does not depend on how
// many columns share the tile. Kept out of line so the accumulators get the register file to
// themselves rather than sharing it with the caller's loop state.
template <typename Steps, int NT>
[[gnu::noinline]] void micro_kernel(int64_t steps, const typename Steps::Packed *a,
                                    const typename Steps::Packed *b, float *const *c,
                                    bool accumulate) {
    vf acc0[NT], acc1[NT];
    for (int j = 0; j < NT; ++j) acc0[j] = acc1[j] = vf{};
    for (int64_t k = 0; k < steps; ++k, a += MR, b += NR) {
        __builtin_prefetch(a + kPrefetchSteps * MR, 0, 3);
        __builtin_prefetch(a + kPrefetchSteps * MR + VL, 0, 3);
        const vf a0 = Steps::load_step(a), a1 = Steps::load_step(a + VL);
#pragma GCC unroll 16
        for (int j = 0; j < NT; ++j) {
            const vf bj = Steps::splat_step(b[j]);
            acc0[j] = Steps::madd(acc0[j], a0, bj);
            acc1[j] = Steps::madd(acc1[j], a1, bj);
        }
    }
#pragma GCC unroll 16
    for (int j = 0; j < NT; ++j) {
        if (accumulate) {
            acc0[j] = simd::load(c[j]) + acc0[j];
            acc1[j] = simd::load(c[j] + VL) + acc1[j];
        }
        simd::store(c[j], acc0[j]);
        simd::store(c[j] + VL, acc1[j]);
    }
}

template <typename Steps>
using MicroKernel = void (*)(int64_t, const typename Steps::Packed *,
                             const typename Steps::Packed *, float *const *, bool);

// The kernels for tiles of 1..NR columns.
template <typename Steps, int... I>
constexpr std::array<MicroKernel<Steps>, NR> micro_kernels(std::integer_sequence<int, I...>) {
    return {micro_kernel<Steps, I + 1>...};
}

// dst rows [mb, me) of every column of the job.
template <typename Steps>
void gemm_rows(const Job &job, int64_t K, int64_t mb, int64_t me, const Scratch &s) {
    using Packed = typename Steps::Packed;
    static constexpr std::array<MicroKernel<Steps>, NR> kKernels =
        micro_kernels<Steps>(std::make_integer_sequence<int, NR>());
    auto *packed_a = reinterpret_cast<Packed *>(s.a);
    auto *packed_b = reinterpret_cast<Packed *>(s.b);
    for (int64_t jc = 0; jc < job.n; jc += NC) {
        const int64_t nc = std::min(NC, job.n - jc);
        for (int64_t pc = 0; pc < K; pc += KC) {
            const int64_t kc = std::min(KC, K - pc), steps = Steps::steps(kc);
            const bool accumulate = pc > 0;
            Steps::pack_columns(job, jc, nc, pc, kc, packed_b, s.rows);
            for (int64_t ic = mb; ic < me; ic += MC) {
                const int64_t mc = std::min(MC, me - ic);
                Steps::pack_rows(job, ic, mc, pc, kc, packed_a, s.rows);
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    const int64_t nr = std::min<int64_t>(NR, nc - jr);
                    float *c[NR];
                    for (int64_t j = 0; j < NR; ++j) {
                        c[j] = j < nr ? job.cols.dst_row(jc + jr + j) + ic : nullptr;
                    }
                    const Packed *bp = packed_b + jr * steps;
                    const MicroKernel<Steps> kernel = kKernels[size_t(nr - 1)];
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        const Packed *ap = packed_a + ir * steps;
                        const int64_t mr = std::min<int64_t>(MR, mc - ir);
                        if (mr == MR) {
                            float *ct[NR];
                            for (int j = 0; j < nr; ++j) ct[j] = c[j] + ir;
                            kernel(steps, ap, bp, ct, accumulate);
                            continue;
                        }
                        // Edge rows: the same arithmetic into scratch, then clipped.
                        float *ct[NR];
                        for (int j = 0; j < nr; ++j) ct[j] = s.tile + j * MR;
                        kernel(steps, ap, bp, ct, false);
                        for (int64_t j = 0; j < nr; ++j) {
                            float *d = c[j] + ir;
                            const float *t = s.tile + j * MR;
                            for (int64_t i = 0; i < mr; ++i) d[i] = accumulate ? d[i] + t[i] : t[i];
                        }
                    }
                }
            }
        }
    }
}

#if LOOM_X86_AVX512BF16
// dst rows [mb, me) of a BF16 job whose rows are contiguous or grouped, summed in pairs
// (gemm_bf16.cpp).
void bf16_pair_rows(const Job &job, int64_t K, int64_t mb, int64_t me, const Scratch &s);
#endif

}  // namespace loom::cpu::inline LOOM_ISA::gemm
