// Unary elementwise ops: scale, clamp, fill, sqrt, exp, tanh and the activations.
#include <algorithm>
#include <cmath>

#include "core/cpu/kernels.h"
#include "core/cpu/unary_math.h"

namespace loom::cpu::inline LOOM_ISA {
namespace {

// Each functor maps one float; `setup` reads the node's parameters once.
struct Scale {
    ScaleOpParams p;
    explicit Scale(const Tensor *t) : p(get_op_params<ScaleOpParams>(t)) {}
    float operator()(float x) const { return x * p.s + p.bias; }
};
struct Clamp {
    ClampOpParams p;
    explicit Clamp(const Tensor *t) : p(get_op_params<ClampOpParams>(t)) {}
    float operator()(float x) const { return std::clamp(x, p.min, p.max); }
};
struct Fill {
    float value;
    explicit Fill(const Tensor *t) : value(get_op_params<FillOpParams>(t).value) {}
    float operator()(float) const { return value; }
};

template <float (*F)(float)>
struct Plain {
    explicit Plain(const Tensor *) {}
    float operator()(float x) const { return F(x); }
};

float sqrt_f32(float x) {
    return std::sqrt(x);
}
float exp_f32(float x) {
    return std::exp(x);
}
float tanh_f32(float x) {
    return std::tanh(x);
}
float relu_f32(float x) {
    return x > 0.0f ? x : 0.0f;
}

size_t unary_work(const Tensor *dst) {
    return 2 * size_t(dst->ne[0]) * sizeof(float);
}

template <typename F>
void compute_unary(const ComputeParams &p, Tensor *dst) {
    const Tensor *a = dst->src[0];
    const F f(dst);
    const int64_t n = dst->ne[0];
    auto *in_buf = reinterpret_cast<float *>(p.work);
    float *out_buf = in_buf + n;
    const bool fast = a->type == DType::F32 && dst->type == DType::F32 && a->rows_contiguous();
    const Range rows = split_range(dst->nrows(), p.ith, p.nth);
    for (int64_t r = rows.begin; r < rows.end; ++r) {
        const RowIndex i = unravel_row(r, dst);
        const void *in_row = a->row_ptr(i.i1, i.i2, i.i3);
        void *out_row = dst->row_ptr(i.i1, i.i2, i.i3);
        if (fast) {
            const auto *x = static_cast<const float *>(in_row);
            auto *y = static_cast<float *>(out_row);
            for (int64_t j = 0; j < n; ++j) y[j] = f(x[j]);
            continue;
        }
        const float *x = load_row(a->type, in_row, a->nb[0], n, in_buf);
        for (int64_t j = 0; j < n; ++j) out_buf[j] = f(x[j]);
        store_row(dst->type, out_buf, out_row, dst->nb[0], n);
    }
}

template <typename F>
constexpr Kernel unary_kernel() {
    return {.compute = compute_unary<F>, .work_size = unary_work};
}

}  // namespace

void register_unary_kernels(KernelTable &table) {
    table[size_t(Op::scale)] = unary_kernel<Scale>();
    table[size_t(Op::clamp)] = unary_kernel<Clamp>();
    table[size_t(Op::fill)] = unary_kernel<Fill>();
    table[size_t(Op::sqrt)] = unary_kernel<Plain<sqrt_f32>>();
    table[size_t(Op::exp)] = unary_kernel<Plain<exp_f32>>();
    table[size_t(Op::tanh)] = unary_kernel<Plain<tanh_f32>>();
    table[size_t(Op::gelu)] = unary_kernel<Plain<gelu_f32>>();
    table[size_t(Op::silu)] = unary_kernel<Plain<silu_f32>>();
    table[size_t(Op::sigmoid)] = unary_kernel<Plain<sigmoid_f32>>();
    table[size_t(Op::softplus)] = unary_kernel<Plain<softplus_f32>>();
    table[size_t(Op::relu)] = unary_kernel<Plain<relu_f32>>();
}

}  // namespace loom::cpu::inline LOOM_ISA
