// Determinism: every CPU kernel partitions its work only by rows or columns, so each harness
// case must give bit-identical results with 1, 2 and 3 threads.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

#include "tests/core/op_harness.h"

namespace loom::test {
namespace {

class ThreadsTest : public ::testing::TestWithParam<OpCase> {};

TEST_P(ThreadsTest, BitIdenticalForAnyThreadCount) {
    const OpCase &c = GetParam();
    const CaseResult one = run_case(c, 1, /*with_reference=*/false);
    ASSERT_TRUE(one.error.empty()) << one.error;
    ASSERT_FALSE(one.bytes.empty());
    for (const int n_threads : {2, 3}) {
        const CaseResult many = run_case(c, n_threads, /*with_reference=*/false);
        ASSERT_TRUE(many.error.empty()) << many.error;
        ASSERT_EQ(one.bytes.size(), many.bytes.size());
        const size_t elem = traits(one.type).type_size;
        size_t n_diff = 0, first = 0;
        for (size_t i = 0; i < one.bytes.size(); i += elem) {
            if (std::memcmp(&one.bytes[i], &many.bytes[i], elem) != 0) {
                if (n_diff++ == 0) first = i / elem;
            }
        }
        EXPECT_EQ(n_diff, 0u) << n_diff << " elements differ between 1 and " << n_threads
                              << " threads; first at flat index " << first << ": "
                              << one.out.v[first] << " vs " << many.out.v[first];
    }
}

INSTANTIATE_TEST_SUITE_P(AllOps, ThreadsTest, ::testing::ValuesIn(all_cases()), case_name);

TEST(OpTable, CaseNamesAreUniqueAndValid) {
    std::set<std::string> seen;
    for (const OpCase &c : all_cases()) {
        EXPECT_TRUE(seen.insert(c.name).second) << "duplicate case " << c.name;
        for (const char ch : c.name) {
            EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')
                << "case " << c.name << " has character '" << ch << "'";
        }
    }
}

// Every op with a CPU kernel appears in the table (views and the leaf op have none).
TEST(OpTable, CoversEveryComputeOp) {
    std::set<std::string> covered;
    for (const OpCase &c : all_cases()) covered.insert(c.name);
    const char *ops[] = {"add",      "sub",           "mul",           "div",      "scale",
                         "clamp",    "fill",          "sqrt",          "exp",      "tanh",
                         "gelu",     "silu",          "sigmoid",       "softplus", "relu",
                         "swiglu",   "geglu",         "sum_rows",      "mean",     "argmax",
                         "argsort",  "argsort_top_k", "repeat",        "concat",   "pad",
                         "cont",     "cpy",           "cast",          "get_rows", "set_rows",
                         "mul_mat",  "mul_mat_id",    "norm",          "rms_norm", "rope",
                         "soft_max", "diag_mask_inf", "flash_attn_ext"};
    for (const char *op : ops) {
        const std::string prefix = std::string(op) + "_";
        const bool found = std::any_of(covered.begin(), covered.end(), [&](const std::string &n) {
            return n.rfind(prefix, 0) == 0;
        });
        EXPECT_TRUE(found) << "no harness case for " << op;
    }
}

}  // namespace
}  // namespace loom::test
