// Matrix-product kernels: the matrix-vector path and the packed GEMM, over the per-dtype row
// loads and vectors of simd.h.
#include "core/cpu/gemm.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#include "core/cpu/gemm_blocking.h"
#include "core/cpu/repack.h"
#include "core/cpu/simd.h"
#include "core/quant/legacy_formats.h"
#include "core/quant/lut4_formats.h"
#include "loom/error.h"

namespace loom::cpu::inline LOOM_ISA::gemm {
namespace {

using namespace simd;

// Packs one panel of up to MR rows (row i at a + i * nb1, kc contiguous elements each) as
// [kc][MR] floats, rows past `rows` zero: VL x VL blocks are loaded a row vector at a time and
// transposed in registers.
template <typename W>
void pack_panel(const std::byte *a, size_t nb1, int64_t rows, int64_t kc, float *out) {
    int64_t k = 0;
    for (; k + VL <= kc; k += VL) {
        for (int h = 0; h < MR; h += VL) {
            vf r[VL];
            for (int i = 0; i < VL; ++i) {
                prefetch_next_panel(a + size_t(h + i) * nb1 + size_t(k) * W::kSize, nb1);
                r[i] = h + i < rows ? W::vec(a + size_t(h + i) * nb1, k) : vf{};
            }
            transpose(r);
            for (int i = 0; i < VL; ++i) store(out + (k + i) * MR + h, r[i]);
        }
    }
    for (; k < kc; ++k) {
        for (int64_t i = 0; i < MR; ++i) {
            out[k * MR + i] = i < rows ? W::one(a + size_t(i) * nb1, k) : 0.0f;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Few columns (generation): the GEMM's arithmetic without its packed copy of A. VL weight rows
// are read in place, VL elements at a time, transposed in registers and multiplied in k order,
// restarting every KC elements and adding the block sums in turn: bit for bit what the packed
// GEMM computes for each element, at the speed of streaming the weights once.

template <typename W, int NX>
void narrow_rows(const std::byte *a, size_t nb1, int64_t rows, int64_t K, const float *const *x,
                 float *const *d) {
    vf total[NX] = {};  // (K > 0 always; GCC cannot see it)
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int64_t kc = std::min(KC, K - k0);
        vf acc[NX] = {};
        int64_t k = 0;
        for (; k + VL <= kc; k += VL) {
            vf r[VL];
            for (int i = 0; i < VL; ++i) {
                const std::byte *row = a + size_t(i) * nb1;
                __builtin_prefetch(row + (k0 + k) * W::kSize + kNarrowPrefetchBytes, 0, 3);
                r[i] = i < rows ? W::vec(row, k0 + k) : vf{};
            }
            transpose(r);  // r[j]: element k + j of every row
#pragma GCC unroll 16
            for (int j = 0; j < VL; ++j) {
                for (int c = 0; c < NX; ++c) acc[c] = fmadd(r[j], splat(x[c][k0 + k + j]), acc[c]);
            }
        }
        for (; k < kc; ++k) {
            alignas(64) float column[VL] = {};
            for (int i = 0; i < rows; ++i) column[i] = W::one(a + size_t(i) * nb1, k0 + k);
            const vf v = load(column);
            for (int c = 0; c < NX; ++c) acc[c] = fmadd(v, splat(x[c][k0 + k]), acc[c]);
        }
        for (int c = 0; c < NX; ++c) total[c] = k0 == 0 ? acc[c] : total[c] + acc[c];
    }
    for (int c = 0; c < NX; ++c) {
        alignas(64) float out[VL];
        store(out, total[c]);
        std::copy(out, out + rows, d[c]);
    }
}

// Grouped weights (Job::a_grouped): element k of a group's 16 rows is 16 floats side by side, one
// load per vector of VL of them (one vector with AVX-512, two with AVX2), so g vectors' outputs
// advance with g loads and NX FMAs per k, each vector on its own chains (two keep two chains in
// flight). The sums are narrow_rows' bit for bit: k order, restarted every KC.
static_assert(!LOOM_GROUPED_FLOAT_KERNELS || (kRepackRows % VL == 0 && MR % kRepackRows == 0),
              "a group is whole vectors of rows, and a panel whole groups");

// The vector of rows [r, r + VL) of grouped weights starting at a (r a multiple of VL), as a
// pointer for W::vec(p, k * kRepackRows).
template <typename W>
const std::byte *grouped_vector(const std::byte *a, size_t group_bytes, int64_t r) {
    return a + size_t(r / kRepackRows) * group_bytes + size_t(r % kRepackRows) * W::kSize;
}

template <typename W, int G, int NX>
void narrow_groups(const std::byte *a, size_t group_bytes, int64_t K, const float *const *x,
                   float *const *d) {
    vf total[G][NX] = {};  // (K > 0 always; GCC cannot see it)
    for (int64_t k0 = 0; k0 < K; k0 += KC) {
        const int64_t kc = std::min(KC, K - k0);
        vf acc[G][NX] = {};
        for (int64_t k = k0; k < k0 + kc; ++k) {
#pragma GCC unroll 4
            for (int g = 0; g < G; ++g) {
                const std::byte *vec = grouped_vector<W>(a, group_bytes, g * VL);
                const vf w = W::vec(vec, k * kRepackRows);
                for (int c = 0; c < NX; ++c) acc[g][c] = fmadd(w, splat(x[c][k]), acc[g][c]);
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

// Packs a GEMM panel of `rows` (a multiple of 16) grouped rows: pack_panel's output.
template <typename W>
void pack_groups(const std::byte *a, size_t group_bytes, int64_t rows, int64_t k0, int64_t kc,
                 float *out) {
    for (int64_t k = 0; k < kc; ++k) {
        for (int h = 0; h < MR; h += VL) {
            const vf v = h < rows
                             ? W::vec(grouped_vector<W>(a, group_bytes, h), (k0 + k) * kRepackRows)
                             : vf{};
            store(out + k * MR + h, v);
        }
    }
}

using NarrowKernel = void (*)(const std::byte *, size_t, int64_t, int64_t, const float *const *,
                              float *const *);
using GroupKernel = void (*)(const std::byte *, size_t, int64_t, const float *const *,
                             float *const *);

constexpr int kGroupVectors = kRepackRows / VL;  // vectors of rows per group
template <typename W, int G>
constexpr std::array<GroupKernel, kNarrowMaxN> group_kernels() {
    return {narrow_groups<W, G, 1>, narrow_groups<W, G, 2>, narrow_groups<W, G, 3>,
            narrow_groups<W, G, 4>};
}

template <typename W>
constexpr std::array<NarrowKernel, kNarrowMaxN> narrow_kernels() {
    static_assert(kNarrowMaxN == 4, "one instantiation per column count");
    return {narrow_rows<W, 1>, narrow_rows<W, 2>, narrow_rows<W, 3>, narrow_rows<W, 4>};
}

constexpr std::array<WeightOps, kDTypeCount> kWeightOps = [] {
    std::array<WeightOps, kDTypeCount> t{};
    t[size_t(DType::F32)] = {.pack = pack_panel<LoadF32>, .narrow = narrow_kernels<LoadF32>()};
    t[size_t(DType::F16)] = {.pack = pack_panel<LoadF16>,
                             .narrow = narrow_kernels<LoadF16>(),
                             .pack_grouped = pack_groups<LoadF16>,
                             .narrow_grouped = {group_kernels<LoadF16, kGroupVectors>(),
                                                group_kernels<LoadF16, 2 * kGroupVectors>()}};
    t[size_t(DType::BF16)] = {.pack = pack_panel<LoadBF16>,
                              .narrow = narrow_kernels<LoadBF16>(),
                              .pack_grouped = pack_groups<LoadBF16>,
                              .narrow_grouped = {group_kernels<LoadBF16, kGroupVectors>(),
                                                 group_kernels<LoadBF16, 2 * kGroupVectors>()}};
    return t;
}();

size_t round_up(size_t n, size_t to) {
    return (n + to - 1) / to * to;
}

constexpr size_t kFloatsPerLine = 64 / sizeof(float);  // each region starts on a cache line

Scratch carve(std::byte *work, int64_t k) {
    const size_t kc = size_t(std::min(k, KC));
    float *p = reinterpret_cast<float *>(work);
    Scratch s;
    s.rows = p;
    p += round_up(size_t(k), kFloatsPerLine);
    s.tile = p;
    p += round_up(size_t(MR * NR), kFloatsPerLine);
    s.a = p;
    p += round_up(size_t(MC) * kc, kFloatsPerLine);
    s.b = p;
    return s;
}

// Byte offset of element k in a row of `type` with element stride nb0.
size_t element_offset(DType type, int64_t k, size_t nb0) {
    return size_t(k / traits(type).block_size) * nb0;
}

// Packs rows [m0, m0 + mc) x columns [k0, k0 + kc) of a into MR-row panels, each [kc][MR];
// rows past mc are zero.
void pack_a(const Job &job, int64_t m0, int64_t mc, int64_t k0, int64_t kc, float *out,
            float *buf) {
    const size_t k_off = element_offset(job.a_type, k0, job.a_nb0);
    const WeightOps &ops = weight_ops(job.a_type);
    if (job.a_grouped) {
        const size_t group_bytes = job.a_nb1 * size_t(kRepackRows);
        for (int64_t p = 0; p * MR < mc; ++p) {  // m0 + p * MR: a group's first row
            ops.pack_grouped(job.a + size_t((m0 + p * MR) / kRepackRows) * group_bytes, group_bytes,
                             std::min<int64_t>(MR, mc - p * MR), k0, kc, out + p * kc * MR);
        }
        return;
    }
    if (ops.pack != nullptr && job.a_nb0 == traits(job.a_type).type_size) {
        for (int64_t p = 0; p * MR < mc; ++p) {
            ops.pack(job.a + size_t(m0 + p * MR) * job.a_nb1 + k_off, job.a_nb1,
                     std::min<int64_t>(MR, mc - p * MR), kc, out + p * kc * MR);
        }
        return;
    }
    // Strided elements (or a type without a packer): rows converted one at a time.
    for (int64_t p = 0; p * MR < mc; ++p) {
        float *panel = out + p * kc * MR;
        for (int64_t r = 0; r < MR; ++r) {
            const int64_t i = p * MR + r;
            if (i >= mc) {
                for (int64_t k = 0; k < kc; ++k) panel[k * MR + r] = 0.0f;
                continue;
            }
            const std::byte *row = job.a + size_t(m0 + i) * job.a_nb1 + k_off;
            const float *src = load_row(job.a_type, row, job.a_nb0, kc, buf);
            for (int64_t k = 0; k < kc; ++k) panel[k * MR + r] = src[k];
        }
    }
}

// Packs columns [j0, j0 + nc) x [k0, k0 + kc) of b into NR-column panels, each [kc][NR];
// columns past nc are zero.
void pack_b(const Columns &cols, DType weight_type, int64_t j0, int64_t nc, int64_t k0, int64_t kc,
            float *out, float *buf) {
    for (int64_t p = 0; p * NR < nc; ++p) {
        float *panel = out + p * kc * NR;
        for (int64_t r = 0; r < NR; ++r) {
            const int64_t j = p * NR + r;
            if (j >= nc) {
                for (int64_t k = 0; k < kc; ++k) panel[k * NR + r] = 0.0f;
                continue;
            }
            const std::byte *row = cols.b_row(j0 + j) + size_t(k0) * cols.b_nb0;
            round_activations(weight_type, load_row(DType::F32, row, cols.b_nb0, kc, buf), buf, kc);
            for (int64_t k = 0; k < kc; ++k) panel[k * NR + r] = buf[k];
        }
    }
}

// What gemm_rows packs a KC block into and multiplies it with: one F32 step per element (every
// float weight dtype), or one step per BF16 pair.
struct FloatSteps {
    using Packed = float;
    static int64_t steps(int64_t kc) { return kc; }
    static void pack_columns(const Job &job, int64_t j0, int64_t nc, int64_t k0, int64_t kc,
                             float *out, float *buf) {
        pack_b(job.cols, job.a_type, j0, nc, k0, kc, out, buf);
    }
    static void pack_rows(const Job &job, int64_t m0, int64_t mc, int64_t k0, int64_t kc,
                          float *out, float *buf) {
        pack_a(job, m0, mc, k0, kc, out, buf);
    }
    static vf load_step(const float *p) { return load(p); }
    static vf splat_step(float x) { return splat(x); }
    static vf madd(vf acc, vf a, vf b) { return fmadd(a, b, acc); }
};

// dst rows [mb, me) of a job of at most kNarrowMaxN columns whose weight rows are contiguous.
void few_columns_rows(const Job &job, int64_t K, int64_t mb, int64_t me, const Scratch &s) {
    const int nx = int(job.n);
    const float *x[kNarrowMaxN];
    for (int c = 0; c < nx; ++c) {  // the columns, rounded as pack_b rounds them
        float *buf = s.b + size_t(c) * size_t(K);
        round_activations(
            job.a_type, load_row(DType::F32, job.cols.b_row(c), job.cols.b_nb0, K, s.rows), buf, K);
        x[c] = buf;
    }
    if (job.a_grouped) {
        // From mb, a panel's first row; in pairs where their sums take at most 8 registers
        // (AVX2: one or two columns).
        LOOM_ASSERT((me - mb) % kRepackRows == 0);  // grouped weights have whole groups
        const size_t group_bytes = job.a_nb1 * size_t(kRepackRows);
        const auto &kernels = weight_ops(job.a_type).narrow_grouped;
        grouped_in_halves(
            job.cols, nx, mb / kRepackRows, me / kRepackRows, 2 * kGroupVectors * nx <= 8,
            [&](int64_t g, int64_t half, float *const *d) {
                kernels[1][size_t(nx - 1)](job.a + size_t(g) * group_bytes,
                                           size_t(half) * group_bytes, K, x, d);
            },
            [&](int64_t g, float *const *d) {
                kernels[0][size_t(nx - 1)](job.a + size_t(g) * group_bytes, group_bytes, K, x, d);
            });
        return;
    }
    const NarrowKernel kernel = weight_ops(job.a_type).narrow[size_t(nx - 1)];
    for (int64_t m = mb; m < me; m += VL) {
        float *dm[kNarrowMaxN];
        for (int c = 0; c < nx; ++c) dm[c] = job.cols.dst_row(c) + m;
        kernel(job.a + size_t(m) * job.a_nb1, job.a_nb1, std::min<int64_t>(VL, me - m), K, x, dm);
    }
}

// ---------------------------------------------------------------------------------------------
// Block-format weights: columns quantized to the vec_dot type, one vec_dot per output element.

// Weight rows per tile: a tile (8 rows of at most a few KiB each) stays in L1 while every
// quantized column passes by, so each weight row is read from memory once per job.
constexpr int64_t kQuantRowTile = 8;

bool has_block_dot(DType type) {
    return traits(type).is_quantized && traits(type).vec_dot != nullptr;
}

size_t quantized_column_bytes(DType a_type, int64_t k) {
    return round_up(row_size(traits(a_type).vec_dot_type, k), 64);
}

// Scratch: K floats (a column gathered as F32), then the job's quantized columns.
size_t quantized_work_size(DType a_type, int64_t k, int64_t max_n) {
    return round_up(size_t(k) * sizeof(float), 64) +
           size_t(max_n) * quantized_column_bytes(a_type, k);
}

void quantized_rows(const Job &job, int64_t K, int64_t mb, int64_t me, std::byte *work) {
    const DTypeTraits &t = traits(job.a_type);
    const Quantizer quantize_column = traits(t.vec_dot_type).from_float_in_ops;
    auto *buf = reinterpret_cast<float *>(work);
    std::byte *columns = work + round_up(size_t(K) * sizeof(float), 64);
    const size_t column_bytes = quantized_column_bytes(job.a_type, K);
    for (int64_t j = 0; j < job.n; ++j) {
        const float *x = load_row(DType::F32, job.cols.b_row(j), job.cols.b_nb0, K, buf);
        quantize_column(x, columns + size_t(j) * column_bytes, K);
    }
    // Groups of columns share each decoded weight block where the format has such a kernel.
    quant::DotColumns dot_columns = quant::legacy_dot_columns(job.a_type);
    if (dot_columns == nullptr) dot_columns = quant::lut4_dot_columns(job.a_type);
    const int64_t group = dot_columns != nullptr ? quant::kMaxDotColumns : 1;
    for (int64_t m0 = mb; m0 < me; m0 += kQuantRowTile) {
        const int64_t m1 = std::min(me, m0 + kQuantRowTile);
        for (int64_t j0 = 0; j0 < job.n; j0 += group) {
            const int nc = int(std::min(group, job.n - j0));
            const void *ys[quant::kMaxDotColumns];
            float *d[quant::kMaxDotColumns];
            for (int c = 0; c < nc; ++c) {
                ys[c] = columns + size_t(j0 + c) * column_bytes;
                d[c] = job.cols.dst_row(j0 + c);
            }
            for (int64_t m = m0; m < m1; ++m) {
                const std::byte *row = job.a + size_t(m) * job.a_nb1;
                float out[quant::kMaxDotColumns];
                if (dot_columns != nullptr) {
                    dot_columns(K, row, ys, nc, out);
                } else {
                    out[0] = t.vec_dot(K, row, ys[0]);
                }
                for (int c = 0; c < nc; ++c) d[c][m] = out[c];
            }
        }
    }
}

}  // namespace

// Whole rows through the dtype's converters (F16C), not one call each.
void round_activations(DType weight_type, const float *src, float *dst, int64_t n) {
    if (weight_type != DType::F16 && weight_type != DType::BF16) {
        if (src != dst) std::copy(src, src + n, dst);
        return;
    }
    const DTypeTraits &t = traits(weight_type);
    constexpr int64_t kChunk = 256;
    uint16_t narrow[kChunk];
    for (int64_t i = 0; i < n; i += kChunk) {
        const int64_t m = std::min(kChunk, n - i);
        t.from_float(src + i, narrow, m);
        t.to_float(narrow, dst + i, m);
    }
}

const WeightOps &weight_ops(DType type) {
    return kWeightOps[size_t(type)];
}

size_t work_size(DType a_type, int64_t k, int64_t max_n) {
    if (has_block_dot(a_type)) return quantized_work_size(a_type, k, max_n);
    const size_t kc = size_t(std::min(k, KC));
    const size_t nc = round_up(size_t(std::min(std::max<int64_t>(max_n, 1), NC)), NR);
    size_t floats = round_up(size_t(k), kFloatsPerLine);
    floats += round_up(size_t(MR * NR), kFloatsPerLine);
    floats += round_up(size_t(MC) * kc, kFloatsPerLine);
    // packed B, or the few columns of the narrow path
    floats += round_up(std::max(kc * nc, size_t(kNarrowMaxN) * size_t(k)), kFloatsPerLine);
    return floats * sizeof(float);
}

void run(const ComputeParams &params, const Problem &problem, std::byte *work) {
    if (problem.n_jobs <= 0) return;
    const int64_t K = problem.k;
    const auto panels_of = [&](int64_t i) {
        return (problem.job_at(problem.ctx, i).m + MR - 1) / MR;
    };
    // Work units are MR-row panels of every job, split into one contiguous range per thread. The
    // batches of one node share their row count; the products of a joined run (shared_columns:
    // Q, K and V) each have their own, so their panels are counted job by job.
    const int64_t panels0 = panels_of(0);
    int64_t n_units = problem.n_jobs * panels0;
    if (problem.shared_columns) {
        n_units = 0;
        for (int64_t i = 0; i < problem.n_jobs; ++i) n_units += panels_of(i);
    }
    const Range range = split_range(n_units, params.ith, params.nth);
    const Scratch s = carve(work, K);
    int64_t job_index = 0, job_first = 0;  // the job of unit u and its first unit
    int64_t panels = panels0;
    for (int64_t u = range.begin; u < range.end;) {
        if (problem.shared_columns) {
            while (u >= job_first + panels) {
                job_first += panels;
                panels = panels_of(++job_index);
            }
        } else {
            job_index = u / panels;
            job_first = job_index * panels;
        }
        // This thread's panels [p0, p1) of one job.
        const int64_t p0 = u - job_first;
        const int64_t p1 = std::min(panels, p0 + (range.end - u));
        u += p1 - p0;
        const Job job = problem.job_at(problem.ctx, job_index);
        const int64_t mb = p0 * MR, me = std::min(job.m, p1 * MR);
        if (job.n <= 0) continue;
        if (K == 0) {  // empty sums
            for (int64_t j = 0; j < job.n; ++j) {
                std::fill(job.cols.dst_row(j) + mb, job.cols.dst_row(j) + me, 0.0f);
            }
        } else if (has_block_dot(job.a_type)) {
            quantized_rows(job, K, mb, me, work);
#if LOOM_X86_AVX512BF16
        } else if (job.a_type == DType::BF16 &&
                   (job.a_grouped || job.a_nb0 == traits(job.a_type).type_size)) {
            bf16_pair_rows(job, K, mb, me, s);
#endif
        } else if (job.n <= kNarrowMaxN &&
                   (job.a_grouped || job.a_nb0 == traits(job.a_type).type_size)) {
            few_columns_rows(job, K, mb, me, s);
        } else {
            gemm_rows<FloatSteps>(job, K, mb, me, s);
        }
    }
}

}  // namespace loom::cpu::inline LOOM_ISA::gemm
