// get_rows (embedding lookup) and set_rows (the KV-cache write).
#include <cstring>

#include "core/cpu/kernels.h"
#include "loom/fp16.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

int64_t read_index(const Tensor *idx, int64_t i0, int64_t i1, int64_t i2) {
    const void *p = idx->element_ptr(i0, i1, i2);
    if (idx->type == DType::I64) return *static_cast<const int64_t *>(p);
    return *static_cast<const int32_t *>(p);
}

// Indices out of range were rejected where they came from (tokenizer, KV cache); a kernel must
// not throw, so such a row is written as zeros rather than read out of bounds.
void compute_get_rows(const ComputeParams &p, Tensor *dst) {
    const Tensor *src = dst->src[0];
    const Tensor *idx = dst->src[1];
    const Range rows = split_range(dst->nrows(), p.ith, p.nth);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex i = unravel_row(r, dst);
        const int64_t row = read_index(idx, i.i1, i.i2, i.i3);
        void *out = dst->row_ptr(i.i1, i.i2, i.i3);
        if (row < 0 || row >= src->ne[1]) {
            std::memset(out, 0, size_t(dst->ne[0]) * traits(dst->type).type_size);
            continue;
        }
        const void *in = src->row_ptr(row, i.i2, i.i3);
        if (src->type == dst->type && src->rows_contiguous()) {
            std::memcpy(out, in, row_size(src->type, src->ne[0]));
        } else {
            const float *f =
                load_row(src->type, in, src->nb[0], src->ne[0], static_cast<float *>(out));
            if (f != out) std::memcpy(out, f, size_t(src->ne[0]) * sizeof(float));
        }
    }
}

bool supports_get_rows(const Tensor *dst) {
    const Tensor *src = dst->src[0];
    // Integer rows would need a strided byte copy (nothing produces them); block formats
    // decode whole contiguous rows only.
    const bool whole_rows = src->type == DType::I32 || traits(src->type).is_quantized;
    return !whole_rows || src->rows_contiguous();
}

// Rows of one element (the transposed V cache, where each value of a token goes to its own row):
// converted directly, since the per-row path's calls cost more than the writes themselves
// (0.3 ms per generated token of a 1B model).
bool writes_single_elements(const Tensor *dst, const Tensor *src, const Tensor *idx) {
    const bool store_type =
        dst->type == DType::F16 || dst->type == DType::F32 || dst->type == DType::BF16;
    return dst->ne[0] == 1 && store_type && src->type == DType::F32 && src->is_contiguous() &&
           src->nrows() == src->ne[1] && idx->type == DType::I64 && idx->is_contiguous() &&
           idx->ne[0] == src->ne[1];
}

void set_single_elements(const ComputeParams &p, Tensor *dst, const Tensor *src,
                         const Tensor *idx) {
    const auto *x = static_cast<const float *>(src->data);
    const auto *rows = static_cast<const int64_t *>(idx->data);
    auto *out = static_cast<std::byte *>(dst->data);
    const Range mine = split_range(src->ne[1], p.ith, p.nth);
    for (int64_t r = mine.begin; r < mine.end; ++r) {
        if (rows[r] < 0 || rows[r] >= dst->ne[1]) continue;
        std::byte *cell = out + size_t(rows[r]) * dst->nb[1];
        if (dst->type == DType::F16) {
            const uint16_t h = f32_to_fp16(x[r]);
            std::memcpy(cell, &h, sizeof h);
        } else if (dst->type == DType::BF16) {
            const uint16_t h = f32_to_bf16(x[r]);
            std::memcpy(cell, &h, sizeof h);
        } else {
            std::memcpy(cell, &x[r], sizeof(float));
        }
    }
}

void compute_set_rows(const ComputeParams &p, Tensor *dst) {
    const Tensor *src = dst->src[1];
    const Tensor *idx = dst->src[2];
    if (writes_single_elements(dst, src, idx)) return set_single_elements(p, dst, src, idx);
    auto *buf = reinterpret_cast<float *>(p.work);
    const Range rows = split_range(src->nrows(), p.ith, p.nth);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex i = unravel_row(r, src);
        const int64_t row = read_index(idx, i.i1, i.i2 % idx->ne[1], i.i3 % idx->ne[2]);
        if (row < 0 || row >= dst->ne[1]) continue;
        const float *in =
            load_row(DType::F32, src->row_ptr(i.i1, i.i2, i.i3), src->nb[0], src->ne[0], buf);
        store_row(dst->type, in, dst->row_ptr(row, i.i2, i.i3), dst->nb[0], dst->ne[0]);
    }
}

size_t set_rows_work(const Tensor *dst) {
    return size_t(dst->ne[0]) * sizeof(float);
}

}  // namespace

void register_rows_kernels(KernelTable &table) {
    table[size_t(Op::get_rows)] = {.compute = compute_get_rows, .supports = supports_get_rows};
    table[size_t(Op::set_rows)] = {.compute = compute_set_rows, .work_size = set_rows_work};
}

}  // namespace loom::cpu::inline LOOM_ISA
