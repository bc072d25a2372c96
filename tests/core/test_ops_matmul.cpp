// Harness cases for the matrix products: mul_mat (F32 / F16 / BF16 weights, broadcasting over
// dims 2 and 3, permuted, transposed and strided views, odd and tile-edge sizes) and mul_mat_id.
#include <cmath>

#include "loom/fp16.h"
#include "tests/core/op_harness.h"

namespace loom::test {
namespace {

struct MatMulShape {
    DType type;
    int64_t K, M, N;
    Shape4 a_batch = {1, 1, 1, 1};  // only [2] and [3] are used
    Shape4 b_batch = {1, 1, 1, 1};
    Layout a_layout = Layout::contiguous, b_layout = Layout::contiguous;
};

std::vector<MatMulShape> mul_mat_shapes() {
    std::vector<MatMulShape> shapes;
    // Plain sizes, N = 1 (matrix-vector) and N > 1.
    const int64_t sizes[][3] = {
        {1, 1, 1},
        {3, 5, 1},
        {17, 3, 2},
        {1, 17, 3},
        {257, 17, 3},
        {17, 257, 1},
        {257, 257, 257},
        {33, 257, 65},
        {257, 63, 1},
        {16, 16, 16},
        // tile edges
        {32, 31, 33},
        {64, 63, 65},
        {65, 64, 63},
        {33, 65, 31},
        {31, 32, 64},
        {63, 33, 32},
    };
    for (const auto &s : sizes) shapes.push_back({DType::F32, s[0], s[1], s[2]});
    // Around the matrix-vector / GEMM switch (N <= 4), the register tile's N (6 or 12) and
    // several K blocks (384) and M blocks.
    const int64_t blocking[][3] = {
        {64, 40, 4},  {64, 40, 5},  {64, 40, 11},   {64, 40, 12},
        {64, 40, 13}, {64, 40, 25}, {777, 500, 13}, {800, 33, 1},
    };
    for (const auto &s : blocking) shapes.push_back({DType::F32, s[0], s[1], s[2]});
    shapes.push_back({DType::F16, 385, 65, 5});
    shapes.push_back({DType::BF16, 800, 33, 2});
    for (const DType t : {DType::F16, DType::BF16}) {
        for (const auto &s : {std::array<int64_t, 3>{17, 3, 1},
                              {64, 65, 1},
                              {257, 33, 17},
                              {32, 31, 33},
                              {1, 5, 3}}) {
            shapes.push_back({t, s[0], s[1], s[2]});
        }
    }
    // Broadcasting a over b's dims 2 and 3.
    shapes.push_back({DType::F32, 17, 5, 3, {1, 1, 2, 1}, {1, 1, 4, 3}});
    shapes.push_back({DType::F32, 32, 9, 1, {1, 1, 1, 1}, {1, 1, 3, 2}});
    shapes.push_back({DType::F16, 33, 7, 4, {1, 1, 2, 3}, {1, 1, 4, 3}});
    shapes.push_back({DType::BF16, 17, 3, 2, {1, 1, 1, 2}, {1, 1, 2, 2}});
    // Views.
    shapes.push_back(
        {DType::F32, 17, 5, 3, {1, 1, 2, 1}, {1, 1, 2, 1}, Layout::permuted, Layout::permuted});
    shapes.push_back(
        {DType::F16, 64, 9, 7, {1, 1, 2, 1}, {1, 1, 4, 1}, Layout::permuted, Layout::contiguous});
    shapes.push_back({DType::F32,
                      33,
                      17,
                      5,
                      {1, 1, 1, 1},
                      {1, 1, 1, 1},
                      Layout::transposed,
                      Layout::contiguous});
    shapes.push_back({DType::F32,
                      33,
                      17,
                      5,
                      {1, 1, 1, 1},
                      {1, 1, 1, 1},
                      Layout::contiguous,
                      Layout::transposed});
    shapes.push_back({DType::F16,
                      32,
                      16,
                      1,
                      {1, 1, 1, 1},
                      {1, 1, 1, 1},
                      Layout::transposed,
                      Layout::transposed});
    shapes.push_back(
        {DType::F32, 17, 9, 4, {1, 1, 2, 1}, {1, 1, 2, 2}, Layout::strided, Layout::strided});
    shapes.push_back(
        {DType::BF16, 64, 5, 3, {1, 1, 1, 1}, {1, 1, 2, 1}, Layout::strided, Layout::permuted});
    return shapes;
}

void add_mul_mat_cases(std::vector<OpCase> &cases) {
    for (const MatMulShape &s : mul_mat_shapes()) {
        const Shape4 a = {s.K, s.M, s.a_batch[2], s.a_batch[3]};
        const Shape4 b = {s.K, s.N, s.b_batch[2], s.b_batch[3]};
        cases.push_back({
            .name = std::string("mul_mat_") + dtype_tag(s.type) + "_" + shape_tag(a) +
                    layout_tag(s.a_layout) + "_b" + shape_tag(b) + layout_tag(s.b_layout),
            .build =
                [s, a, b](CaseEnv &env) {
                    Tensor *ta = env.input(s.type, a, s.a_layout);
                    Tensor *tb = env.input(DType::F32, b, s.b_layout);
                    return mul_mat(env.ctx, ta, tb);
                },
            .reference = [](const CaseEnv &env,
                            Dense &out) { ref_mul_mat(env.t[0], env.t[1], out); },
            .max_nmse = kNmseMatMul,
        });
    }
}

// The sums of SumOrder::four_chains and eight_lanes, written out term by term: lane l of chain j
// takes terms 32i + 8j + l (four_chains) or 8i + l (eight_lanes, so terms past the last 8 join
// lanes from 0 as padding zeros would leave them), each fused into its lane.
float four_chains_sum(const std::vector<float> &x, const std::vector<float> &y, bool f16) {
    const size_t K = x.size(), whole = K / 32 * 32;
    float lane[4][8] = {};
    for (size_t k = 0; k < whole; ++k) {
        float &acc = lane[k % 32 / 8][k % 8];
        acc = std::fma(x[k], y[k], acc);
    }
    float v[8];
    for (int l = 0; l < 8; ++l) v[l] = (lane[0][l] + lane[2][l]) + (lane[1][l] + lane[3][l]);
    float h[4];
    for (int l = 0; l < 4; ++l) h[l] = v[l] + v[l + 4];
    float sum = (h[0] + h[1]) + (h[2] + h[3]);
    if (!f16) {
        for (size_t k = whole; k < K; ++k) sum = std::fma(x[k], y[k], sum);
        return sum;
    }
    double total = sum;  // F16: the rest in double, each product rounded to float
    for (size_t k = whole; k < K; ++k) total += double(x[k] * y[k]);
    return float(total);
}

float eight_lanes_sum(const std::vector<float> &x, const std::vector<float> &y) {
    float lane[8] = {};
    for (size_t k = 0; k < x.size(); ++k) lane[k % 8] = std::fma(x[k], y[k], lane[k % 8]);
    float h[4];
    for (int l = 0; l < 4; ++l) h[l] = lane[l] + lane[l + 4];
    return (h[0] + h[2]) + (h[1] + h[3]);
}

void ref_mul_mat_in_order(const Tensor *a, const Tensor *b, SumOrder order, Dense &out) {
    const Dense da(a), db(b);
    const int64_t K = da.ne[0];
    const bool f16 = a->type == DType::F16;
    const int64_t r2 = db.ne[2] / da.ne[2], r3 = db.ne[3] / da.ne[3];
    for_each_index(out.ne, [&](int64_t m, int64_t n, int64_t i2, int64_t i3) {
        std::vector<float> x(static_cast<size_t>(K)), y(static_cast<size_t>(K));
        for (int64_t k = 0; k < K; ++k) {
            x[size_t(k)] = float(da.at(k, m, i2 / r2, i3 / r3));
            const auto v = float(db.at(k, n, i2, i3));
            y[size_t(k)] = f16 ? fp16_to_f32(f32_to_fp16(v)) : v;  // b rounded to a's type
        }
        out.at(m, n, i2, i3) =
            order == SumOrder::eight_lanes ? eight_lanes_sum(x, y) : four_chains_sum(x, y, f16);
    });
}

// The attention's products (SumOrder): bit for bit the order written out above, for K with and
// without a remainder past the last 32 or 8, GQA-style broadcasting, permuted and strided b.
void add_mul_mat_order_cases(std::vector<OpCase> &cases) {
    struct OrderShape {
        DType type;
        int64_t K, M, N;
        Shape4 a_batch, b_batch;
        Layout b_layout = Layout::contiguous;
    };
    const OrderShape shapes[] = {
        {DType::F32, 64, 37, 5, {1, 1, 2, 1}, {1, 1, 6, 1}, Layout::permuted},
        {DType::F32, 80, 9, 12, {1, 1, 1, 1}, {1, 1, 3, 1}},
        {DType::F32, 96, 64, 1, {1, 1, 2, 1}, {1, 1, 4, 1}, Layout::strided},
        {DType::F32, 40, 33, 3, {1, 1, 1, 1}, {1, 1, 1, 1}},
        {DType::F32, 7, 5, 3, {1, 1, 1, 1}, {1, 1, 1, 1}},
        {DType::F16, 64, 35, 4, {1, 1, 2, 1}, {1, 1, 4, 1}, Layout::permuted},
        {DType::F16, 100, 17, 3, {1, 1, 1, 1}, {1, 1, 2, 1}},
        {DType::F16, 256, 64, 9, {1, 1, 1, 1}, {1, 1, 1, 1}},
        // long rows against many columns (V·softmax over a prompt): a remainder past 8, 17 groups
        // of 4 columns and a part of one, an odd row count, strided b
        {DType::F16, 1100, 19, 70, {1, 1, 2, 1}, {1, 1, 4, 1}},
        {DType::F32, 1030, 6, 9, {1, 1, 1, 1}, {1, 1, 2, 1}, Layout::strided},
    };
    for (const SumOrder order : {SumOrder::four_chains, SumOrder::eight_lanes}) {
        for (const OrderShape &s : shapes) {
            const Shape4 a = {s.K, s.M, s.a_batch[2], s.a_batch[3]};
            const Shape4 b = {s.K, s.N, s.b_batch[2], s.b_batch[3]};
            cases.push_back({
                .name = std::string("mul_mat_") +
                        (order == SumOrder::four_chains ? "four_chains_" : "eight_lanes_") +
                        dtype_tag(s.type) + "_" + shape_tag(a) + "_b" + shape_tag(b) +
                        layout_tag(s.b_layout),
                .build =
                    [s, a, b, order](CaseEnv &env) {
                        Tensor *ta = env.input(s.type, a);
                        Tensor *tb = env.input(DType::F32, b, s.b_layout);
                        return mul_mat(env.ctx, ta, tb, order);
                    },
                .reference =
                    [order](const CaseEnv &env, Dense &out) {
                        ref_mul_mat_in_order(env.t[0], env.t[1], order, out);
                    },
                .exact = true,
            });
        }
    }
}

void add_mul_mat_id_cases(std::vector<OpCase> &cases) {
    struct IdShape {
        DType type;
        int64_t K, M, n_expert, n_used, n_tokens;
        bool b_per_slot;  // b [K, n_used, n_tokens]; else [K, 1, n_tokens]
        Layout b_layout = Layout::contiguous;
    };
    const IdShape shapes[] = {
        {DType::F32, 17, 9, 6, 1, 5, true},
        {DType::F32, 17, 9, 6, 2, 5, false},
        {DType::F16, 64, 33, 6, 4, 3, true},
        {DType::BF16, 32, 7, 5, 3, 4, false},
        {DType::F32, 33, 5, 8, 4, 1, false},
        {DType::F16, 16, 17, 4, 1, 7, false},
        {DType::F32, 17, 9, 6, 3, 4, true, Layout::permuted},
    };
    for (const IdShape &s : shapes) {
        const int64_t b1 = s.b_per_slot ? s.n_used : 1;
        cases.push_back({
            .name = std::string("mul_mat_id_") + dtype_tag(s.type) + "_K" + std::to_string(s.K) +
                    "_M" + std::to_string(s.M) + "_e" + std::to_string(s.n_expert) + "_used" +
                    std::to_string(s.n_used) + "_t" + std::to_string(s.n_tokens) + "_b" +
                    std::to_string(b1) + layout_tag(s.b_layout),
            .build =
                [s, b1](CaseEnv &env) {
                    Tensor *as = env.input(s.type, {s.K, s.M, s.n_expert, 1});
                    Tensor *b = env.input(DType::F32, {s.K, b1, s.n_tokens, 1}, s.b_layout);
                    // Distinct experts per token, as a router's top-k picks them.
                    std::vector<double> ids;
                    for (int64_t t = 0; t < s.n_tokens; ++t) {
                        const std::vector<double> perm = env.permutation(s.n_expert);
                        ids.insert(ids.end(), perm.begin(), perm.begin() + s.n_used);
                    }
                    Tensor *tid = env.values(DType::I32, {s.n_used, s.n_tokens, 1, 1}, ids);
                    return mul_mat_id(env.ctx, as, b, tid);
                },
            .reference = [](const CaseEnv &env,
                            Dense &out) { ref_mul_mat_id(env.t[0], env.t[1], env.t[2], out); },
            .max_nmse = kNmseMatMul,
        });
    }
}

}  // namespace

std::vector<OpCase> matmul_cases() {
    std::vector<OpCase> cases;
    add_mul_mat_cases(cases);
    add_mul_mat_order_cases(cases);
    add_mul_mat_id_cases(cases);
    return cases;
}

INSTANTIATE_TEST_SUITE_P(MatMul, OpTest, ::testing::ValuesIn(matmul_cases()), case_name);

}  // namespace loom::test
