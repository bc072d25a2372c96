// Models whose positions are learned embeddings added to the input (GPT-2): the cached K holds
// no rotation, so shifting a sequence's positions must leave it as it is.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "engine/context/context.h"
#include "engine/memory/kv_cache.h"
#include "loom/error.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

// The bytes of the first n cells of every layer's K.
std::vector<std::byte> cached_k(const Model &model, Context &ctx, size_t n) {
    std::vector<std::byte> out;
    for (int64_t il = 0; il < model.hparams().n_layer; ++il) {
        const Tensor *k = ctx.memory().cache(0).k(il);
        const auto *data = static_cast<const std::byte *>(k->data);
        out.insert(out.end(), data, data + n * k->nb[1]);
    }
    return out;
}

TEST(LearnedPositions, SeqAddLeavesTheCachedKeysAlone) {
    const auto f = test::load_fixture("gpt2");
    ASSERT_FALSE(f.tokens.empty());
    const auto model = Model::load(f.model_path);
    Context ctx(*model, {.n_ctx = 256, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32});
    const size_t n = f.tokens.size() - 1;
    Batch batch;
    for (size_t i = 0; i < n; ++i) batch.add(f.tokens[i], Pos(i), 0, i + 1 == n);
    ctx.decode(batch);
    const std::vector<std::byte> before = cached_k(*model, ctx, n);

    const Pos shift = 7;
    ctx.memory().seq_add(0, 0, -1, shift);
    batch.clear();
    batch.add(f.tokens[n], Pos(n) + shift, 0, true);
    ctx.decode(batch);  // where a shift is applied
    EXPECT_TRUE(cached_k(*model, ctx, n) == before);
    for (float x : ctx.logits(0)) ASSERT_TRUE(std::isfinite(x));
}

// The position table has n_ctx_train rows: a position past it is an error, not a zero vector.
TEST(LearnedPositions, PositionPastTheTableIsRefused) {
    const auto f = test::load_fixture("gpt2");
    const auto model = Model::load(f.model_path);
    const int64_t n_ctx_train = model->hparams().n_ctx_train;
    Context ctx(*model, {.n_ctx = 512, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32});
    Batch batch;
    batch.add(f.tokens[0], Pos(n_ctx_train), 0, true);
    try {
        ctx.decode(batch);
        FAIL() << "decoded a position past the learned ones";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("past the model's " + std::to_string(n_ctx_train) +
                                             " learned positions"),
                  std::string::npos)
            << e.what();
    }
    batch.clear();
    batch.add(f.tokens[0], Pos(n_ctx_train - 1), 0, true);
    ctx.decode(batch);  // the last row is fine
}

}  // namespace
}  // namespace loom::engine
