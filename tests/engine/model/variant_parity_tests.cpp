// Sliding windows of other sizes and layer patterns, no window at all, DeepSeek's attention
// temperature and cohere2, against llama.cpp's logits on variants of the shared fixtures
// (tests/engine/model/fixture_variants.h; variants/README.md says how the references were made).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "loom/error.h"
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
    Context ctx(*model, {.n_ctx = 256,
                         .n_threads = 2,
                         .flash_attn = false,
                         .type_k = DType::F32,
                         .type_v = DType::F32});
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

// The variant called `name`, which the list must have.
FixtureVariant variant_named(const std::string &name) {
    for (const FixtureVariant &v : test::fixture_variants()) {
        if (v.name == name) return v;
    }
    ADD_FAILURE() << "no variant " << name;
    return {};
}

// The message of the loom::Error loading `v` throws ("" and a test failure when none).
std::string load_error(const FixtureVariant &v) {
    const test::Fixture f = test::load_fixture(v.fixture);
    const std::string path = test::write_variant_model(v, f);
    try {
        Model::load(path);
    } catch (const Error &e) {
        return e.what();
    }
    ADD_FAILURE() << "no loom::Error loading " << v.name;
    return "";
}

class VariantKeys : public ::testing::Test {
  protected:
    void TearDown() override {
        if (!test::keep_variant_files()) std::filesystem::remove_all(test::variants_dir());
    }
};

// llama.cpp requires these of cohere2; each missing one is named.
TEST_F(VariantKeys, Cohere2NeedsItsWindowAndLogitScale) {
    for (const char *key : {"attention.sliding_window", "logit_scale"}) {
        FixtureVariant v = variant_named("cohere2");
        v.name = "cohere2-without-key";
        v.dropped = {key};
        std::erase_if(v.keys, [&](const auto &k) { return k.first == key; });
        const std::string msg = load_error(v);
        EXPECT_NE(msg.find(std::string("cohere2.") + key + " is missing"), std::string::npos)
            << msg;
    }
}

TEST_F(VariantKeys, Cohere2RotatesTheWindowLayersOnly) {
    const test::Fixture f = test::load_fixture("command-r");
    const auto model = Model::load(test::write_variant_model(variant_named("cohere2"), f));
    const HParams &hp = model->hparams();
    EXPECT_EQ(hp.swa.n_swa, 8);
    for (int64_t il = 0; il < 4; ++il) {
        EXPECT_EQ(hp.is_swa(il), il != 3) << "layer " << il;  // pattern 4 by default
        EXPECT_EQ(hp.has_rope(il), il != 3) << "layer " << il;
    }
}

// A temperature without the length its floor divides by would divide by zero.
TEST_F(VariantKeys, TemperatureNeedsALength) {
    FixtureVariant v = variant_named("deepseek2-temperature");
    v.name = "deepseek2-temperature-without-length";
    v.keys = {{"attention.temperature_scale", 0.5f}};
    const std::string msg = load_error(v);
    EXPECT_NE(msg.find("deepseek2.attention.temperature_length"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::engine
