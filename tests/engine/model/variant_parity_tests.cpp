// Sliding windows of other sizes and layer patterns, and no window at all, against llama.cpp's
// logits on variants of the shared fixtures
// (tests/engine/model/fixture_variants.h; variants/README.md says how the references were made).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "tests/engine/model/fixture.h"
#include "tests/engine/model/fixture_variants.h"

namespace loom::engine {
namespace {

using test::FixtureVariant;
using test::nmse;

// parity_tests.cpp's tolerance for these architectures' fixtures, over all kept rows, and ten
// times it for each row.
constexpr double kTolerance = 1e-6;

class VariantParity : public ::testing::TestWithParam<FixtureVariant> {
  protected:
    void TearDown() override {
        if (!test::keep_variant_files()) std::filesystem::remove_all(test::variants_dir());
    }
};

TEST_P(VariantParity, LogitsMatchLlamaCpp) {
    const test::Fixture f = test::load_fixture(GetParam().fixture);
    const auto model = Model::load(test::write_variant_model(GetParam(), f));
    // llama.cpp's context was 256 cells; its iSWA cache then holds the whole prompt too.
    Context ctx(*model, {.n_ctx = 256, .n_threads = 2, .flash_attn = false, .kv_type = DType::F32});
    const std::vector<float> got = test::variant_logits(ctx, f);
    const std::vector<float> want = test::variant_reference(GetParam().name, f.n_vocab);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_LT(nmse(got, want), kTolerance);
    const auto rows = test::variant_rows();
    const auto n = size_t(f.n_vocab);
    for (size_t r = 0; r < rows.size(); ++r) {
        EXPECT_LT(nmse({got.data() + r * n, n}, {want.data() + r * n, n}), 10 * kTolerance)
            << "position " << rows[r];
    }
}

// Each variant moves llama.cpp's logits away from the fixture's own by far more than the
// tolerance, so Loom reading the variant's keys as if they were absent fails the test above.
TEST_P(VariantParity, ReferenceIsNotTheFixtures) {
    const test::Fixture f = test::load_fixture(GetParam().fixture);
    ASSERT_FALSE(f.logits.empty());
    const std::vector<float> want = test::variant_reference(GetParam().name, f.n_vocab);
    EXPECT_GT(nmse(test::fixture_rows(f), want), 1000 * kTolerance);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, VariantParity, ::testing::ValuesIn(test::fixture_variants()),
                         [](const auto &info) {
                             std::string s = info.param.name;
                             std::replace(s.begin(), s.end(), '-', '_');
                             return s;
                         });

}  // namespace
}  // namespace loom::engine
