// F16 and BF16 weights in cpu_repack_buffer_type() are stored 16 rows interleaved (core/cpu/
// repack.h) and multiplied without transposes (core/cpu/gemm.h, Job::a_grouped). The promise is
// the same arithmetic as the file's row layout: every product equals, bit for bit, the one over
// the same weights in plain host memory, for the generation path (N <= 4), the packed GEMM
// (N > 4), mul_mat_id, an odd number of row groups, K past one KC block, and any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "core/cpu/kernels.h"
#include "core/cpu/repack.h"
#include "loom/backend.h"
#include "loom/core.h"
#include "loom/cpu.h"
#include "loom/fp16.h"
#include "tests/quant/quant_test_util.h"

namespace loom {
namespace {

using quant_test::quantize;
using quant_test::random_f32;
using quant_test::random_row;
using quant_test::run_expecting_steps;
using quant_test::run_graph;

// The same weights [K, rows, n_mat] twice: in a repack buffer and in plain host memory.
struct TwoCopies {
    Context ctx{{.mem_size = 1u << 16, .no_alloc = true}};
    Tensor *grouped = nullptr, *plain = nullptr;
    std::unique_ptr<Buffer> grouped_buffer, plain_buffer;
    std::vector<std::byte> file_bytes;

    TwoCopies(DType type, int64_t K, int64_t rows, int64_t n_mat) {
        grouped = ctx.new_tensor(type, {K, rows, n_mat});
        plain = ctx.new_tensor(type, {K, rows, n_mat});
        Tensor *const g[] = {grouped};
        Tensor *const p[] = {plain};
        grouped_buffer = place_tensors(cpu_repack_buffer_type(), g);
        plain_buffer = place_tensors(host_buffer_type(), p);
        file_bytes = quantize(type, random_row(K * rows * n_mat, 11));
        grouped_buffer->set_tensor(grouped, file_bytes.data(), 0, file_bytes.size());
        plain_buffer->set_tensor(plain, file_bytes.data(), 0, file_bytes.size());
    }
};

class GroupedFloatMatMul : public ::testing::TestWithParam<DType> {
  protected:
    void SetUp() override {
        if (!cpu::has_repacked_layout(GetParam()))
            GTEST_SKIP() << "no grouped layout in this build";
    }
};

// The layout of repack.h (element k of row 16g + r at 16 * (g * K + k) + r, in 16-bit units),
// and back; K = 100 leaves a row tail of 4 elements past the 16-element tiles of the copy.
TEST_P(GroupedFloatMatMul, LayoutRoundTrips) {
    for (const int64_t K : {96, 100}) {
        TwoCopies w(GetParam(), K, 32, 1);
        ASSERT_TRUE(cpu::is_repacked(w.grouped));
        EXPECT_FALSE(cpu::is_repacked(w.plain));
        const auto *file = reinterpret_cast<const uint16_t *>(w.file_bytes.data());
        const auto *grouped = static_cast<const uint16_t *>(w.grouped->data);
        for (int64_t row = 0; row < 32; ++row) {
            for (int64_t k = 0; k < K; ++k) {
                ASSERT_EQ(grouped[(row / 16 * K + k) * 16 + row % 16], file[row * K + k])
                    << "K=" << K << " row=" << row << " k=" << k;
            }
        }
        std::vector<std::byte> back(w.file_bytes.size());
        w.grouped_buffer->get_tensor(w.grouped, back.data(), 0, back.size());
        EXPECT_EQ(back, w.file_bytes) << "K=" << K;
    }
}

TEST_P(GroupedFloatMatMul, SameBitsAsRowLayout) {
    // 80 rows: two-group and one-group steps; K = 700: a KC = 512 restart and a partial block.
    const int64_t K = 700, M = 80;
    TwoCopies w(GetParam(), K, M, 1);
    for (int64_t n : {1, 2, 3, 4, 5, 13, 40}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n);
        Context ctx({.mem_size = 4u << 20});
        Tensor *b = random_f32(ctx, {K, n}, uint32_t(n));
        Tensor *from_groups = mul_mat(ctx, w.grouped, b);
        Tensor *from_rows = mul_mat(ctx, w.plain, b);
        const std::vector<float> expected = run_graph(ctx, from_rows, 1);
        EXPECT_EQ(run_graph(ctx, from_groups, 1), expected);
        EXPECT_EQ(run_graph(ctx, from_groups, 3), expected);
    }
}

// Grouped weights of one input, adjacent in the graph (a layer's Q, K and V, of other row
// counts), run as one step (core/cpu/matmul.cpp, mul_mat_joins); every product keeps the bits
// it has alone over the file's layout. A product of another input is a step of its own.
TEST_P(GroupedFloatMatMul, ProductsOfOneInputRunAsOneStep) {
    const int64_t K = 700;
    TwoCopies q(GetParam(), K, 48, 1), k(GetParam(), K, 16, 1), v(GetParam(), K, 32, 1);
    TwoCopies other(GetParam(), K, 16, 1);
    for (int64_t n : {1, 3, 9}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n);
        Context ctx({.mem_size = 4u << 20});
        Tensor *x = random_f32(ctx, {K, n}, uint32_t(20 + n));
        Tensor *y = random_f32(ctx, {K, n}, uint32_t(30 + n));
        const TwoCopies *weights[] = {&q, &k, &v, &other};
        Graph *graph = new_graph(ctx);
        std::vector<Tensor *> outs;
        std::vector<std::vector<float>> expected;
        for (const TwoCopies *w : weights) {
            Tensor *b = w == &other ? y : x;
            outs.push_back(mul_mat(ctx, w->grouped, b));
            build_forward_expand(graph, outs.back());
            expected.push_back(run_graph(ctx, mul_mat(ctx, w->plain, b), 1));
        }
        for (int threads : {1, 2, 3}) {
            SCOPED_TRACE(::testing::Message() << "threads=" << threads);
            run_expecting_steps(*graph, threads, 4, 2);
            for (size_t i = 0; i < outs.size(); ++i) {
                const auto *out = static_cast<const float *>(outs[i]->data);
                EXPECT_EQ(std::vector<float>(out, out + outs[i]->nelements()), expected[i])
                    << "product " << i;
            }
        }
    }
}

TEST_P(GroupedFloatMatMul, ExpertsSameBitsAsRowLayout) {
    const int64_t K = 256, M = 48, n_expert = 3, n_used = 2, n_tokens = 7;
    TwoCopies w(GetParam(), K, M, n_expert);
    Context ctx({.mem_size = 4u << 20});
    Tensor *b = random_f32(ctx, {K, n_used, n_tokens}, 4);
    Tensor *ids = ctx.new_tensor(DType::I32, {n_used, n_tokens});
    auto *id = static_cast<int32_t *>(ids->data);
    for (int64_t i = 0; i < n_used * n_tokens; ++i) id[i] = int32_t((i * 2 + 1) % n_expert);
    const std::vector<float> expected = run_graph(ctx, mul_mat_id(ctx, w.plain, b, ids), 1);
    EXPECT_EQ(run_graph(ctx, mul_mat_id(ctx, w.grouped, b, ids), 2), expected);
}

// Where the kernels multiply BF16 two elements at a time (AVX512-BF16's VDPBF16PS), every
// output is, bit for bit, gemm.h's pair order: within each KC = 512 block, term k + 1 then term
// k of each pair by one fused multiply-add (a lone last term alone), the block sums added in
// turn; the activations rounded to BF16. Plain and grouped weights, narrow and packed paths, an
// odd K past one block, edge rows, 1 and 2 threads.
TEST(Bf16PairOrder, EveryPathSumsPairsInOrder) {
    if (!cpu::bf16_sums_pairs()) GTEST_SKIP() << "these kernels multiply BF16 one term at a time";
    const int64_t M = 80;
    for (const int64_t K : {700, 1025}) {
        TwoCopies w(DType::BF16, K, M, 1);
        const auto *bits = reinterpret_cast<const uint16_t *>(w.file_bytes.data());
        for (const int64_t n : {1, 3, 4, 5, 13}) {
            SCOPED_TRACE(::testing::Message() << "K=" << K << " n=" << n);
            Context ctx({.mem_size = 4u << 20});
            Tensor *b = random_f32(ctx, {K, n}, uint32_t(n + K));
            const auto *x = static_cast<const float *>(b->data);
            std::vector<float> expected(size_t(M * n));
            for (int64_t j = 0; j < n; ++j) {
                for (int64_t m = 0; m < M; ++m) {
                    const auto term = [&](int64_t k, float acc) {
                        const float xk = bf16_to_f32(f32_to_bf16(x[j * K + k]));
                        return std::fma(bf16_to_f32(bits[m * K + k]), xk, acc);
                    };
                    float total = 0.0f;
                    for (int64_t k0 = 0; k0 < K; k0 += 512) {
                        const int64_t k1 = std::min(K, k0 + 512);
                        float acc = 0.0f;
                        for (int64_t k = k0; k < k1; k += 2) {
                            if (k + 1 < k1) acc = term(k + 1, acc);
                            acc = term(k, acc);
                        }
                        total = k0 == 0 ? acc : total + acc;
                    }
                    expected[size_t(j * M + m)] = total;
                }
            }
            Tensor *plain = mul_mat(ctx, w.plain, b);
            Tensor *grouped = mul_mat(ctx, w.grouped, b);
            EXPECT_EQ(run_graph(ctx, plain, 1), expected);
            EXPECT_EQ(run_graph(ctx, plain, 2), expected);
            EXPECT_EQ(run_graph(ctx, grouped, 2), expected);
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, GroupedFloatMatMul, ::testing::Values(DType::F16, DType::BF16),
                         [](const auto &info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace loom
