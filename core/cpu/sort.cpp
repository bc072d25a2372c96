// Row sorting: argsort (every index, ascending or descending) and argsort_top_k (the indices
// of the k largest, largest first).
//
// Each element becomes one 64-bit key whose unsigned order is the wanted order: the value's bits
// mapped to an order-preserving unsigned form (complemented for descending) above the element's
// index. Sorting the keys is then a plain integer sort, and ties fall to the lower index, which
// makes the sort stable without std::stable_sort (which would allocate). -0 is keyed as +0 so the
// two tie, and NaN is keyed last in both directions, so it is never taken as the largest value.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "core/cpu/kernels.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

// Branch-free: rows of random values would mispredict a branch on the sign half the time.
uint64_t sort_key(float value, int64_t index, uint32_t direction_mask) {
    const uint32_t bits = std::bit_cast<uint32_t>(value == 0.0f ? 0.0f : value);
    // negatives reversed below the positives: -inf -> 0x007fffff ... +inf -> 0xff800000; then
    // complemented for descending (direction_mask all ones): +inf -> 0x007fffff ...
    const uint32_t sign_mask = uint32_t(int32_t(bits) >> 31);
    const uint32_t order = (bits ^ (sign_mask | 0x80000000u)) ^ direction_mask;
    // NaN: above every number's key
    return uint64_t(std::isnan(value) ? 0xffffffffu : order) << 32 | uint64_t(index);
}

// The keys of row (i1, i2, i3) of src into keys[0, ne0); elements may be strided.
void make_keys(const Tensor *src, const RowIndex &at, bool descending, uint64_t *keys) {
    const uint32_t direction_mask = descending ? 0xffffffffu : 0u;
    const auto *row = static_cast<const std::byte *>(src->row_ptr(at.i1, at.i2, at.i3));
    for (int64_t i = 0; i < src->ne[0]; ++i) {
        float value;
        std::memcpy(&value, row + size_t(i) * src->nb[0], sizeof value);
        keys[i] = sort_key(value, i, direction_mask);
    }
}

void compute_argsort(const ComputeParams &params, Tensor *dst) {
    const Tensor *src = dst->src[0];
    const bool descending = get_op_params<SortOpParams>(dst).order == SortOrder::descending;
    const int64_t n = src->ne[0];
    auto *keys = reinterpret_cast<uint64_t *>(params.work);
    const Range rows = split_range(src->nrows(), params.ith, params.nth);
    for (int64_t row = rows.begin; row < rows.end; ++row) {
        const RowIndex at = unravel_row(row, src);
        make_keys(src, at, descending, keys);
        std::sort(keys, keys + n);
        auto *indices = static_cast<int32_t *>(dst->row_ptr(at.i1, at.i2, at.i3));
        for (int64_t i = 0; i < n; ++i) indices[i] = int32_t(keys[i] & 0xffffffffu);
    }
}

void compute_argsort_top_k(const ComputeParams &params, Tensor *dst) {
    const Tensor *src = dst->src[0];
    const int64_t n = src->ne[0];
    const int64_t k = dst->ne[0];
    auto *keys = reinterpret_cast<uint64_t *>(params.work);
    const Range rows = split_range(src->nrows(), params.ith, params.nth);
    for (int64_t row = rows.begin; row < rows.end; ++row) {
        const RowIndex at = unravel_row(row, src);
        make_keys(src, at, /*descending=*/true, keys);
        // a heap of k: O(n log k), and the first k come out ordered
        std::partial_sort(keys, keys + k, keys + n);
        auto *indices = static_cast<int32_t *>(dst->row_ptr(at.i1, at.i2, at.i3));
        for (int64_t i = 0; i < k; ++i) indices[i] = int32_t(keys[i] & 0xffffffffu);
    }
}

bool supports_sort(const Tensor *dst) {
    return dst->src[0]->type == DType::F32 && dst->type == DType::I32 && dst->rows_contiguous();
}

// One key per element of a row.
size_t sort_work_size(const Tensor *dst) {
    return size_t(dst->src[0]->ne[0]) * sizeof(uint64_t);
}

}  // namespace

void register_sort_kernels(KernelTable &table) {
    table[size_t(Op::argsort)] = {
        .compute = compute_argsort, .supports = supports_sort, .work_size = sort_work_size};
    table[size_t(Op::argsort_top_k)] = {
        .compute = compute_argsort_top_k, .supports = supports_sort, .work_size = sort_work_size};
}

}  // namespace loom::cpu::inline LOOM_ISA
