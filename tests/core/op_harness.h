#pragma once
// The table-driven op harness (the role of ggml's test-backend-ops): every case builds one op
// on random inputs in a Context, the harness moves every tensor of the graph into memory with
// canary bytes before and after it, runs the graph on the CPU backend and compares the result
// with a double-precision reference (tests/core/op_reference.h) by normalised mean squared
// error, or exactly for integer results.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <random>
#include <string>
#include <vector>

#include "loom/core.h"
#include "tests/core/op_reference.h"

namespace loom::test {

// NMSE = sum((out - ref)^2) / sum(ref^2)
inline constexpr double kNmseDefault = 1e-7;
inline constexpr double kNmseMatMul = 5e-4;  // mul_mat, mul_mat_id, flash_attn_ext
inline constexpr double kNmseSoftMax = 1e-6;

// How an input tensor is laid out in memory; the logical shape is the same for all.
enum class Layout {
    contiguous,
    permuted,    // permute(0, 2, 1, 3) of a contiguous tensor: rows contiguous, planes swapped
    transposed,  // transpose of a contiguous tensor: rows not contiguous (nb[0] != element size)
    strided,     // a view at an offset inside a larger tensor, with padded rows and planes
};
const char *layout_tag(Layout layout);
std::string dtype_tag(DType type);        // "f32", "f16", ...
std::string shape_tag(const Shape4 &ne);  // "17x3x2x1"

// What a case's builder and reference share.
class CaseEnv {
  public:
    CaseEnv(Context &context, uint32_t seed) : ctx(context), rng(seed) {}

    Context &ctx;
    std::mt19937 rng;
    std::vector<Tensor *> t;  // the tensors the reference reads, in the order the builder kept them
    Tensor *check = nullptr;  // the tensor compared with the reference; the built node when null

    // A tensor of logical shape ne in the given layout, uniform random in [lo, hi]; kept.
    Tensor *input(DType type, const Shape4 &ne, Layout layout = Layout::contiguous,
                  double lo = -1.0, double hi = 1.0);
    // A permute(axes) view with logical shape ne of a random contiguous tensor; kept.
    Tensor *permuted(DType type, const Shape4 &ne, const std::array<int, 4> &axes, double lo = -1.0,
                     double hi = 1.0);
    // A contiguous tensor holding `v` in logical order (any dtype); kept.
    Tensor *values(DType type, const Shape4 &ne, const std::vector<double> &v);
    Tensor *keep(Tensor *x) {
        t.push_back(x);
        return x;
    }

    double uniform(double lo, double hi) {
        return std::uniform_real_distribution<double>(lo, hi)(rng);
    }
    std::vector<double> permutation(int64_t n);  // 0 .. n-1 shuffled
    void fill_uniform(Tensor *x, double lo, double hi);
    // Writes v (converted to x's dtype) at (i0, i1, i2, i3) through x's strides.
    void set(Tensor *x, int64_t i0, int64_t i1, int64_t i2, int64_t i3, double v);
};

struct OpCase {
    std::string name;  // letters, digits and '_' only: it becomes the test's name
    std::function<Tensor *(CaseEnv &)> build;
    // Fills the expected result (the shape of the checked tensor) from env.t.
    std::function<void(const CaseEnv &, Dense &)> reference;
    double max_nmse = kNmseDefault;
    bool exact = false;  // integer results: every element must be equal
};
void PrintTo(const OpCase &c, std::ostream *os);
std::string case_name(const ::testing::TestParamInfo<OpCase> &info);

struct CaseResult {
    std::string error;  // what a loom::Error said while building or computing; empty otherwise
    std::vector<std::string> guard_errors;
    DType type = DType::F32;     // of the checked tensor
    Dense out;                   // the checked tensor after compute
    std::vector<uint8_t> bytes;  // its elements' raw bytes, logical order
    Dense expected;              // the reference, rounded to `type` (when asked for)
};
CaseResult run_case(const OpCase &c, int n_threads, bool with_reference);

// Runs the graph's flagged nodes on a CpuBackend with n_threads threads: the one place the tests
// call the backend.
void compute_on_cpu(const Graph &graph, int n_threads);

// Runs the case and checks it against its reference with gtest assertions.
void expect_matches_reference(const OpCase &c, int n_threads);

class OpTest : public ::testing::TestWithParam<OpCase> {};

// The tables, one per file.
std::vector<OpCase> elementwise_cases();  // test_ops_elementwise.cpp
std::vector<OpCase> reduce_cases();       // test_ops_reduce.cpp
std::vector<OpCase> layout_cases();       // test_ops_layout.cpp
std::vector<OpCase> matmul_cases();       // test_ops_matmul.cpp
std::vector<OpCase> nn_cases();           // test_ops_nn.cpp: norm, rms_norm, rope_ext
std::vector<OpCase> attention_cases();    // test_ops_attention.cpp
std::vector<OpCase> all_cases();

}  // namespace loom::test
