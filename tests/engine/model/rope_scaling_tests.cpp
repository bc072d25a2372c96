// RoPE scaling read as llama.cpp reads it: linear, none, YaRN (normal mode here; NeoX and
// DeepSeek's mscale in the qwen2-yarn / deepseek2-yarn parity cases) and LongRoPE's long and short
// factors, against llama.cpp's logits on variants of stories260K; and the keys' errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "engine/model/rope.h"
#include "loom/error.h"
#include "tests/engine/model/fixture.h"
#include "tests/engine/model/rope_variants.h"

namespace loom::engine {
namespace {

using test::load_fixture;
using test::nmse;

std::filesystem::path temp_dir() {
    return std::filesystem::temp_directory_path() /
           ("loom-rope-tests-" + std::to_string(::getpid()));
}

class RopeScalingTest : public ::testing::TestWithParam<test::RopeVariant> {
  protected:
    void SetUp() override { std::filesystem::create_directories(temp_dir()); }
    void TearDown() override { std::filesystem::remove_all(temp_dir()); }
};

std::vector<float> reference_logits(const std::string &name, size_t n) {
    const auto path = std::filesystem::path(LOOM_SOURCE_DIR) / "tests/engine/model/rope_scaling" /
                      (name + ".f32");
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in) << "missing " << path;
    std::vector<float> out(n);
    in.read(reinterpret_cast<char *>(out.data()), std::streamsize(n * sizeof(float)));
    EXPECT_EQ(size_t(in.gcount()), n * sizeof(float)) << path << " is short";
    return out;
}

TEST_P(RopeScalingTest, LogitsMatchLlamaCpp) {
    const test::Fixture f = load_fixture("stories260K");
    const std::string path = (temp_dir() / (GetParam().name + ".gguf")).string();
    test::write_rope_variant(GetParam(), f.model_path, path);
    const auto model = Model::load(path);
    // llama.cpp's context was 256 cells: LongRoPE chooses its factors by it.
    Context ctx(*model, {.n_ctx = 256,
                         .n_threads = 2,
                         .flash_attn = false,
                         .type_k = DType::F32,
                         .type_v = DType::F32});
    const std::vector<float> got = test::all_logits(ctx, f.tokens);
    const std::vector<float> want = reference_logits(GetParam().name, got.size());
    EXPECT_LT(nmse(got, want), 1e-10);
}

INSTANTIATE_TEST_SUITE_P(Stories260K, RopeScalingTest, ::testing::ValuesIn(test::rope_variants()),
                         [](const auto &info) {
                             std::string s = info.param.name;
                             std::replace(s.begin(), s.end(), '-', '_');
                             return s;
                         });

// The YaRN fixtures' parameters as llama.cpp's context computes them: ext_factor 1, and an
// attn_factor that cancels the kernel's own magnitude correction.
TEST(RopeParams, YarnAsLlamaCppComputesThem) {
    const auto model = Model::load(load_fixture("qwen2-yarn").model_path);
    const RopeParams p = rope_params(*model);
    EXPECT_EQ(p.ext_factor, 1.0f);
    EXPECT_EQ(p.freq_scale, 0.25f);
    EXPECT_EQ(p.n_ctx_orig, 32);
    const float correction = 1.0f + 0.1f * std::log(4.0f);
    EXPECT_FLOAT_EQ(p.attn_factor * correction, correction);  // YaRN's mscale, 1 + 0.1 ln 4
    EXPECT_EQ(yarn_kq_mscale2(*model), correction * correction);
    EXPECT_EQ(model->hparams().n_ctx_max(), 512);  // 32 * 4 = 128 < the training context

    const auto deepseek = Model::load(load_fixture("deepseek2-yarn").model_path);
    const HParams &hp = deepseek->hparams();
    EXPECT_FLOAT_EQ(hp.yarn_log_mul, 0.707f);  // the file's 0.0707 / 0.1
    EXPECT_EQ(hp.yarn_mscale, hp.yarn_log_mul);
    // mscale / mscale_all_dim = 1, so the rotation is not scaled in the end.
    EXPECT_FLOAT_EQ(rope_params(*deepseek).attn_factor, 1.0f / correction);
    const float mscale = 1.0f + 0.1f * 0.707f * std::log(4.0f);
    EXPECT_FLOAT_EQ(yarn_kq_mscale2(*deepseek), mscale * mscale);
}

// The keys of a small llama, plus `extra`.
gguf::Metadata llama_keys(const std::vector<std::pair<std::string, gguf::Value>> &extra) {
    gguf::Metadata meta;
    meta.set("general.architecture", std::string("llama"));
    meta.set("llama.context_length", uint32_t(4096));
    meta.set("llama.embedding_length", uint32_t(64));
    meta.set("llama.block_count", uint32_t(2));
    meta.set("llama.feed_forward_length", uint32_t(128));
    meta.set("llama.attention.head_count", uint32_t(4));
    for (const auto &[key, value] : extra) meta.set(key, value);
    return meta;
}

std::string hparams_error(const std::vector<std::pair<std::string, gguf::Value>> &extra) {
    try {
        HParams::from_gguf(llama_keys(extra));
    } catch (const Error &e) {
        return e.what();
    }
    ADD_FAILURE() << "no loom::Error thrown";
    return "";
}

TEST(RopeScalingKeys, DefaultsAreLlamaCpps) {
    const HParams hp = HParams::from_gguf(llama_keys({}));
    EXPECT_EQ(hp.rope_scaling, RopeScaling::linear);  // "linear" when the key is absent
    EXPECT_EQ(hp.rope_freq_scale, 1.0f);
    EXPECT_EQ(hp.rope_attn_factor, 1.0f);
    EXPECT_EQ(hp.n_ctx_orig, 4096);
    EXPECT_EQ(hp.n_ctx_max(), 4096);
}

TEST(RopeScalingKeys, YarnStretchesTheContext) {
    const HParams hp = HParams::from_gguf(
        llama_keys({{"llama.rope.scaling.type", std::string("yarn")},
                    {"llama.rope.scaling.factor", 4.0f},
                    {"llama.rope.scaling.original_context_length", uint32_t(4096)}}));
    EXPECT_EQ(hp.rope_scaling, RopeScaling::yarn);
    EXPECT_EQ(hp.n_ctx_max(), 16384);
    // Linear scaling's context_length is already the stretched one.
    const HParams linear = HParams::from_gguf(llama_keys(
        {{"llama.rope.scaling.type", std::string("linear")}, {"llama.rope.scale_linear", 2.0f}}));
    EXPECT_EQ(linear.rope_freq_scale, 0.5f);  // the old key
    EXPECT_EQ(linear.n_ctx_max(), 4096);
}

TEST(RopeScalingKeys, BadValuesAreNamed) {
    std::string msg = hparams_error({{"llama.rope.scaling.type", std::string("dynamic")}});
    EXPECT_NE(msg.find("llama.rope.scaling.type"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dynamic"), std::string::npos) << msg;
    EXPECT_NE(msg.find("yarn"), std::string::npos) << msg;
    msg = hparams_error({{"llama.rope.scaling.factor", -2.0f}});
    EXPECT_NE(msg.find("llama.rope.scaling.factor = -2"), std::string::npos) << msg;
    msg = hparams_error({{"llama.rope.scaling.attn_factor", 0.0f}});
    EXPECT_NE(msg.find("llama.rope.scaling.attn_factor"), std::string::npos) << msg;
    msg = hparams_error({{"llama.rope.scaling.original_context_length", int32_t(-1)}});
    EXPECT_NE(msg.find("original_context_length"), std::string::npos) << msg;
    msg = hparams_error({{"llama.rope.scaling.type", uint32_t(2)}});
    EXPECT_NE(msg.find("llama.rope.scaling.type"), std::string::npos) << msg;
}

}  // namespace
}  // namespace loom::engine
