// Unfused attention (flash attention off, Loom's default) on shapes none of the shared fixtures
// has, against llama.cpp's logits (attention_order/generate.sh): 3 query heads per KV head, and
// 80-value heads, whose scores end with 16 terms past the last whole step of 32. With weights
// whose products Loom computes as llama.cpp does (Q4_0, Q2_K, Q5_K, Q6_K, Q8_0), the scores,
// probabilities and V products summed in llama.cpp's orders (SumOrder) give its logits to the bit
// here; summed in k order, one rounding of a probability moved an 8-bit activation by a step and
// the logits by NMSE 3e-4 (Q6_K, 768 wide, from position 11).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "engine/context/context.h"
#include "engine/model/synthetic_llama.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

using test::nmse;

constexpr int64_t kKeptRows = 8;  // the last positions generate.sh keeps
const std::vector<int32_t> kTokens = {124, 330, 517, 977, 527, 665, 883, 978, 108, 908,
                                      231, 919, 618, 639, 572, 433, 805, 589, 563, 865,
                                      751, 798, 789, 505, 772, 794, 603, 454, 248, 5,
                                      631, 85,  116, 297, 839, 103, 463, 14,  837, 915};

struct SynthModel {
    LlamaShape shape;
    uint32_t seed;
};
// generate.sh's models
const std::map<std::string, SynthModel> kShapes = {
    {"gqa3",
     {{.n_vocab = 1024, .n_embd = 768, .n_layer = 2, .n_head = 12, .n_head_kv = 4, .n_ff = 1024},
      321}},
    {"head80",
     {{.n_vocab = 1024, .n_embd = 640, .n_layer = 2, .n_head = 8, .n_head_kv = 2, .n_ff = 1024},
      77}},
};

struct OrderCase {
    const char *shape;
    DType weights;
    DType kv;
};

std::string case_name(const ::testing::TestParamInfo<OrderCase> &info) {
    return std::string(info.param.shape) + "_" + dtype_name(info.param.weights) + "_kv_" +
           dtype_name(info.param.kv);
}

// The model file, written at its first use and removed when the test program ends.
std::string model_path(const std::string &shape, DType weights) {
    struct SynthFiles {
        std::map<std::string, std::filesystem::path> paths;
        ~SynthFiles() {
            for (const auto &[name, path] : paths) std::filesystem::remove(path);
        }
    };
    static SynthFiles files;
    const std::string name = shape + "." + dtype_name(weights);
    auto [it, added] = files.paths.try_emplace(name);
    if (added) {
        it->second = std::filesystem::temp_directory_path() /
                     ("loom-attention-order-" + name + "-" + std::to_string(::getpid()) + ".gguf");
        const SynthModel &m = kShapes.at(shape);
        write_synthetic_llama(it->second.string(), m.shape, weights, m.seed);
    }
    return it->second.string();
}

class AttentionOrder : public ::testing::TestWithParam<OrderCase> {};

TEST_P(AttentionOrder, MatchesLlamaCpp) {
    const OrderCase &c = GetParam();
    const int64_t n_vocab = kShapes.at(c.shape).shape.n_vocab;
    const auto path = std::filesystem::path(LOOM_SOURCE_DIR) /
                      "tests/engine/model/attention_order" /
                      (std::string(c.shape) + "." + dtype_name(c.weights) + "." +
                       (c.kv == DType::F32 ? "f32" : "f16") + ".f32");
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "missing " << path << " (tests/engine/model/attention_order/generate.sh)";
    std::vector<float> want(size_t(kKeptRows * n_vocab));
    in.read(reinterpret_cast<char *>(want.data()), std::streamsize(want.size() * sizeof(float)));
    ASSERT_TRUE(in) << path << " is short";

    const auto model = Model::load(model_path(c.shape, c.weights));
    Context ctx(
        *model,
        {.n_ctx = 256, .n_threads = 2, .flash_attn = false, .type_k = c.kv, .type_v = c.kv});
    const std::vector<float> all = test::all_logits(ctx, kTokens);
    const std::span<const float> got = std::span(all).last(want.size());
    // parity_tests.cpp's tolerance for weights whose products are llama.cpp's
    for (int64_t r = 0; r < kKeptRows; ++r) {
        const auto row = [&](std::span<const float> v) {
            return v.subspan(size_t(r * n_vocab), size_t(n_vocab));
        };
        EXPECT_LT(nmse(row(got), row(std::span<const float>(want))), 1e-12)
            << "position " << int64_t(kTokens.size()) - kKeptRows + r;
    }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionOrder,
    ::testing::Values(
        OrderCase{"gqa3", DType::Q4_0, DType::F32}, OrderCase{"gqa3", DType::Q4_0, DType::F16},
        OrderCase{"gqa3", DType::Q6_K, DType::F32}, OrderCase{"gqa3", DType::Q6_K, DType::F16},
        OrderCase{"gqa3", DType::Q2_K, DType::F32}, OrderCase{"gqa3", DType::Q2_K, DType::F16},
        OrderCase{"gqa3", DType::Q5_K, DType::F32}, OrderCase{"gqa3", DType::Q5_K, DType::F16},
        OrderCase{"gqa3", DType::Q8_0, DType::F32}, OrderCase{"gqa3", DType::Q8_0, DType::F16},
        OrderCase{"head80", DType::Q4_0, DType::F32}, OrderCase{"head80", DType::Q4_0, DType::F16}),
    case_name);

}  // namespace
}  // namespace loom::engine
