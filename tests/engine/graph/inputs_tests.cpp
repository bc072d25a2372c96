// What the graph inputs write for a ubatch: positions with one or several components per token,
// and for a ubatch mixing token ids and raw embeddings, where each row comes from.
#include <gtest/gtest.h>

#include "engine/graph/graph_inputs.h"
#include "engine/graph/graph_params.h"

namespace loom::engine {
namespace {

std::span<const int32_t> ints(const Tensor *t) {
    return {static_cast<const int32_t *>(t->data), size_t(t->nelements())};
}

GraphParams params_with_positions(std::vector<Pos> pos) {
    GraphParams params;
    params.ubatch.pos = std::move(pos);
    params.ubatch.tokens.assign(params.ubatch.pos.size(), 5);
    params.ubatch.seq_id.assign(params.ubatch.pos.size(), 0);
    return params;
}

TEST(GraphInputs, OnePositionPerToken) {
    loom::Context ctx({.mem_size = 1 << 16});
    InputPos inp;
    inp.pos = ctx.new_tensor(DType::I32, {3});
    const GraphParams params = params_with_positions({7, 8, 9});
    inp.set_input(params);
    EXPECT_EQ(std::vector<int32_t>(ints(inp.pos).begin(), ints(inp.pos).end()),
              (std::vector<int32_t>{7, 8, 9}));
    EXPECT_TRUE(inp.can_reuse(params));
}

TEST(GraphInputs, FourPositionComponentsForMultimodalRope) {
    loom::Context ctx({.mem_size = 1 << 16});
    InputPos inp;
    inp.n_pos_per_embd = 4;
    inp.pos = ctx.new_tensor(DType::I32, {12});
    const GraphParams params = params_with_positions({7, 8, 9});
    inp.set_input(params);
    // Component-major: time, height, width repeat a text token's position; the spare is 0.
    EXPECT_EQ(std::vector<int32_t>(ints(inp.pos).begin(), ints(inp.pos).end()),
              (std::vector<int32_t>{7, 8, 9, 7, 8, 9, 7, 8, 9, 0, 0, 0}));
    EXPECT_TRUE(inp.can_reuse(params));
    EXPECT_FALSE(inp.can_reuse(params_with_positions({1, 2})));
}

TEST(GraphInputs, MixedUbatchTakesEachRowFromItsSource) {
    loom::Context ctx({.mem_size = 1 << 16});
    InputEmbd inp;
    inp.tokens = ctx.new_tensor(DType::I32, {3});
    inp.rows = ctx.new_tensor(DType::I32, {3});
    inp.embd = ctx.new_tensor(DType::F32, {2, 3});
    GraphParams params;
    params.ubatch.tokens = {4, kEmbdToken, 6};
    params.ubatch.embd = {0, 0, 1.5f, 2.5f, 0, 0};
    params.ubatch.pos = {0, 1, 2};
    params.ubatch.seq_id = {0, 0, 0};
    ASSERT_TRUE(params.ubatch.is_mixed());
    inp.set_input(params);
    // The embedding row looks up token 0 (valid, unused) and the select takes row 3 + 1 of the
    // concatenation [lookup rows, raw rows].
    EXPECT_EQ(std::vector<int32_t>(ints(inp.tokens).begin(), ints(inp.tokens).end()),
              (std::vector<int32_t>{4, 0, 6}));
    EXPECT_EQ(std::vector<int32_t>(ints(inp.rows).begin(), ints(inp.rows).end()),
              (std::vector<int32_t>{0, 4, 2}));
    EXPECT_EQ(static_cast<const float *>(inp.embd->data)[2], 1.5f);
}

}  // namespace
}  // namespace loom::engine
