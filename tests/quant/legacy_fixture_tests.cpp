// The reference quantizers reproduce llama-quantize: every tensor of the llama-q-<type>
// fixtures (llama-quantize --pure from llama-q-f32-source) is re-quantized from the F32 source
// and compared byte for byte.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <ostream>
#include <string>

#include "loom/gguf.h"
#include "tests/quant/quant_test_util.h"

namespace loom {
namespace {

struct FixtureCase {
    const char *folder;
    DType type;
};

void PrintTo(const FixtureCase &c, std::ostream *os) {
    *os << c.folder;
}

class LegacyFixture : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(LegacyFixture, RequantizedBytesAreIdentical) {
    const FixtureCase c = GetParam();
    const auto dir = quant_test::fixtures_dir();
    const gguf::File source((dir / "llama-q-f32-source" / "model.gguf").string());
    const gguf::File quantized((dir / c.folder / "model.gguf").string());
    int checked = 0;
    for (const gguf::TensorInfo &q : quantized.tensors()) {
        if (q.type != c.type) continue;
        SCOPED_TRACE(q.name);
        const gguf::TensorInfo *f = source.find_tensor(q.name);
        ASSERT_NE(f, nullptr);
        ASSERT_EQ(f->type, DType::F32);
        ASSERT_EQ(f->nelements(), q.nelements());
        const auto src = source.tensor_data(*f);
        const auto expected = quantized.tensor_data(q);
        std::vector<float> x(size_t(f->nelements()));
        std::memcpy(x.data(), src.data(), x.size() * sizeof(float));
        const std::vector<std::byte> bytes = quant_test::quantize(c.type, x);
        ASSERT_EQ(bytes.size(), expected.size());
        EXPECT_EQ(std::memcmp(bytes.data(), expected.data(), bytes.size()), 0);

        std::vector<std::byte> stored(expected.begin(), expected.end());
        const std::vector<float> back = quant_test::dequantize(c.type, stored, q.nelements());
        for (float v : back) ASSERT_TRUE(std::isfinite(v));
        // The file's values stay close to the source: the quantizer, not the comparison, failed.
        EXPECT_LT(quant_test::normalized_rmse(x, back), 0.1);
        ++checked;
    }
    EXPECT_EQ(checked, 16);  // case.json: every 2-D weight (--pure), 16 of them
}

INSTANTIATE_TEST_SUITE_P(Types, LegacyFixture,
                         ::testing::Values(FixtureCase{"llama-q-q4_0", DType::Q4_0},
                                           FixtureCase{"llama-q-q4_1", DType::Q4_1},
                                           FixtureCase{"llama-q-q5_0", DType::Q5_0},
                                           FixtureCase{"llama-q-q5_1", DType::Q5_1},
                                           FixtureCase{"llama-q-q8_0", DType::Q8_0}),
                         [](const auto &info) { return std::string(dtype_name(info.param.type)); });

}  // namespace
}  // namespace loom
