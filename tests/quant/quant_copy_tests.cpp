// cpy / cast and set_rows into and out of block formats go through the traits' whole-row
// conversions; a copy within one block type moves the bytes unchanged.
#include <gtest/gtest.h>

#include <cstring>

#include "loom/cpu.h"
#include "tests/quant/quant_test_util.h"

namespace loom {
namespace {

using quant_test::dequantize;
using quant_test::quantize;
using quant_test::random_row;

constexpr int64_t kCols = 64, kRows = 3;

std::vector<float> random_matrix(uint32_t seed) {
    return random_row(kCols * kRows, seed);
}

std::vector<std::byte> bytes_of(const Tensor *t) {
    const auto *p = static_cast<const std::byte *>(t->data);
    return {p, p + t->nbytes()};
}

class BlockCopy : public ::testing::TestWithParam<DType> {};

TEST_P(BlockCopy, CastToBlocksQuantizesLikeTheReferenceAndBack) {
    const DType type = GetParam();
    const std::vector<float> x = random_matrix(11);
    Context ctx({.mem_size = 1u << 20});
    Tensor *src = ctx.new_tensor(DType::F32, {kCols, kRows});
    std::memcpy(src->data, x.data(), x.size() * sizeof(float));
    Tensor *blocks = cast(ctx, src, type);
    Tensor *same = cpy(ctx, blocks, ctx.new_tensor(type, {kCols, kRows}));
    Tensor *back = cast(ctx, same, DType::F32);
    Graph *g = new_graph(ctx);
    build_forward_expand(g, back);
    CpuBackend(2).graph_compute(*g);

    const std::vector<std::byte> expected = quantize(type, x);
    EXPECT_EQ(bytes_of(blocks), expected);
    EXPECT_EQ(bytes_of(same), expected);  // same type: bytes, not a re-quantization
    const std::vector<float> decoded = dequantize(type, expected, kCols * kRows);
    const auto *b = static_cast<const float *>(back->data);
    EXPECT_EQ(std::vector<float>(b, b + kCols * kRows), decoded);
}

TEST_P(BlockCopy, SetRowsWritesQuantizedRows) {
    const DType type = GetParam();
    const std::vector<float> x = random_matrix(12);
    Context ctx({.mem_size = 1u << 20});
    Tensor *cache = ctx.new_tensor(type, {kCols, 8});
    std::memset(cache->data, 0, cache->nbytes());
    Tensor *rows = ctx.new_tensor(DType::F32, {kCols, kRows});
    std::memcpy(rows->data, x.data(), x.size() * sizeof(float));
    Tensor *idx = ctx.new_tensor(DType::I64, {kRows});
    const int64_t slots[kRows] = {5, 0, 2};
    std::memcpy(idx->data, slots, sizeof slots);
    Graph *g = new_graph(ctx);
    build_forward_expand(g, set_rows(ctx, cache, rows, idx));
    CpuBackend(2).graph_compute(*g);

    const size_t row_bytes = row_size(type, kCols);
    for (int64_t r = 0; r < kRows; ++r) {
        const std::vector<float> one(x.begin() + r * kCols, x.begin() + (r + 1) * kCols);
        const std::vector<std::byte> expected = quantize(type, one);
        const auto *got =
            static_cast<const std::byte *>(cache->data) + size_t(slots[r]) * row_bytes;
        EXPECT_EQ(std::vector<std::byte>(got, got + row_bytes), expected) << "row " << r;
    }
}

TEST(BlockCopyErrors, ReshapingCopyOfBlocksIsRejected) {
    Context ctx({.mem_size = 1u << 20});
    Tensor *src = ctx.new_tensor(DType::F32, {kCols, kRows});
    Tensor *dst = ctx.new_tensor(DType::Q8_0, {kCols * kRows});
    try {
        cpy(ctx, src, dst);
        FAIL() << "expected loom::Error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("[cpy]"), std::string::npos) << e.what();
    }
}

std::string type_name(const ::testing::TestParamInfo<DType> &info) {
    return dtype_name(info.param);
}

INSTANTIATE_TEST_SUITE_P(Formats, BlockCopy,
                         ::testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                           DType::Q8_0),
                         type_name);

}  // namespace
}  // namespace loom
