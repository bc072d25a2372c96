// BF16 weights on CPUs with AVX512-BF16: the narrow and packed float paths of gemm.cpp on pairs
// of elements, multiplied by VDPBF16PS.
//
// VDPBF16PS takes pairs of bfloat16, elements (k, k + 1) of a row in one 32-bit lane (k in the
// low half), and adds both products to an F32 lane:
// first the odd element's, then the even one's, each product exact (8 x 8 mantissa bits) and
// each sum rounded once: two fused multiply-adds in that order, with denormal inputs and results
// flushed to zero (measured bit for bit on Zen 5; Intel documents the same order). The paths
// below are the float ones on pairs instead of elements: half the steps and no widening, twice
// the multiply-adds per instruction. Each element's sum is still one chain restarted every KC
// (an even number, so no pair straddles two blocks), the same in the narrow and packed paths;
// an odd K's last element is paired with a zero. The activations are rounded to BF16 as
// round_activations() rounds them.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "core/cpu/gemm_blocking.h"
#include "core/cpu/kernels.h"
#include "core/cpu/repack.h"
#include "core/cpu/simd.h"

#if LOOM_X86_AVX512BF16

namespace loom::cpu::inline LOOM_ISA::gemm {
namespace {

using namespace simd;

[[gnu::always_inline]] inline vf dot_pairs(vf acc, vf w, vf x) {
    return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(w), reinterpret_cast<__m512bh>(x));
}
[[gnu::always_inline]] inline vf splat_pair(uint32_t pair) {
    return reinterpret_cast<vf>(_mm512_set1_epi32(int32_t(pair)));
}
// 64 bytes: VL pairs of one row, or, transposed, pair k of VL rows.
[[gnu::always_inline]] inline vf load_raw(const void *p) {
    vf v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
// A pair of a row with contiguous bf16 elements, element k + 1 zero past kend.
inline uint32_t row_pair(const std::byte *row, int64_t k, int64_t kend) {
    uint16_t lo, hi = 0;
    std::memcpy(&lo, row + size_t(k) * 2, 2);
    if (k + 1 < kend) std::memcpy(&hi, row + size_t(k + 1) * 2, 2);
    return uint32_t(lo) | uint32_t(hi) << 16;
}

// Grouped weights hold element k of 16 rows side by side (repack.h): 64 bytes at element k are
// elements k and k + 1 of the 16 rows, interleaved here into the 16 rows' pairs; a lone last
// element is widened with a zero.
[[gnu::always_inline]] inline vf grouped_pairs(const std::byte *group, int64_t k, bool lone) {
    const std::byte *p = group + size_t(k) * kRepackRows * 2;
    if (lone) {
        vh h;
        std::memcpy(&h, p, sizeof h);
        return reinterpret_cast<vf>(__builtin_convertvector(h, vu));
    }
    static_assert(kRepackRows == VL, "a group is one vector of pairs");
    const __m512i interleave =
        _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6,
                         21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return reinterpret_cast<vf>(
        _mm512_permutexvar_epi16(interleave, reinterpret_cast<__m512i>(load_raw(p))));
}

// x's K elements rounded to BF16 as ceil(K / 2) pairs, the last one zero-padded.
void round_to_pairs(const float *x, int64_t K, uint32_t *pairs) {
    auto *h = reinterpret_cast<uint16_t *>(pairs);
    traits(DType::BF16).from_float(x, h, K);
    if (K % 2 != 0) h[K] = 0;
}

// narrow_rows on pairs; x[c]: the pairs of column c (from element 0).
template <int NX>
void narrow_rows_bf16(const std::byte *a, size_t nb1, int64_t rows, int64_t K,
                      const uint32_t *const *x, float *const *d) {
    vf total[NX] = {};
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int64_t kc = std::min(KC, K - k0), pairs = (kc + 1) / 2;
        const uint32_t *xb[NX];
        for (int c = 0; c < NX; ++c) xb[c] = x[c] + k0 / 2;
        vf acc[NX] = {};
        int64_t p = 0;
        for (; 2 * (p + VL) <= kc; p += VL) {
            vf r[VL];
            for (int i = 0; i < VL; ++i) {
                const std::byte *at = a + size_t(i) * nb1 + size_t(k0 + 2 * p) * 2;
                __builtin_prefetch(at + kNarrowPrefetchBytes, 0, 3);
                r[i] = i < rows ? load_raw(at) : vf{};
            }
            transpose(r);  // r[j]: pair p + j of every row
#pragma GCC unroll 16
            for (int j = 0; j < VL; ++j) {
                for (int c = 0; c < NX; ++c)
                    acc[c] = dot_pairs(acc[c], r[j], splat_pair(xb[c][p + j]));
            }
        }
        for (; p < pairs; ++p) {
            alignas(64) uint32_t column[VL] = {};
            for (int i = 0; i < rows; ++i) column[i] = row_pair(a + size_t(i) * nb1, k0 + 2 * p, K);
            const vf w = load_raw(column);
            for (int c = 0; c < NX; ++c) acc[c] = dot_pairs(acc[c], w, splat_pair(xb[c][p]));
        }
        for (int c = 0; c < NX; ++c) total[c] = k0 == 0 ? acc[c] : total[c] + acc[c];
    }
    for (int c = 0; c < NX; ++c) {
        alignas(64) float out[VL];
        store(out, total[c]);
        std::copy(out, out + rows, d[c]);
    }
}

// narrow_groups on pairs: G groups of 16 rows from `a`.
template <int G, int NX>
void narrow_groups_bf16(const std::byte *a, size_t group_bytes, int64_t K, const uint32_t *const *x,
                        float *const *d) {
    vf total[G][NX] = {};
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int64_t kc = std::min(KC, K - k0);
        vf acc[G][NX] = {};
        for (int64_t k = k0; k < k0 + kc; k += 2) {
            const bool lone = k + 1 == k0 + kc;
#pragma GCC unroll 2
            for (int g = 0; g < G; ++g) {
                const std::byte *group = a + size_t(g) * group_bytes;
                const vf w = grouped_pairs(group, k, lone);
                for (int c = 0; c < NX; ++c)
                    acc[g][c] = dot_pairs(acc[g][c], w, splat_pair(x[c][k / 2]));
            }
        }
        for (int g = 0; g < G; ++g) {
            for (int c = 0; c < NX; ++c)
                total[g][c] = k0 == 0 ? acc[g][c] : total[g][c] + acc[g][c];
        }
    }
    for (int g = 0; g < G; ++g) {
        for (int c = 0; c < NX; ++c) store(d[c] + g * VL, total[g][c]);
    }
}

// Packs a GEMM panel of `rows` rows (row i at a + i * nb1, from element k0) as ceil(kc / 2)
// steps of MR pairs, zero past `rows`: pack_panel on pairs.
void pack_panel_bf16(const std::byte *a, size_t nb1, int64_t rows, int64_t k0, int64_t kc,
                     uint32_t *out) {
    const int64_t pairs = (kc + 1) / 2;
    int64_t p = 0;
    for (; 2 * (p + VL) <= kc; p += VL) {
        for (int h = 0; h < MR; h += VL) {
            vf r[VL];
            for (int i = 0; i < VL; ++i) {
                const std::byte *at = a + size_t(h + i) * nb1 + size_t(k0 + 2 * p) * 2;
                prefetch_next_panel(at, nb1);
                r[i] = h + i < rows ? load_raw(at) : vf{};
            }
            transpose(r);
            for (int i = 0; i < VL; ++i) std::memcpy(out + (p + i) * MR + h, &r[i], sizeof r[i]);
        }
    }
    for (; p < pairs; ++p) {
        for (int64_t i = 0; i < MR; ++i) {
            out[p * MR + i] = i < rows ? row_pair(a + size_t(i) * nb1, k0 + 2 * p, k0 + kc) : 0;
        }
    }
}

// The same from grouped weights (`rows` a multiple of 16).
void pack_groups_bf16(const std::byte *a, size_t group_bytes, int64_t rows, int64_t k0, int64_t kc,
                      uint32_t *out) {
    for (int64_t k = 0; k < kc; k += 2) {
        for (int h = 0; h < MR; h += VL) {
            const vf v = h < rows ? grouped_pairs(a + size_t(h / kRepackRows) * group_bytes, k0 + k,
                                                  k + 1 == kc)
                                  : vf{};
            std::memcpy(out + (k / 2) * MR + h, &v, sizeof v);
        }
    }
}

struct Bf16PairSteps {
    using Packed = uint32_t;
    static int64_t steps(int64_t kc) { return (kc + 1) / 2; }
    // pack_b on pairs: [steps][NR] pairs per panel of NR columns.
    static void pack_columns(const Job &job, int64_t j0, int64_t nc, int64_t k0, int64_t kc,
                             uint32_t *out, float *buf) {
        const int64_t pairs = steps(kc);
        uint32_t column[KC / 2];
        for (int64_t p = 0; p * NR < nc; ++p) {
            uint32_t *panel = out + p * pairs * NR;
            for (int64_t r = 0; r < NR; ++r) {
                const int64_t j = p * NR + r;
                if (j >= nc) {
                    for (int64_t q = 0; q < pairs; ++q) panel[q * NR + r] = 0;
                    continue;
                }
                const std::byte *row = job.cols.b_row(j0 + j) + size_t(k0) * job.cols.b_nb0;
                round_to_pairs(load_row(DType::F32, row, job.cols.b_nb0, kc, buf), kc, column);
                for (int64_t q = 0; q < pairs; ++q) panel[q * NR + r] = column[q];
            }
        }
    }
    static void pack_rows(const Job &job, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                          uint32_t *out, float *) {
        const int64_t pairs = steps(kc);
        for (int64_t p = 0; p * MR < mc; ++p) {
            const int64_t rows = std::min<int64_t>(MR, mc - p * MR), m = m0 + p * MR;
            if (job.a_grouped) {
                const size_t group_bytes = job.a_nb1 * size_t(kRepackRows);
                pack_groups_bf16(job.a + size_t(m / kRepackRows) * group_bytes, group_bytes, rows,
                                 k0, kc, out + p * pairs * MR);
            } else {
                pack_panel_bf16(job.a + size_t(m) * job.a_nb1, job.a_nb1, rows, k0, kc,
                                out + p * pairs * MR);
            }
        }
    }
    static vf load_step(const uint32_t *p) { return load_raw(p); }
    static vf splat_step(uint32_t pair) { return splat_pair(pair); }
    static vf madd(vf acc, vf a, vf b) { return dot_pairs(acc, a, b); }
};

}  // namespace

// The narrow path for up to kNarrowMaxN columns, else the packed one.
void bf16_pair_rows(const Job &job, int64_t K, int64_t mb, int64_t me, const Scratch &s) {
    if (job.n > kNarrowMaxN) {
        gemm_rows<Bf16PairSteps>(job, K, mb, me, s);
        return;
    }
    using RowKernel = void (*)(const std::byte *, size_t, int64_t, int64_t, const uint32_t *const *,
                               float *const *);
    using GroupKernel =
        void (*)(const std::byte *, size_t, int64_t, const uint32_t *const *, float *const *);
    static constexpr RowKernel kRows[] = {narrow_rows_bf16<1>, narrow_rows_bf16<2>,
                                          narrow_rows_bf16<3>, narrow_rows_bf16<4>};
    static constexpr GroupKernel kGroups[2][kNarrowMaxN] = {
        {narrow_groups_bf16<1, 1>, narrow_groups_bf16<1, 2>, narrow_groups_bf16<1, 3>,
         narrow_groups_bf16<1, 4>},
        {narrow_groups_bf16<2, 1>, narrow_groups_bf16<2, 2>, narrow_groups_bf16<2, 3>,
         narrow_groups_bf16<2, 4>}};
    const int nx = int(job.n);
    const uint32_t *x[kNarrowMaxN];
    for (int c = 0; c < nx; ++c) {  // (K + 1) / 2 <= K pairs in column c's K floats of s.b
        auto *pairs = reinterpret_cast<uint32_t *>(s.b) + size_t(c) * size_t(K);
        round_to_pairs(load_row(DType::F32, job.cols.b_row(c), job.cols.b_nb0, K, s.rows), K,
                       pairs);
        x[c] = pairs;
    }
    float *dm[kNarrowMaxN];
    if (job.a_grouped) {
        const size_t group_bytes = job.a_nb1 * size_t(kRepackRows);
        grouped_in_halves(
            job.cols, nx, mb / kRepackRows, me / kRepackRows, true,
            [&](int64_t g, int64_t half, float *const *d) {
                kGroups[1][nx - 1](job.a + size_t(g) * group_bytes, size_t(half) * group_bytes, K,
                                   x, d);
            },
            [&](int64_t g, float *const *d) {
                kGroups[0][nx - 1](job.a + size_t(g) * group_bytes, group_bytes, K, x, d);
            });
        return;
    }
    for (int64_t m = mb; m < me; m += VL) {
        for (int c = 0; c < nx; ++c) dm[c] = job.cols.dst_row(c) + m;
        kRows[nx - 1](job.a + size_t(m) * job.a_nb1, job.a_nb1, std::min<int64_t>(VL, me - m), K, x,
                      dm);
    }
}

}  // namespace loom::cpu::inline LOOM_ISA::gemm

#endif
