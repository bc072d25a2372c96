#pragma once
// The matrix-product engine behind mul_mat and mul_mat_id (core/cpu/gemm.cpp).
//
// A product is a list of jobs that share K. Each job multiplies one weight matrix `a`
// (Job::m rows of K elements, the same M for every job of the float path: a float dtype with any
// strides, or a block format with contiguous rows) by N columns of F32 activations (rows of b, K
// elements each) and writes N rows of M floats. Columns are addressed through Columns, so a job can
// gather arbitrary rows of b and scatter to arbitrary rows of dst (mul_mat_id's expert groups) as
// well as plain strided ones (mul_mat's batches).
//
// Float weights: each output element is the sum of its K terms in k order, KC at a time, the
// block sums added in turn, whatever N is, so a column's result is the same bit for bit whether
// it is decoded alone (N = 1) or in a batch, at any position in it. N > 4 runs a packed,
// cache-blocked GEMM with a register-blocked micro-kernel; N <= 4 (generation) reads the weight
// rows in place, VL at a time transposed in registers, with the same arithmetic. BF16 weights
// on a CPU with AVX512-BF16 (bf16_sums_pairs(), core/cpu/kernels.h) take their terms in pairs
// instead: within each KC block, for each pair (k, k + 1), term k + 1 then term k, each by one
// fused multiply-add (VDPBF16PS, whose denormal inputs and results are zero); same promises.
// Block-format weights (traits(type).vec_dot set; rows contiguous) compute as llama.cpp does, for
// every N: each column is quantized to traits(type).vec_dot_type, then every output element is
// traits(type).vec_dot of a weight row and a quantized column (the legacy and table-indexed
// formats dot a weight row with up to 4 columns at once, bit for bit the same), so it does not
// depend on N.
//
// Determinism: threads split the work only along M, in whole MR-row panels (and across jobs);
// the order in which an output element's K terms are summed depends on K and the block sizes,
// never on N, the column's place among them, the thread count or which thread computes it.
#include <array>
#include <cstddef>
#include <cstdint>

#include "core/cpu/kernels.h"
#include "core/isa.h"

namespace loom::cpu::inline LOOM_ISA::gemm {

// How a float weight dtype is read (block formats go through their traits' vec_dot instead).
struct WeightOps {
    // Packs a GEMM panel: `rows` (<= the panel height) rows of kc contiguous elements, row i at
    // a + i * nb1, as kc steps of panel-height floats, zero past `rows`. Rows with strided
    // elements are converted with traits(type).to_float one at a time instead.
    void (*pack)(const std::byte *a, size_t nb1, int64_t rows, int64_t kc, float *out) = nullptr;
    // narrow[n - 1] computes, for n <= 4 columns x[c] (K floats each), `rows` <= VL outputs of
    // the weight rows at a, a + nb1, ... into d[c][0, rows), in the packed GEMM's order.
    std::array<void (*)(const std::byte *a, size_t nb1, int64_t rows, int64_t K,
                        const float *const *x, float *const *d),
               4>
        narrow{};
    // The same for weights grouped 16 rows at a time (Job::a_grouped): pack_grouped packs a
    // panel of `rows` rows (a multiple of 16) from elements [k0, k0 + kc) of the groups at
    // group, group + group_bytes, ...; narrow_grouped[g - 1][n - 1] computes the 16 g rows of
    // the g groups from `group` into d[c][0, 16 g). Same arithmetic as pack and narrow.
    void (*pack_grouped)(const std::byte *group, size_t group_bytes, int64_t rows, int64_t k0,
                         int64_t kc, float *out) = nullptr;
    std::array<std::array<void (*)(const std::byte *group, size_t group_bytes, int64_t K,
                                   const float *const *x, float *const *d),
                          4>,
               2>
        narrow_grouped{};
};
// Null pack: the dtype cannot be a matrix-product weight.
const WeightOps &weight_ops(DType type);

// Column j of a job reads b row `b + i1 * b_s1 + i2 * b_s2` and writes dst row
// `dst + i1 * dst_s1 + i2 * dst_s2`, where (i1, i2) = (j, 0), or, with a list,
// (list[j] % n1, list[j] / n1).
struct Columns {
    const std::byte *b = nullptr;
    size_t b_nb0 = sizeof(float);  // element stride of b rows
    size_t b_s1 = 0, b_s2 = 0;
    std::byte *dst = nullptr;  // dst rows are contiguous F32
    size_t dst_s1 = 0, dst_s2 = 0;
    const int32_t *list = nullptr;
    int64_t n1 = 1;

    const std::byte *b_row(int64_t j) const {
        if (list == nullptr) return b + size_t(j) * b_s1;
        return b + size_t(list[j] % n1) * b_s1 + size_t(list[j] / n1) * b_s2;
    }
    float *dst_row(int64_t j) const {
        if (list == nullptr) return reinterpret_cast<float *>(dst + size_t(j) * dst_s1);
        const size_t off = size_t(list[j] % n1) * dst_s1 + size_t(list[j] / n1) * dst_s2;
        return reinterpret_cast<float *>(dst + off);
    }
};

struct Job {
    const std::byte *a = nullptr;  // element (k, m) at a + k * a_nb0 + m * a_nb1
    size_t a_nb0 = 0, a_nb1 = 0;
    DType a_type = DType::F32;
    // F16 / BF16 rows interleaved 16 at a time (core/cpu/repack.h): element (k, m) at
    // a + (m / 16) * 16 * a_nb1 + (16 * k + m % 16) * a_nb0. M is then a multiple of 16.
    bool a_grouped = false;
    int64_t m = 0;  // rows of a
    Columns cols;
    int64_t n = 0;  // columns
};

struct Problem {
    int64_t k = 0;  // shared by every job
    int64_t n_jobs = 0;
    // Every job multiplies job 0's columns (several weights against the same activations): the
    // integer path (qgemm.h) then quantizes them once.
    bool shared_columns = false;
    Job (*job_at)(const void *ctx, int64_t i) = nullptr;
    const void *ctx = nullptr;
};

// How a product quantizes its F32 columns to a block type (the weights' vec_dot_type): the
// type's from_float_in_ops.
using Quantizer = void (*)(const float *x, void *y, int64_t n);

// Scratch bytes one thread needs for jobs of up to max_n columns with weights of a_type (64-byte
// multiple).
size_t work_size(DType a_type, int64_t k, int64_t max_n);

// Runs this thread's share of the problem. `work` is 64-byte aligned, work_size(a_type, k, max_n)
// bytes.
void run(const ComputeParams &params, const Problem &problem, std::byte *work);

// Products whose elements sum in another order than k_blocks (SumOrder, loom/core.h;
// gemm_ordered.cpp): F32 and F16 weights whose elements are contiguous and not grouped, where
// sums_in_order(job). Every job of the problem has job 0's row count; scratch ordered_work_size(k).
bool sums_in_order(const Job &job);
size_t ordered_work_size(int64_t k);
void run_ordered(const ComputeParams &params, const Problem &problem, SumOrder order,
                 std::byte *work);

// llama.cpp multiplies F16 and BF16 weights with activations rounded to the weights' type (its
// vec_dot_type), so Loom rounds them too: its logits then agree to ~1e-14 instead of ~1e-7.
// Writes src's n activations to dst (which may be src), rounded through the weights' type for
// F16 and BF16 weights.
void round_activations(DType weight_type, const float *src, float *dst, int64_t n);

}  // namespace loom::cpu::inline LOOM_ISA::gemm
