// mul_mat and mul_mat_id with table-indexed 4-bit weights (MXFP4, IQ4_NL, IQ4_XS) on the CPU
// backend, at several shapes and thread counts, with the weights repacked (where a model's go)
// and in plain memory: close to a double-precision reference, the same bits for any thread count,
// and each column's result the same whether it is computed alone or in a batch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "core/cpu/repack.h"
#include "core/quant/legacy_formats.h"
#include "loom/backend.h"
#include "loom/core.h"
#include "loom/cpu.h"
#include "tests/quant/quant_test_util.h"

namespace loom {
namespace {

using quant_test::dequantize;
using quant_test::quantize;
using quant_test::random_row;
using quant_test::run_graph;

struct Shape {
    int64_t K, M, n_mat;
};

// Weights [K, M, n_mat] of `type` from N(0, 1) values, in a repack buffer or in plain memory.
struct Weights {
    Context ctx{{.mem_size = 1u << 16, .no_alloc = true}};
    Tensor *a = nullptr;
    std::unique_ptr<Buffer> buffer;
    std::vector<float> values;  // the weights as the kernels see them (dequantized)

    Weights(DType type, Shape s, bool repacked, uint32_t seed) {
        a = ctx.new_tensor(type, {s.K, s.M, s.n_mat});
        Tensor *const tensors[] = {a};
        buffer = place_tensors(repacked ? cpu_repack_buffer_type() : host_buffer_type(), tensors);
        const std::vector<std::byte> bytes = quantize(type, random_row(s.K * s.M * s.n_mat, seed));
        buffer->set_tensor(a, bytes.data(), 0, bytes.size());
        values = dequantize(type, bytes, s.K * s.M * s.n_mat);
    }
};

// A column as the kernels see it: quantized to the weights' activation type as llama.cpp's CPU
// backend quantizes it, then dequantized.
std::vector<float> seen_column(DType type, const float *x, int64_t K) {
    const DType act = traits(type).vec_dot_type;
    std::vector<std::byte> q(row_size(act, K));
    if (act == DType::Q8_0) {
        quant::quantize_activations_q8_0(x, q.data(), K);
    } else {
        traits(act).from_float(x, q.data(), K);
    }
    return dequantize(act, q, K);
}

// sum((got - ref)^2) / sum(ref^2) over outputs; ref in double from the dequantized operands.
struct ErrorSum {
    double err = 0.0, ref = 0.0;
    void add(float got, double want) {
        err += (got - want) * (got - want);
        ref += want * want;
    }
    double relative() const { return err / ref; }
};

double dot(const float *w, const std::vector<float> &x) {
    double s = 0.0;
    for (size_t k = 0; k < x.size(); ++k) s += double(w[k]) * x[k];
    return s;
}

class Lut4MatMul : public ::testing::TestWithParam<DType> {};

TEST_P(Lut4MatMul, MatMulNearDoubleReferenceForAnyThreadsAndBatch) {
    const DType type = GetParam();
    const int64_t bs = traits(type).block_size;
    // M = 20 does not fill groups of 16, so it stays plain even in the repack buffer.
    for (Shape s : {Shape{bs, 16, 1}, Shape{3 * bs, 48, 1}, Shape{4 * bs, 20, 1}}) {
        for (bool repacked : {true, false}) {
            SCOPED_TRACE(::testing::Message()
                         << "K=" << s.K << " M=" << s.M << (repacked ? " repacked" : " plain"));
            const Weights w(type, s, repacked, uint32_t(s.K + s.M));
            for (int64_t n : {1, 3, 17}) {
                Context ctx({.mem_size = 8u << 20});
                Tensor *b = quant_test::random_f32(ctx, {s.K, n}, uint32_t(n));
                Tensor *out = mul_mat(ctx, w.a, b);
                const std::vector<float> got = run_graph(ctx, out, 1);
                for (int threads : {2, 4}) EXPECT_EQ(got, run_graph(ctx, out, threads));
                ErrorSum e;
                for (int64_t j = 0; j < n; ++j) {
                    const float *x = static_cast<const float *>(b->data) + j * s.K;
                    const std::vector<float> xs = seen_column(type, x, s.K);
                    for (int64_t m = 0; m < s.M; ++m) {
                        e.add(got[size_t(j * s.M + m)], dot(w.values.data() + m * s.K, xs));
                    }
                    // The same column alone: the same bits (no dependence on the batch).
                    if (j % 8 != 0 && j != n - 1) continue;
                    Tensor *one = view_2d(ctx, b, s.K, 1, b->nb[1], size_t(j) * b->nb[1]);
                    const std::vector<float> alone = run_graph(ctx, mul_mat(ctx, w.a, one), 3);
                    for (int64_t m = 0; m < s.M; ++m) {
                        ASSERT_EQ(alone[size_t(m)], got[size_t(j * s.M + m)]) << j << " " << m;
                    }
                }
                EXPECT_LT(e.relative(), 1e-8) << "n=" << n;
            }
        }
    }
}

// Experts: every (slot, token) pair multiplies its expert's matrix, the columns one per slot
// (a down projection) or one per token shared by the slots (gate and up).
TEST_P(Lut4MatMul, MatMulIdNearDoubleReferenceForAnyThreads) {
    const DType type = GetParam();
    const int64_t bs = traits(type).block_size;
    const int64_t n_used = 2, n_tokens = 7;
    for (Shape s : {Shape{2 * bs, 32, 4}, Shape{bs, 16, 3}}) {
        for (bool repacked : {true, false}) {
            SCOPED_TRACE(::testing::Message()
                         << "K=" << s.K << " M=" << s.M << (repacked ? " repacked" : " plain"));
            const Weights w(type, s, repacked, uint32_t(7 * s.K + s.n_mat));
            EXPECT_EQ(cpu::is_repacked(w.a), repacked && cpu::has_repacked_layout(type));
            for (int64_t b1 : {n_used, int64_t(1)}) {
                Context ctx({.mem_size = 8u << 20});
                Tensor *b = quant_test::random_f32(ctx, {s.K, b1, n_tokens}, uint32_t(b1));
                Tensor *ids = ctx.new_tensor(DType::I32, {n_used, n_tokens});
                auto *id = static_cast<int32_t *>(ids->data);
                for (int64_t i = 0; i < n_used * n_tokens; ++i) {
                    id[i] = int32_t((i * 5 + i / n_used) % s.n_mat);
                }
                Tensor *out = mul_mat_id(ctx, w.a, b, ids);  // [M, n_used, n_tokens]
                const std::vector<float> got = run_graph(ctx, out, 1);
                for (int threads : {2, 3}) EXPECT_EQ(got, run_graph(ctx, out, threads));
                ErrorSum e;
                for (int64_t t = 0; t < n_tokens; ++t) {
                    for (int64_t slot = 0; slot < n_used; ++slot) {
                        const float *x = static_cast<const float *>(b->data) +
                                         (t * b1 + (b1 == 1 ? 0 : slot)) * s.K;
                        const std::vector<float> xs = seen_column(type, x, s.K);
                        const float *expert = w.values.data() + id[t * n_used + slot] * s.K * s.M;
                        for (int64_t m = 0; m < s.M; ++m) {
                            e.add(got[size_t((t * n_used + slot) * s.M + m)],
                                  dot(expert + m * s.K, xs));
                        }
                    }
                }
                EXPECT_LT(e.relative(), 1e-8) << "b1=" << b1;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, Lut4MatMul,
                         ::testing::Values(DType::MXFP4, DType::IQ4_NL, DType::IQ4_XS),
                         [](const auto &info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace loom
