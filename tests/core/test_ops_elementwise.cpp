// Harness cases for the elementwise ops: binary with broadcasting, unary and scalar ops, and
// the gated units.
#include <cmath>

#include "tests/core/op_harness.h"

namespace loom::test {
namespace {

struct BinaryKind {
    const char *name;
    Tensor *(*build)(Context &, Tensor *, Tensor *);
    BinaryOp op;
};

const BinaryKind kBinary[] = {
    {"add", add, BinaryOp::add},
    {"sub", sub, BinaryOp::sub},
    {"mul", mul, BinaryOp::mul},
    {"div", div, BinaryOp::div},
};

// One shape / dtype / layout combination of a binary op.
struct BinaryShape {
    DType a_type, b_type;
    Shape4 a, b;
    Layout a_layout = Layout::contiguous, b_layout = Layout::contiguous;
};

const BinaryShape kBinaryShapes[] = {
    {DType::F32, DType::F32, {17, 3, 2, 1}, {17, 3, 2, 1}},
    {DType::F32, DType::F32, {257, 3, 1, 1}, {257, 1, 1, 1}},
    {DType::F32, DType::F32, {3, 17, 2, 3}, {1, 17, 1, 3}},
    {DType::F32, DType::F32, {17, 3, 2, 3}, {1, 1, 1, 1}},
    {DType::F32, DType::F32, {1, 1, 1, 1}, {1, 1, 1, 1}},
    {DType::F32, DType::F32, {17, 3, 2, 1}, {17, 3, 1, 1}, Layout::permuted, Layout::strided},
    {DType::F32, DType::F32, {17, 3, 2, 1}, {17, 1, 2, 1}, Layout::transposed, Layout::permuted},
    {DType::F32, DType::F32, {33, 4, 3, 2}, {33, 4, 3, 2}, Layout::strided, Layout::transposed},
    {DType::F16, DType::F32, {17, 3, 2, 1}, {17, 1, 2, 1}},
    {DType::F16, DType::F16, {257, 3, 1, 1}, {257, 3, 1, 1}},
    {DType::F16, DType::F16, {17, 3, 2, 1}, {1, 3, 1, 1}, Layout::permuted},
    {DType::BF16, DType::F32, {17, 3, 2, 1}, {17, 3, 2, 1}},
    {DType::BF16, DType::BF16, {17, 3, 2, 1}, {17, 1, 1, 1}, Layout::strided},
};

void add_binary_cases(std::vector<OpCase> &cases) {
    for (const BinaryKind &k : kBinary) {
        for (const BinaryShape &s : kBinaryShapes) {
            const std::string name = std::string(k.name) + "_" + dtype_tag(s.a_type) + "_" +
                                     dtype_tag(s.b_type) + "_" + shape_tag(s.a) +
                                     layout_tag(s.a_layout) + "_b" + shape_tag(s.b) +
                                     layout_tag(s.b_layout);
            // Divisors stay away from zero.
            const double b_lo = k.op == BinaryOp::div ? 0.5 : -1.0;
            const double b_hi = k.op == BinaryOp::div ? 1.5 : 1.0;
            cases.push_back({
                .name = name,
                .build =
                    [k, s, b_lo, b_hi](CaseEnv &env) {
                        Tensor *a = env.input(s.a_type, s.a, s.a_layout);
                        Tensor *b = env.input(s.b_type, s.b, s.b_layout, b_lo, b_hi);
                        return k.build(env.ctx, a, b);
                    },
                .reference = [k](const CaseEnv &env,
                                 Dense &out) { ref_binary(k.op, env.t[0], env.t[1], out); },
            });
        }
    }
}

struct UnaryKind {
    const char *name;
    std::function<Tensor *(Context &, Tensor *)> build;
    std::function<double(double)> ref;
    double lo = -1.0, hi = 1.0;  // input range
};

std::vector<UnaryKind> unary_kinds() {
    return {
        {"scale_bias", [](Context &c, Tensor *a) { return scale(c, a, 0.75f, 0.25f); },
         [](double x) { return x * 0.75 + 0.25; }},
        {"scale", [](Context &c, Tensor *a) { return scale(c, a, -1.5f); },
         [](double x) { return x * -1.5; }},
        {"clamp", [](Context &c, Tensor *a) { return clamp(c, a, -0.5f, 0.75f); },
         [](double x) { return std::clamp(x, -0.5, 0.75); }, -2.0, 2.0},
        {"fill", [](Context &c, Tensor *a) { return fill(c, a, 1.25f); },
         [](double) { return 1.25; }},
        {"sqrt", [](Context &c, Tensor *a) { return sqrt(c, a); },
         [](double x) { return std::sqrt(x); }, 0.01, 4.0},
        {"exp", [](Context &c, Tensor *a) { return exp(c, a); },
         [](double x) { return std::exp(x); }, -3.0, 3.0},
        {"tanh", [](Context &c, Tensor *a) { return tanh(c, a); },
         [](double x) { return std::tanh(x); }, -3.0, 3.0},
        {"gelu", [](Context &c, Tensor *a) { return gelu(c, a); }, ref_gelu, -12.0, 12.0},
        {"silu", [](Context &c, Tensor *a) { return silu(c, a); }, ref_silu, -6.0, 6.0},
        {"sigmoid", [](Context &c, Tensor *a) { return sigmoid(c, a); }, ref_sigmoid, -6.0, 6.0},
        {"softplus", [](Context &c, Tensor *a) { return softplus(c, a); }, ref_softplus, -25.0,
         25.0},
        {"relu", [](Context &c, Tensor *a) { return relu(c, a); }, ref_relu},
    };
}

struct UnaryShape {
    DType type;
    Shape4 ne;
    Layout layout = Layout::contiguous;
};

const UnaryShape kUnaryShapes[] = {
    {DType::F32, {17, 3, 2, 1}},
    {DType::F32, {1, 1, 1, 1}},
    {DType::F32, {257, 3, 1, 1}},
    {DType::F32, {17, 3, 2, 1}, Layout::permuted},
    {DType::F32, {17, 3, 2, 1}, Layout::transposed},
    {DType::F16, {17, 3, 2, 1}},
    {DType::F16, {33, 3, 2, 1}, Layout::strided},
    {DType::BF16, {17, 3, 2, 1}},
};

void add_unary_cases(std::vector<OpCase> &cases) {
    for (const UnaryKind &k : unary_kinds()) {
        for (const UnaryShape &s : kUnaryShapes) {
            cases.push_back({
                .name = std::string(k.name) + "_" + dtype_tag(s.type) + "_" + shape_tag(s.ne) +
                        layout_tag(s.layout),
                .build =
                    [k, s](CaseEnv &env) {
                        return k.build(env.ctx, env.input(s.type, s.ne, s.layout, k.lo, k.hi));
                    },
                .reference = [k](const CaseEnv &env,
                                 Dense &out) { ref_unary(k.ref, env.t[0], out); },
            });
        }
    }
}

void add_gated_cases(std::vector<OpCase> &cases) {
    struct GatedKind {
        const char *name;
        Tensor *(*build)(Context &, Tensor *, Tensor *);
        double (*act)(double);
    };
    const GatedKind kinds[] = {{"swiglu_split", swiglu_split, ref_silu},
                               {"geglu_split", geglu_split, ref_gelu}};
    const UnaryShape shapes[] = {
        {DType::F32, {17, 3, 2, 1}}, {DType::F32, {257, 1, 1, 1}},
        {DType::F32, {1, 1, 1, 1}},  {DType::F32, {17, 3, 2, 1}, Layout::permuted},
        {DType::F16, {17, 3, 2, 1}}, {DType::BF16, {17, 3, 2, 1}},
    };
    for (const GatedKind &k : kinds) {
        for (const UnaryShape &s : shapes) {
            cases.push_back({
                .name = std::string(k.name) + "_" + dtype_tag(s.type) + "_" + shape_tag(s.ne) +
                        layout_tag(s.layout),
                .build =
                    [k, s](CaseEnv &env) {
                        Tensor *a = env.input(s.type, s.ne, s.layout, -4.0, 4.0);
                        Tensor *b = env.input(s.type, s.ne, Layout::contiguous, -2.0, 2.0);
                        return k.build(env.ctx, a, b);
                    },
                .reference = [k](const CaseEnv &env,
                                 Dense &out) { ref_gated(k.act, env.t[0], env.t[1], out); },
            });
        }
    }
    // Values on both sides of the clamps (limit 3 with inputs in [-4, 4]).
    for (const UnaryShape &s : shapes) {
        cases.push_back({
            .name = "swiglu_oai_" + std::string(dtype_tag(s.type)) + "_" + shape_tag(s.ne) +
                    layout_tag(s.layout),
            .build =
                [s](CaseEnv &env) {
                    Tensor *a = env.input(s.type, s.ne, s.layout, -4.0, 4.0);
                    Tensor *b = env.input(s.type, s.ne, Layout::contiguous, -4.0, 4.0);
                    return swiglu_oai(env.ctx, a, b, 1.702f, 3.0f);
                },
            .reference = [](const CaseEnv &env,
                            Dense &out) { ref_swiglu_oai(env.t[0], env.t[1], 1.702, 3.0, out); },
        });
    }
}

}  // namespace

std::vector<OpCase> elementwise_cases() {
    std::vector<OpCase> cases;
    add_binary_cases(cases);
    add_unary_cases(cases);
    add_gated_cases(cases);
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Elementwise, OpTest, ::testing::ValuesIn(elementwise_cases()), case_name);

}  // namespace loom::test
