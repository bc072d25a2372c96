// Products summed in the orders of llama.cpp's x86 kernels for two activations (SumOrder in
// loom/core.h): what the attention's scores and its V product need so that its probabilities are
// llama.cpp's bit for bit. Every sum runs on 8-lane vectors whatever the build's width (AVX-512
// included), because the reference the engine is held to is llama.cpp's AVX2 build.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/cpu/gemm.h"
#include "core/cpu/simd.h"
#include "loom/fp16.h"

// Builds without AVX pass the 8-lane vectors in memory; GCC warns that this ABI differs from an
// AVX build's (a note stays), which does not matter for functions private to this file.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace loom::cpu::inline LOOM_ISA::gemm {
namespace {

using f8 = simd::floats<8>;
using f4 = simd::floats<4>;

// a * b + c in one rounding, as the reference's FMA computes it (in software on a CPU without).
f8 fma8(f8 a, f8 b, f8 c) {
#if LOOM_X86_FMA
    return f8(_mm256_fmadd_ps(__m256(a), __m256(b), __m256(c)));
#else
    for (int l = 0; l < 8; ++l) c[l] = std::fma(a[l], b[l], c[l]);
    return c;
#endif
}

f8 load8(const float *p) {
    f8 v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
f8 load8(const uint16_t *p) {
#if LOOM_X86_F16C
    return f8(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))));
#else
    f8 v;
    for (int l = 0; l < 8; ++l) v[l] = fp16_to_f32(p[l]);
    return v;
#endif
}

// The 8 sums of 8 vectors, lane by lane as a tree, in one pass for all 8: first each vector's
// lane l + lane l + 4 (both orders add low and high halves), then for four_chains (ggml's two
// hadds) (t0 + t1) + (t2 + t3), for eight_lanes (tinyBLAS's movehl) (t0 + t2) + (t1 + t3).
// (IEEE addition commutes exactly, so only the pairing matters.)
template <bool kHadd>
[[gnu::always_inline]] inline f8 sums_of(const f8 *v) {
    f4 half_sums[8];
    for (int o = 0; o < 8; ++o) {
        half_sums[o] = __builtin_shufflevector(v[o], v[o], 0, 1, 2, 3) +
                       __builtin_shufflevector(v[o], v[o], 4, 5, 6, 7);
    }
    f8 x[4];  // [t(v 2p) | t(v 2p + 1)]
    for (int p = 0; p < 4; ++p) {
        x[p] =
            __builtin_shufflevector(half_sums[2 * p], half_sums[2 * p + 1], 0, 1, 2, 3, 4, 5, 6, 7);
    }
    f8 y[2];  // the pairs of each vector's t, for vectors 4q, 4q + 2, 4q + 1, 4q + 3
    for (int q = 0; q < 2; ++q) {
        if constexpr (kHadd) {
            y[q] = __builtin_shufflevector(x[2 * q], x[2 * q + 1], 0, 2, 8, 10, 4, 6, 12, 14) +
                   __builtin_shufflevector(x[2 * q], x[2 * q + 1], 1, 3, 9, 11, 5, 7, 13, 15);
        } else {
            y[q] = __builtin_shufflevector(x[2 * q], x[2 * q + 1], 0, 1, 8, 9, 4, 5, 12, 13) +
                   __builtin_shufflevector(x[2 * q], x[2 * q + 1], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    }
    // lanes: vectors 0, 2, 1, 3, 4, 6, 5, 7
    const f8 r = __builtin_shufflevector(y[0], y[1], 0, 2, 4, 6, 8, 10, 12, 14) +
                 __builtin_shufflevector(y[0], y[1], 1, 3, 5, 7, 9, 11, 13, 15);
    return __builtin_shufflevector(r, r, 0, 2, 1, 3, 4, 6, 5, 7);
}

// ggml_vec_dot_f32 / _f16: 8 rows of a against one column b, into out[0, 8).
template <typename E>
void four_chains(const E *const *a, const float *b, int64_t K, float *out) {
    f8 s[8];
    int64_t i = 0;
    for (int r0 = 0; r0 < 8; r0 += 2) {  // 2 rows at a time: 8 chains and b's 4 vectors
        f8 c[2][4];
#pragma GCC unroll 8
        for (int j = 0; j < 8; ++j) c[j / 4][j % 4] = f8{};  // (an `= {}` became a memset call)
        for (i = 0; i + 32 <= K; i += 32) {
            for (int j = 0; j < 4; ++j) {
                const f8 y = load8(b + i + 8 * j);
                for (int r = 0; r < 2; ++r) {
                    c[r][j] = fma8(load8(a[r0 + r] + i + 8 * j), y, c[r][j]);
                }
            }
        }
        for (int r = 0; r < 2; ++r) s[r0 + r] = (c[r][0] + c[r][2]) + (c[r][1] + c[r][3]);
    }
    const f8 sums = sums_of<true>(s);
    for (int r = 0; r < 8; ++r) {
        float sum = sums[r];
        if constexpr (std::is_same_v<E, float>) {
            // ggml's `sumf += x[i] * y[i]`, which its compiler contracts into one rounding
            for (int64_t k = i; k < K; ++k) sum = std::fma(a[r][k], b[k], sum);
        } else {
            // ggml_vec_dot_f16 adds the rest in double (ggml_float), each product in float
            double total = sum;
            for (int64_t k = i; k < K; ++k) total += double(fp16_to_f32(a[r][k]) * b[k]);
            sum = float(total);
        }
        out[r] = sum;
    }
}

// The 8 elements from i of a row of k elements, zero past k.
template <typename E>
f8 load8_padded(const E *p, int64_t i, int64_t k) {
    f8 v = {};
    for (int l = 0; i + l < k; ++l) {
        v[l] = std::is_same_v<E, float> ? float(p[i + l]) : fp16_to_f32(p[i + l]);
    }
    return v;
}

// tinyBLAS: 2 rows of a against 4 columns (8 chains; each row converted from F16 once for 4),
// K as if zero-padded to a multiple of 8; out[2j + r] is row r against column j.
template <typename E>
void eight_lanes(const E *const *a, const float *const *b, int64_t K, float *out) {
    f8 c[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) c[j] = f8{};  // (an `= {}` became a memset call)
    int64_t i = 0;
    for (; i + 8 <= K; i += 8) {
        const f8 x[2] = {load8(a[0] + i), load8(a[1] + i)};
        for (int j = 0; j < 4; ++j) {
            const f8 y = load8(b[j] + i);
            for (int r = 0; r < 2; ++r) c[2 * j + r] = fma8(x[r], y, c[2 * j + r]);
        }
    }
    if (i < K) {  // the zeros past K add nothing to their lanes
        const f8 x[2] = {load8_padded(a[0], i, K), load8_padded(a[1], i, K)};
        for (int j = 0; j < 4; ++j) {
            const f8 y = load8_padded(b[j], i, K);
            for (int r = 0; r < 2; ++r) c[2 * j + r] = fma8(x[r], y, c[2 * j + r]);
        }
    }
    const f8 sums = sums_of<false>(c);
    std::memcpy(out, &sums, sizeof sums);
}

constexpr int kColumns = 4;  // of an eight_lanes tile
// Rows per work unit: each column is loaded (and rounded for F16) once per unit, and the unit's
// rows stay in L2 for all of them.
constexpr int64_t kUnitRows = 256;

// Short rows (a head's K in a cache cell: 128 bytes, a cell's heads apart) are each too short for
// the hardware's prefetcher to follow: without a prefetch every tile waited for memory, and the
// scores of a 4,096-cell cache streamed at 2.6 GB/s. kAheadRows rows ahead, into L1 (they are
// read within a microsecond): 13–19 GB/s (attn_products/tg_d4096_kq; 8, 16 or 32 rows ahead and
// L1, L2 or non-temporal within the noise of each other). Long rows (V transposed) the hardware
// follows.
constexpr int64_t kAheadRows = 16;
constexpr size_t kShortRowBytes = 512;  // a head of up to 256 F16 or 128 F32 elements

size_t column_floats(int64_t k) {
    return size_t(k + 15) / 16 * 16;  // each column on its own cache line
}

// dst rows [mb, me) of one job, element type E. Rows past the job's last are computed again as
// its last, and not kept.
template <typename E>
void job_rows(const Job &job, SumOrder order, int64_t K, int64_t mb, int64_t me, float *work) {
    const bool lanes = order == SumOrder::eight_lanes;
    const int64_t step = lanes ? kColumns : 1;
    const int rows_per_tile = lanes ? 2 : 8;
    const size_t row_bytes = size_t(K) * sizeof(E);
    const bool short_rows = row_bytes <= kShortRowBytes;
    for (int64_t c0 = 0; c0 < job.n; c0 += step) {
        const int nc = int(std::min<int64_t>(step, job.n - c0));
        const float *b[kColumns];
        float *d[kColumns];
        for (int j = 0; j < nc; ++j) {
            float *buf = work + j * column_floats(K);
            const float *row = load_row(DType::F32, job.cols.b_row(c0 + j), job.cols.b_nb0, K, buf);
            round_activations(job.a_type, row, buf, K);
            b[j] = buf;
            d[j] = job.cols.dst_row(c0 + j);
        }
        for (int j = nc; j < kColumns; ++j) b[j] = b[0];
        for (int64_t m = mb; m < me; m += rows_per_tile) {
            const int nr = int(std::min<int64_t>(rows_per_tile, me - m));
            if (short_rows) {
                const int64_t ahead = m + kAheadRows;
                for (int64_t row = ahead; row < std::min(ahead + rows_per_tile, job.m); ++row) {
                    const std::byte *p = job.a + size_t(row) * job.a_nb1;
                    for (size_t at = 0; at < row_bytes; at += 64) __builtin_prefetch(p + at, 0, 3);
                }
            }
            const E *a[8];
            for (int r = 0; r < rows_per_tile; ++r) {
                const int64_t row = m + std::min(r, nr - 1);
                a[r] = reinterpret_cast<const E *>(job.a + size_t(row) * job.a_nb1);
            }
            // Stores one by one: a std::copy of so few became `rep movs`, a fifth of the time.
            float out[8];
            if (lanes) {
                eight_lanes(a, b, K, out);
                for (int j = 0; j < nc; ++j) {
                    d[j][m] = out[2 * j];
                    if (nr > 1) d[j][m + 1] = out[2 * j + 1];
                }
            } else {
                four_chains(a, b[0], K, out);
#pragma GCC unroll 8
                for (int r = 0; r < 8; ++r) {
                    if (r < nr) d[0][m + r] = out[r];
                }
            }
        }
    }
}

}  // namespace

bool sums_in_order(const Job &job) {
    return (job.a_type == DType::F32 || job.a_type == DType::F16) && !job.a_grouped &&
           job.a_nb0 == traits(job.a_type).type_size;
}

size_t ordered_work_size(int64_t k) {
    return kColumns * column_floats(k) * sizeof(float);
}

void run_ordered(const ComputeParams &params, const Problem &problem, SumOrder order,
                 std::byte *work) {
    if (problem.n_jobs <= 0) return;
    // Work units: kUnitRows rows of one job (every job has job 0's row count).
    const int64_t units_per_job = (problem.job_at(problem.ctx, 0).m + kUnitRows - 1) / kUnitRows;
    const Range range = split_range(problem.n_jobs * units_per_job, params.ith, params.nth);
    auto *floats = reinterpret_cast<float *>(work);
    for (int64_t u = range.begin; u < range.end;) {
        const int64_t job_index = u / units_per_job;
        const int64_t first = u - job_index * units_per_job;
        const int64_t last = std::min(units_per_job, first + (range.end - u));
        u += last - first;
        const Job job = problem.job_at(problem.ctx, job_index);
        const int64_t mb = first * kUnitRows, me = std::min(job.m, last * kUnitRows);
        if (job.a_type == DType::F16) {
            job_rows<uint16_t>(job, order, problem.k, mb, me, floats);
        } else {
            job_rows<float>(job, order, problem.k, mb, me, floats);
        }
    }
}

}  // namespace loom::cpu::inline LOOM_ISA::gemm
