// Row reductions: sum_rows, mean, argmax.
#include "core/cpu/kernels.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

// Sums in double, left to right, so the result does not depend on thread count or row length
// splits (ggml accumulates these in double too).
double row_sum(const Tensor *a, const RowIndex &i) {
    const auto *row = static_cast<const std::byte *>(a->row_ptr(i.i1, i.i2, i.i3));
    double sum = 0.0;
    for (int64_t j = 0; j < a->ne[0]; ++j)
        sum += *reinterpret_cast<const float *>(row + j * a->nb[0]);
    return sum;
}

template <bool kMean>
void compute_sum_rows(const ComputeParams &p, Tensor *dst) {
    const Tensor *a = dst->src[0];
    const Range rows = split_range(a->nrows(), p.ith, p.nth);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex i = unravel_row(r, a);
        const double sum = row_sum(a, i);
        *static_cast<float *>(dst->row_ptr(i.i1, i.i2, i.i3)) =
            float(kMean ? sum / double(a->ne[0]) : sum);
    }
}

void compute_argmax(const ComputeParams &p, Tensor *dst) {
    const Tensor *a = dst->src[0];
    const Range rows = split_range(a->ne[1], p.ith, p.nth);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const auto *row = static_cast<const std::byte *>(a->row_ptr(r));
        int32_t best = 0;
        float best_value = *reinterpret_cast<const float *>(row);
        for (int64_t j = 1; j < a->ne[0]; ++j) {
            const float v = *reinterpret_cast<const float *>(row + j * a->nb[0]);
            if (v > best_value) {  // strict: the first maximum wins
                best_value = v;
                best = int32_t(j);
            }
        }
        static_cast<int32_t *>(dst->data)[r] = best;
    }
}

}  // namespace

void register_reduce_kernels(KernelTable &table) {
    table[size_t(Op::sum_rows)] = {.compute = compute_sum_rows<false>};
    table[size_t(Op::mean)] = {.compute = compute_sum_rows<true>};
    table[size_t(Op::argmax)] = {.compute = compute_argmax};
}

}  // namespace loom::cpu::inline LOOM_ISA
