// Data movement: cont, cpy (with dtype conversion), repeat, concat, pad. View ops have no
// kernel: their data pointer is set when the view is made.
#include "core/cpu/kernels.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

// Per-thread scratch for one row converted to floats.
size_t row_floats_work(const Tensor *dst) {
    int64_t n = dst->ne[0];
    for (const Tensor *s : dst->src) {
        if (s != nullptr) n = std::max(n, s->ne[0]);
    }
    return size_t(n) * sizeof(float);
}

// Copies src into dst element by element in row-major order of their own shapes (the shapes
// may differ; the element counts match). Rows of dst are split across threads.
void copy_elements(const ComputeParams &p, const Tensor *src, Tensor *dst) {
    auto *buf = reinterpret_cast<float *>(p.work);
    const DTypeTraits &src_t = traits(src->type);
    const Range rows = split_range(dst->nrows(), p.ith, p.nth);
    if (src->ne[0] == dst->ne[0] && src->ne[1] == dst->ne[1] && src->ne[2] == dst->ne[2]) {
        // Same row structure: convert row by row.
        for (int64_t r = rows.begin; r < rows.end; ++r) {
            const RowIndex i = unravel_row(r, dst);
            const float *row =
                load_row(src->type, src->row_ptr(i.i1, i.i2, i.i3), src->nb[0], src->ne[0], buf);
            store_row(dst->type, row, dst->row_ptr(i.i1, i.i2, i.i3), dst->nb[0], dst->ne[0]);
        }
        return;
    }
    // Different shapes: walk the flat element index.
    const int64_t n0 = dst->ne[0];
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex i = unravel_row(r, dst);
        for (int64_t j = 0; j < n0; ++j) {
            int64_t flat = r * n0 + j;
            int64_t s[4];
            for (int d = 0; d < kMaxDims; ++d) {
                s[d] = flat % src->ne[d];
                flat /= src->ne[d];
            }
            src_t.to_float(src->element_ptr(s[0], s[1], s[2], s[3]), buf + j, 1);
        }
        store_row(dst->type, buf, dst->row_ptr(i.i1, i.i2, i.i3), dst->nb[0], n0);
    }
}

bool supports_copy(const Tensor *dst) {
    const Tensor *src = dst->src[0];
    if (traits(src->type).is_quantized || traits(dst->type).is_quantized) {
        // block formats convert whole rows only
        return src->ne[0] == dst->ne[0] && src->ne[1] == dst->ne[1] && src->ne[2] == dst->ne[2] &&
               src->rows_contiguous() && dst->rows_contiguous();
    }
    return src->type == dst->type || (traits(src->type).to_float && traits(dst->type).from_float);
}

// Integer tensors copy as raw bytes element by element (no float round trip).
void copy_raw(const ComputeParams &p, const Tensor *src, Tensor *dst) {
    const size_t size = traits(dst->type).type_size;
    const Range rows = split_range(dst->nrows(), p.ith, p.nth);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex i = unravel_row(r, dst);
        for (int64_t j = 0; j < dst->ne[0]; ++j) {
            int64_t flat = r * dst->ne[0] + j;
            int64_t s[4];
            for (int d = 0; d < kMaxDims; ++d) {
                s[d] = flat % src->ne[d];
                flat /= src->ne[d];
            }
            std::memcpy(dst->element_ptr(j, i.i1, i.i2, i.i3),
                        src->element_ptr(s[0], s[1], s[2], s[3]), size);
        }
    }
}

// Same type and rows: rows are copied as bytes (block formats are not re-quantized).
bool copies_rows_verbatim(const Tensor *src, const Tensor *dst) {
    return src->type == dst->type && src->ne[0] == dst->ne[0] && src->ne[1] == dst->ne[1] &&
           src->ne[2] == dst->ne[2] && src->rows_contiguous() && dst->rows_contiguous();
}

void copy_rows(const ComputeParams &p, const Tensor *src, Tensor *dst) {
    const size_t bytes = row_size(dst->type, dst->ne[0]);
    const Range rows = split_range(dst->nrows(), p.ith, p.nth);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex i = unravel_row(r, dst);
        std::memcpy(dst->row_ptr(i.i1, i.i2, i.i3), src->row_ptr(i.i1, i.i2, i.i3), bytes);
    }
}

void compute_copy(const ComputeParams &p, Tensor *dst) {
    const Tensor *src = dst->src[0];
    if (copies_rows_verbatim(src, dst)) {
        copy_rows(p, src, dst);
    } else if (traits(src->type).to_float == nullptr) {
        copy_raw(p, src, dst);
    } else {
        copy_elements(p, src, dst);
    }
}

void compute_repeat(const ComputeParams &p, Tensor *dst) {
    const Tensor *src = dst->src[0];
    auto *buf = reinterpret_cast<float *>(p.work);
    const Range rows = split_range(dst->nrows(), p.ith, p.nth);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex i = unravel_row(r, dst);
        const float *row = load_row(
            src->type, src->row_ptr(i.i1 % src->ne[1], i.i2 % src->ne[2], i.i3 % src->ne[3]),
            src->nb[0], src->ne[0], buf);
        float *out = buf + src->ne[0];
        for (int64_t j = 0; j < dst->ne[0]; ++j) out[j] = row[j % src->ne[0]];
        store_row(dst->type, out, dst->row_ptr(i.i1, i.i2, i.i3), dst->nb[0], dst->ne[0]);
    }
}

size_t repeat_work(const Tensor *dst) {
    return size_t(dst->src[0]->ne[0] + dst->ne[0]) * sizeof(float);
}

// Element-wise byte copies: concat and pad move values without converting them.
void compute_concat(const ComputeParams &p, Tensor *dst) {
    const Tensor *a = dst->src[0];
    const Tensor *b = dst->src[1];
    const int dim = get_op_params<ConcatOpParams>(dst).dim;
    const size_t size = traits(dst->type).type_size;
    const Range rows = split_range(dst->nrows(), p.ith, p.nth);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex i = unravel_row(r, dst);
        int64_t idx[4] = {0, i.i1, i.i2, i.i3};
        for (int64_t j = 0; j < dst->ne[0]; ++j) {
            idx[0] = j;
            const bool from_a = idx[dim] < a->ne[dim];
            int64_t s[4] = {idx[0], idx[1], idx[2], idx[3]};
            if (!from_a) s[dim] -= a->ne[dim];
            const Tensor *src = from_a ? a : b;
            std::memcpy(dst->element_ptr(j, i.i1, i.i2, i.i3),
                        src->element_ptr(s[0], s[1], s[2], s[3]), size);
        }
    }
}

void compute_pad(const ComputeParams &p, Tensor *dst) {
    const Tensor *src = dst->src[0];
    const Range rows = split_range(dst->nrows(), p.ith, p.nth);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex i = unravel_row(r, dst);
        auto *out = static_cast<float *>(dst->row_ptr(i.i1, i.i2, i.i3));
        const bool inside = i.i1 < src->ne[1] && i.i2 < src->ne[2] && i.i3 < src->ne[3];
        for (int64_t j = 0; j < dst->ne[0]; ++j) {
            out[j] = inside && j < src->ne[0]
                         ? *static_cast<const float *>(src->element_ptr(j, i.i1, i.i2, i.i3))
                         : 0.0f;
        }
    }
}

}  // namespace

void register_layout_kernels(KernelTable &table) {
    table[size_t(Op::cont)] = {
        .compute = compute_copy, .supports = supports_copy, .work_size = row_floats_work};
    table[size_t(Op::cpy)] = {
        .compute = compute_copy, .supports = supports_copy, .work_size = row_floats_work};
    table[size_t(Op::repeat)] = {.compute = compute_repeat, .work_size = repeat_work};
    table[size_t(Op::concat)] = {.compute = compute_concat};
    table[size_t(Op::pad)] = {.compute = compute_pad};
}

}  // namespace loom::cpu::inline LOOM_ISA
