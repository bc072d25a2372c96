// mul_mat, mul_mat_id and get_rows with block-format weights (legacy and K) on the CPU backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/quant/legacy_formats.h"
#include "loom/core.h"
#include "loom/cpu.h"
#include "tests/quant/quant_test_util.h"

namespace loom {
namespace {

using quant_test::dequantize;
using quant_test::quantize;
using quant_test::random_f32;
using quant_test::random_row;
using quant_test::run_graph;

const DType kWeightTypes[] = {DType::Q4_0,  DType::Q4_1,   DType::Q5_0,  DType::Q5_1, DType::Q8_0,
                              DType::Q2_K,  DType::Q3_K,   DType::Q4_K,  DType::Q5_K, DType::Q6_K,
                              DType::MXFP4, DType::IQ4_NL, DType::IQ4_XS};

// A [K, rows] tensor of `type` in ctx holding quantized N(0, 1) values.
Tensor *random_weights(Context &ctx, DType type, int64_t K, int64_t rows, uint32_t seed) {
    Tensor *a = ctx.new_tensor(type, {K, rows});
    const std::vector<std::byte> q = quantize(type, random_row(K * rows, seed));
    std::memcpy(a->data, q.data(), q.size());
    return a;
}

// A column as mul_mat quantizes it: with llama.cpp's CPU activation quantizers.
std::vector<std::byte> quantize_column(DType act, const float *column, int64_t K) {
    std::vector<std::byte> q(row_size(act, K));
    if (act == DType::Q8_0) {
        quant::quantize_activations_q8_0(column, q.data(), K);
    } else if (act == DType::Q8_1) {
        quant::quantize_activations_q8_1(column, q.data(), K);
    } else {
        traits(act).from_float(column, q.data(), K);  // Q8_K: the reference, as mul_mat uses
    }
    return q;
}

// What llama.cpp computes for one output: the weight row dotted with the quantized column.
float expected_element(const Tensor *a, int64_t m, const float *column) {
    const DTypeTraits &t = traits(a->type);
    const std::vector<std::byte> qy = quantize_column(t.vec_dot_type, column, a->ne[0]);
    return t.vec_dot(a->ne[0], a->row_ptr(m), qy.data());
}

class BlockMatMul : public ::testing::TestWithParam<DType> {};

TEST_P(BlockMatMul, MatchesDequantizedReference) {
    const DType type = GetParam();
    const int64_t K = 256, M = 37;  // M: not a multiple of any row tile
    for (int64_t n : {1, 2, 7, 32, 100}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n);
        Context ctx({.mem_size = 8u << 20});
        Tensor *a = random_weights(ctx, type, K, M, 1);
        Tensor *b = random_f32(ctx, {K, n}, uint32_t(n));
        Tensor *out = mul_mat(ctx, a, b);
        const std::vector<float> got = run_graph(ctx, out, 1);
        EXPECT_EQ(got, run_graph(ctx, out, 2));  // bitwise: threads split rows only

        // Reference: the weights dequantized, the activations quantized-dequantized as the
        // kernel sees them, products summed in double.
        const std::vector<float> a_f =
            dequantize(type,
                       std::vector<std::byte>(static_cast<std::byte *>(a->data),
                                              static_cast<std::byte *>(a->data) + a->nbytes()),
                       K * M);
        const DType act = traits(type).vec_dot_type;
        double err = 0.0, ref_sq = 0.0;
        for (int64_t j = 0; j < n; ++j) {
            const float *column = static_cast<const float *>(b->data) + j * K;
            const std::vector<float> b_f = dequantize(act, quantize_column(act, column, K), K);
            for (int64_t m = 0; m < M; ++m) {
                double ref = 0.0;
                for (int64_t k = 0; k < K; ++k) ref += double(a_f[m * K + k]) * b_f[k];
                const float v = got[j * M + m];
                err += (v - ref) * (v - ref);
                ref_sq += ref * ref;
                if (j % 3 == 0) {
                    ASSERT_EQ(v, expected_element(a, m, column)) << "m=" << m;
                }
            }
        }
        EXPECT_LT(err / ref_sq, 5e-4);
    }
}

TEST_P(BlockMatMul, ExpertsFromIds) {
    const DType type = GetParam();
    const int64_t K = 3 * traits(type).block_size, M = 19, n_expert = 4, n_used = 2, n_tokens = 5;
    Context ctx({.mem_size = 8u << 20});
    Tensor *experts = ctx.new_tensor(type, {K, M, n_expert});
    const std::vector<std::byte> q = quantize(type, random_row(K * M * n_expert, 3));
    std::memcpy(experts->data, q.data(), q.size());
    Tensor *b = random_f32(ctx, {K, n_used, n_tokens}, 4);
    Tensor *ids = ctx.new_tensor(DType::I32, {n_used, n_tokens});
    auto *id = static_cast<int32_t *>(ids->data);
    for (int64_t i = 0; i < n_used * n_tokens; ++i) id[i] = int32_t((i * 3 + 1) % n_expert);
    Tensor *out = mul_mat_id(ctx, experts, b, ids);
    const std::vector<float> got = run_graph(ctx, out, 2);
    EXPECT_EQ(got, run_graph(ctx, out, 1));

    Tensor *expert = ctx.new_tensor(type, {K, M});  // one expert's matrix, for expected_element
    for (int64_t t = 0; t < n_tokens; ++t) {
        for (int64_t s = 0; s < n_used; ++s) {
            const int64_t e = id[t * n_used + s];
            std::memcpy(expert->data,
                        static_cast<const std::byte *>(experts->data) + e * experts->nb[2],
                        experts->nb[2]);
            const float *column = static_cast<const float *>(b->data) + (t * n_used + s) * K;
            for (int64_t m = 0; m < M; ++m) {
                EXPECT_EQ(got[(t * n_used + s) * M + m], expected_element(expert, m, column))
                    << "token " << t << " slot " << s << " m=" << m;
            }
        }
    }
}

TEST_P(BlockMatMul, GetRowsDequantizes) {
    const DType type = GetParam();
    const int64_t K = 2 * traits(type).block_size, rows = 6;
    Context ctx({.mem_size = 1u << 20});
    Tensor *a = random_weights(ctx, type, K, rows, 5);
    Tensor *idx = ctx.new_tensor(DType::I32, {3});
    const int32_t picks[] = {4, 0, 4};
    std::memcpy(idx->data, picks, sizeof picks);
    const std::vector<float> got = run_graph(ctx, get_rows(ctx, a, idx), 1);
    for (int i = 0; i < 3; ++i) {
        std::vector<float> expected(K);
        traits(type).to_float(a->row_ptr(picks[i]), expected.data(), K);
        EXPECT_EQ(std::vector<float>(got.begin() + i * K, got.begin() + (i + 1) * K), expected);
    }
}

INSTANTIATE_TEST_SUITE_P(Types, BlockMatMul, ::testing::ValuesIn(kWeightTypes),
                         [](const auto &info) { return std::string(dtype_name(info.param)); });

// Q8_1 is an activation format: it has no dot product, so it cannot be a weight.
TEST(BlockMatMulBuilder, RejectsTypesWithoutDot) {
    Context ctx({.mem_size = 1u << 20});
    Tensor *a = ctx.new_tensor(DType::Q8_1, {64, 4});
    Tensor *b = ctx.new_tensor(DType::F32, {64, 2});
    EXPECT_THROW(mul_mat(ctx, a, b), Error);
}

}  // namespace
}  // namespace loom
