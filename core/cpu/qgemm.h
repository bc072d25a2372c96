#pragma once
// Matrix products over repacked block-format weights (core/cpu/repack.h) with integer dot
// products (AVX-512 VNNI, AVX-512BW or AVX2: core/cpu/qgemm_simd.h): the path mul_mat and
// mul_mat_id take when their weights are repacked.
//
// Phase 1: the node's columns are quantized once, split across threads, into shared scratch, as
// llama.cpp quantizes them (Q8_0 for Q4_0 / Q5_0 / Q8_0 / MXFP4 / IQ4_NL weights, Q8_1 for Q4_1 /
// Q5_1, Q8_K for the K-quants and IQ4_XS), and laid out in panels of up to kPanel columns. Phase 2,
// after a barrier: each thread multiplies its groups of 16 weight rows with every panel; a tile
// kernel keeps 16 rows x NC columns of sums in registers and reads each weight block once per
// panel.
//
// Arithmetic, identical for every N, panel width, thread count and position in the batch: each
// (row, column) lane sums a block's integer products exactly (VPDPBUSD), then
//   acc = fma(float(sum), d_w * d_a, acc)
// block after block. K-quants first combine their sub-block sums with the 6- or 8-bit scales in
// integers (exact), Q4_K adds the mins as a second fma with -(dmin_w * d_a), and Q4_1 / Q5_1
// theirs in a sum of fma(m_w, s_a, .) of their own, added last. This is the
// order tests/quant/repacked_matmul_tests.cpp recomputes in scalar code.
#include <array>
#include <cstddef>
#include <cstdint>

#include "core/cpu/gemm.h"
#include "core/isa.h"

namespace loom::cpu::inline LOOM_ISA::qgemm {

// Columns per panel: the widest tile, whose per-column sums share the register file with the
// weight vectors: 12 with AVX-512's 32 registers, 8 with AVX2's 16 (two per vector of 16 lanes;
// on a Zen 3 EPYC, Q4_0 pp256 at 113 t/s against 102-106 with 12 and 101 with 4, Q4_K_M level).
#if LOOM_X86_AVX512BW
inline constexpr int kPanel = 12;
#else
inline constexpr int kPanel = 8;
#endif
inline constexpr int kGroupRows = 16;  // rows per tile: 16 int32 lanes (qgemm_simd.h Ints)

// A panel of width w stores, per block b of the columns, at b * w * column_block_bytes():
//   [w][block] int8 quants | [w] float scales d_a | [w][extra] int32 per-format terms
// A tile multiplies one group of 16 rows, or several `stride` bytes apart (Format::streams), with
// the panel's nc columns; out: [groups][nc][16] sums of the groups' rows and the columns.
using Tile = void (*)(const std::byte *group, size_t stride, int64_t n_blocks,
                      const std::byte *panel, float *out);

// Inlines a lambda where it is called. (`[[gnu::always_inline]]` after a lambda's parameters
// appertains to its type, which GCC 12 ignores, silently in a template; this applies to the call
// operator.)
#define LOOM_INLINE_LAMBDA __attribute__((always_inline))

// Generation reads kStreamGroups groups in lockstep, block b of each in turn: two streams of
// weights in flight per core rather than one, as the read loop that sets the bound reads four
// (bench/read_loop.h). Which groups a tile computes together changes no bit of any. On a Zen 2
// EPYC (AVX2, 2 cores), 1 GiB n = 1 products, two threads, alternating: Q4_0 24.1-25.0 ->
// 28.6-34.5 GB/s, Q5_K 21.0-22.2 -> 24.7-26.9, against a read loop of 35-40; four groups gained
// nothing for Q4_0 and lost 10-15 % for the K-quants (docs/PERFORMANCE.md). A format whose tile
// computes more slowly than one stream reads has no `streams` tile (Q2_K, Q3_K).
inline constexpr int kStreamGroups = 2;

struct Format {
    DType act_type = DType::Q8_0;  // what each column is quantized to
    int block = 0;                 // elements per block of the weights and of act_type
    int extra = 0;                 // int32 terms per column per block
    // Writes n_blocks activation blocks of act_type into slot `slot` of a panel of width w.
    void (*prepare)(const void *act, int64_t n_blocks, int w, int slot, std::byte *panel) = nullptr;
    std::array<Tile, kPanel> tiles{};  // tiles[nc - 1]: one group, nc columns
    Tile streams = nullptr;            // kStreamGroups groups, one column

    size_t column_block_bytes() const { return size_t(block) + 4 + 4 * size_t(extra); }
};

// Tiles of one or two columns (generation) stream their weights from memory once, with too little
// arithmetic per byte for the hardware prefetchers to keep enough lines in flight: they prefetch
// each group block this far ahead. Each core must keep bandwidth x latency bytes in flight, more
// the faster the memory: on the Zen 5 EPYC of docs/PERFORMANCE.md, 1 GiB n = 1 products in one
// run, variants interleaved, 2 KiB / 4 KiB / 6 KiB ahead streamed Q3_K 58-63 / 66-69 / 68-75
// GB/s, Q4_K 69-71 / 72-74 / 75-78, Q6_K 66-70 / 70-74 / 73-77 where the read loop reads 86-89
// GB/s, and Q3_K 51.9 / 51.3 / 50.5, Q4_K 52.7 / 51.6 / 51.0 where it reads 55.6 (the host's
// usual regime): 4 KiB takes most of the gain at 1-2 % of the loss. (On an Ice Lake earlier,
// with 128 MiB matrices: no prefetch 77-91 % of the read loop, 2 KiB 88-99 %, 4 KiB 72-93 %.)
// Wider tiles read weights that stay in L2 (qgemm.cpp's row blocks), which a prefetch would only
// slow down.
//
// The prefetches go to L2 (prefetcht1), and the core's own L1 prefetcher takes the lines from
// there: into L1 (prefetcht0), they compete with the tile's loads for L1's miss buffers. On a Zen 4
// EPYC (AVX-512, 2 cores), the 1B files' generation against the read loop (loom-bench-bound -n 64),
// L1 / none / L2 / L2 (t2) / non-temporal, three rounds interleaved: Q4_0 66-82 / 83-93 / 84-89 /
// 65-89 / 72-81 %, Q4_K_M 58-86 / 69-91 / 85-88 / 68-87 / 74-84, Q5_K_M 60-85 / 43-55 / 72-85 /
// 86-89 / 62-81, Q6_K 50-85 / 81-87 / 82-89 / 80-89 / 64-71, Q8_0 85-91 / 92-95 / 91 / 90-91 /
// 77-93. (No prefetch suits the cheaply decoded formats there but starves Q5_K, whose tile
// computes longest per byte; L2 is within the noise of the best for every format.)
//
// A tile whose group block is larger than a few lines (the K-quants: 36-53 lines) spreads the
// block's prefetches over its work, part `part` of kParts at each step: issued all at the block's
// start, they fill the core's miss buffers at once and stall its own loads. On a Zen 2 EPYC
// (AVX2), Q4_K 1 GiB n = 1, two threads: 13.1-13.2 GB/s at once, 20.1-21.9 spread over its 8
// sub-blocks, against a read loop of 23-30 (docs/PERFORMANCE.md). A format whose measurements
// say so prefetches at its own distance, kAhead (Q6_K: qgemm_k.cpp).
inline constexpr size_t kStreamAhead = 4096;
inline constexpr int kStreamColumns = 2;
template <size_t kBytes, int NC, int kParts = 1, size_t kAhead = kStreamAhead>
[[gnu::always_inline]] inline void prefetch_weights(const std::byte *w, int part = 0) {
    if constexpr (NC <= kStreamColumns) {
        constexpr size_t kLines = (kBytes + 63) / 64;
        const size_t first = kLines * size_t(part) / kParts;
        const size_t last = kLines * size_t(part + 1) / kParts;
        // A volatile asm rather than __builtin_prefetch: GCC's scheduler gathers the builtins of
        // every part back at the block's start, and does not move instructions across this.
        for (size_t l = first; l < last; ++l) {
            asm volatile("prefetcht1 %0" : : "m"(w[kAhead + 64 * l]));
        }
    }
}

// The block-after-block walk of a tile over NG groups `stride` bytes apart, in lockstep:
// body(g, w, b) for block b of group g, at w. The body is a lambda marked LOOM_INLINE_LAMBDA, so
// that a wide tile's block stays one schedule with its loop.
template <int NG, size_t kBlockBytes, typename Body>
[[gnu::always_inline]] inline void for_blocks(const std::byte *group, size_t stride,
                                              int64_t n_blocks, Body body) {
    for (int64_t b = 0; b < n_blocks; ++b) {
#pragma GCC unroll 4
        for (int g = 0; g < NG; ++g) {
            body(g, group + size_t(g) * stride + size_t(b) * kBlockBytes, b);
        }
    }
}

extern const Format kFormatQ4_0, kFormatQ4_1, kFormatQ5_0, kFormatQ5_1,
    kFormatQ8_0;  // qgemm_legacy.cpp
extern const Format kFormatQ2_K, kFormatQ3_K, kFormatQ4_K, kFormatQ5_K,
    kFormatQ6_K;                                  // qgemm_k.cpp
extern const Format kFormatMXFP4, kFormatIQ4_NL;  // qgemm_lut4.cpp
extern const Format kFormatIQ4_XS;                // qgemm_iq4xs.cpp

// Null when `type` has no repacked kernel in this build.
const Format *format(DType type);

// Scratch for a product of K-deep rows: shared by the node's threads for n_columns columns, and
// per thread.
size_t shared_size(DType type, int64_t k, int64_t n_columns);
size_t work_size(DType type, int64_t k);
// Weights still in the file's layout (Job::a_grouped false: a matrix whose repacked copy is being
// made, kFlagRepackPending, engine/model/deferred_moves.h) are permuted into the
// repacked layout a few groups at a time, in this many more bytes of each thread's scratch, just
// before the tiles read them: the same bytes as the repacked copy's, so the same bits in every
// output, at the cost of the permutation (the tiles' repacked reads are what makes them fast).
size_t staging_size(DType type, int64_t k);

// Runs this thread's share of `problem`, whose jobs' weights are all `type` and in groups of 16
// rows (repacked, or in the file's layout with staging); every thread of the node must call it (it
// waits on a barrier). `work` is this thread's work_size bytes, and staging_size more where a job's
// weights are not repacked; params.shared shared_size bytes.
void run(const ComputeParams &params, const gemm::Problem &problem, DType type, std::byte *work);

}  // namespace loom::cpu::inline LOOM_ISA::qgemm
