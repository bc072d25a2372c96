// Binary elementwise ops (b broadcast over a) and the gated units swiglu / geglu / swiglu_oai.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "core/cpu/kernels.h"
#include "core/cpu/unary_math.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

struct Add {
    static float apply(float x, float y) { return x + y; }
    static simd::vf apply(simd::vf x, simd::vf y) { return x + y; }
};
struct Sub {
    static float apply(float x, float y) { return x - y; }
    static simd::vf apply(simd::vf x, simd::vf y) { return x - y; }
};
struct Mul {
    static float apply(float x, float y) { return x * y; }
    static simd::vf apply(simd::vf x, simd::vf y) { return x * y; }
};
struct Div {
    static float apply(float x, float y) { return x / y; }
    static simd::vf apply(simd::vf x, simd::vf y) { return x / y; }
};
struct SwiGlu {
    static float apply(float x, float y) { return silu_f32(x) * y; }
    static simd::vf apply(simd::vf x, simd::vf y) { return silu(x) * y; }
};
struct GeGlu {
    static float apply(float x, float y) { return gelu_f32(x) * y; }
};
struct SwiGluOai {
    SwiGluOaiOpParams p;
    explicit SwiGluOai(const Tensor *t) : p(get_op_params<SwiGluOaiOpParams>(t)) {}
    float apply(float x, float y) const {
        x = std::min(x, p.limit);
        y = std::clamp(y, -p.limit, p.limit);
        return x / (1.0f + std::exp(p.alpha * -x)) * (y + 1.0f);
    }
};

// The functor of a node: built from its parameters where it has some.
template <typename F>
F functor_of(const Tensor *dst) {
    if constexpr (std::is_constructible_v<F, const Tensor *>) {
        return F(dst);
    } else {
        return F{};
    }
}

// Ops with a vector form; a slice starts at a multiple of kSliceElements, so which elements take
// the vector body and which the scalar tail depends only on the row length.
template <typename F>
constexpr bool kHasVector = requires(simd::vf v) {
    F::apply(v, v);
};

// Elements per unit of work in the F32 fast path: 4 KiB of each operand.
constexpr int64_t kSliceElements = 1024;

// Scratch: a's row, b's row (expanded to a's length) and the output row, as floats.
size_t binary_work(const Tensor *dst) {
    return 3 * size_t(dst->ne[0]) * sizeof(float);
}

template <typename F>
void compute_binary(const ComputeParams &p, Tensor *dst) {
    const Tensor *a = dst->src[0];
    const Tensor *b = dst->src[1];
    const F f = functor_of<F>(dst);
    const int64_t n = dst->ne[0];
    const bool fast = a->type == DType::F32 && b->type == DType::F32 && dst->type == DType::F32 &&
                      a->rows_contiguous() && b->rows_contiguous() && b->ne[0] == n;
    auto *a_buf = reinterpret_cast<float *>(p.work);
    float *b_buf = a_buf + n;
    float *out_buf = b_buf + n;
    if (fast) {
        // Slices of rows, so that the one long row of a generated token (an FFN activation, a
        // residual) is shared by the threads too.
        const int64_t slices = (n + kSliceElements - 1) / kSliceElements;
        const Range mine = split_range(dst->nrows() * slices, p.ith, p.nth);
        for (int64_t u = mine.begin; u < mine.end; ++u) {
            const RowIndex i = unravel_row(u / slices, dst);
            const auto *x = static_cast<const float *>(a->row_ptr(i.i1, i.i2, i.i3));
            const auto *y = static_cast<const float *>(
                b->row_ptr(i.i1 % b->ne[1], i.i2 % b->ne[2], i.i3 % b->ne[3]));
            auto *z = static_cast<float *>(dst->row_ptr(i.i1, i.i2, i.i3));
            const int64_t j1 = std::min(n, (u % slices + 1) * kSliceElements);
            int64_t j = u % slices * kSliceElements;
            if constexpr (kHasVector<F>) {
                for (; j + simd::VL <= j1; j += simd::VL) {
                    simd::store(z + j, f.apply(simd::load(x + j), simd::load(y + j)));
                }
            }
            for (; j < j1; ++j) z[j] = f.apply(x[j], y[j]);
        }
        return;
    }
    const Range rows = split_range(dst->nrows(), p.ith, p.nth);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex i = unravel_row(r, dst);
        const void *a_row = a->row_ptr(i.i1, i.i2, i.i3);
        const void *b_row = b->row_ptr(i.i1 % b->ne[1], i.i2 % b->ne[2], i.i3 % b->ne[3]);
        void *out_row = dst->row_ptr(i.i1, i.i2, i.i3);
        const float *x = load_row(a->type, a_row, a->nb[0], n, a_buf);
        const float *y = load_row(b->type, b_row, b->nb[0], b->ne[0], b_buf);
        for (int64_t j = 0; j < n; ++j) out_buf[j] = f.apply(x[j], y[j % b->ne[0]]);
        store_row(dst->type, out_buf, out_row, dst->nb[0], n);
    }
}

}  // namespace

void register_elementwise_kernels(KernelTable &table) {
    table[size_t(Op::add)] = {.compute = compute_binary<Add>, .work_size = binary_work};
    table[size_t(Op::sub)] = {.compute = compute_binary<Sub>, .work_size = binary_work};
    table[size_t(Op::mul)] = {.compute = compute_binary<Mul>, .work_size = binary_work};
    table[size_t(Op::div)] = {.compute = compute_binary<Div>, .work_size = binary_work};
    table[size_t(Op::swiglu)] = {.compute = compute_binary<SwiGlu>, .work_size = binary_work};
    table[size_t(Op::geglu)] = {.compute = compute_binary<GeGlu>, .work_size = binary_work};
    table[size_t(Op::swiglu_oai)] = {.compute = compute_binary<SwiGluOai>,
                                     .work_size = binary_work};
}

}  // namespace loom::cpu::inline LOOM_ISA
