// The K-quant reference quantizers write the bytes llama-quantize wrote: every K-type tensor of
// the llama-q-* fixtures equals the F32 source tensor quantized here, and dequantizes to finite
// values. The fixtures were quantized without an importance matrix (see each case.json's
// generator), which is the path the reference quantizers reproduce.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "loom/gguf.h"
#include "loom/tensor.h"
#include "tests/quant/quant_test_util.h"

namespace loom {
namespace {

using quant_test::fixtures_dir;

bool is_k_quant(DType type) {
    switch (type) {
        case DType::Q2_K:
        case DType::Q3_K:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
            return true;
        default:
            return false;
    }
}

class KFixture : public testing::TestWithParam<const char *> {};

TEST_P(KFixture, TensorsMatchReferenceQuantizerBytes) {
    const auto source_path = fixtures_dir() / "llama-q-f32-source" / "model.gguf";
    const auto fixture_path = fixtures_dir() / GetParam() / "model.gguf";
    ASSERT_TRUE(std::filesystem::is_regular_file(source_path)) << source_path << " is missing";
    ASSERT_TRUE(std::filesystem::is_regular_file(fixture_path)) << fixture_path << " is missing";
    const gguf::File source(source_path.string());
    const gguf::File fixture(fixture_path.string());

    int n_checked = 0;
    for (const gguf::TensorInfo &t : fixture.tensors()) {
        if (!is_k_quant(t.type)) continue;
        SCOPED_TRACE(t.name + " " + dtype_name(t.type));
        const gguf::TensorInfo *src = source.find_tensor(t.name);
        ASSERT_NE(src, nullptr);
        ASSERT_EQ(src->type, DType::F32);
        ASSERT_EQ(src->nelements(), t.nelements());

        const auto src_bytes = source.tensor_data(*src);
        std::vector<float> x(size_t(src->nelements()));
        std::memcpy(x.data(), src_bytes.data(), x.size() * sizeof(float));
        const auto expected = fixture.tensor_data(t);
        std::vector<std::byte> ours(expected.size());
        traits(t.type).from_float(x.data(), ours.data(), t.nelements());

        size_t first_diff = 0;
        while (first_diff < ours.size() && ours[first_diff] == expected[first_diff]) ++first_diff;
        EXPECT_EQ(first_diff, ours.size()) << "first differing byte " << first_diff << " (block "
                                           << first_diff / traits(t.type).type_size << ")";

        std::vector<float> y(size_t(t.nelements()));
        traits(t.type).to_float(expected.data(), y.data(), t.nelements());
        for (float v : y) ASSERT_TRUE(std::isfinite(v));
        ++n_checked;
    }
    EXPECT_GT(n_checked, 0) << "no K-quant tensor in " << GetParam();
}

INSTANTIATE_TEST_SUITE_P(LlamaQ, KFixture,
                         testing::Values("llama-q-q2_k", "llama-q-q3_k", "llama-q-q4_k",
                                         "llama-q-q5_k", "llama-q-q6_k", "llama-q-q4_k_m",
                                         "llama-q-q5_k_m"),
                         [](const auto &info) {
                             std::string name = info.param;
                             for (char &c : name) {
                                 if (c == '-') c = '_';
                             }
                             return name;
                         });

}  // namespace
}  // namespace loom
