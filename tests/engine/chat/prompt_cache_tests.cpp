// PromptCache on stories260K: a longer prompt that extends the cached one decodes only its new
// tokens, a prompt that diverges drops the cached tail, and the logits after each match those of
// a context that decoded the whole prompt at once.
#include "engine/chat/prompt_cache.h"

#include <gtest/gtest.h>

#include <cmath>

#include "loom/error.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

using Tokens = std::vector<int32_t>;

ContextOptions options() {
    return {.n_ctx = 64, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32};
}

std::vector<float> fresh_logits(const Model &model, const Tokens &tokens) {
    Context ctx(model, options());
    PromptCache cache(ctx);
    cache.assign(tokens);
    const auto row = ctx.logits(0);
    return {row.begin(), row.end()};
}

float max_abs_diff(std::span<const float> a, std::span<const float> b) {
    float diff = 0.0f;
    for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
    return diff;
}

class PromptCacheTest : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto f = test::load_fixture("stories260K");
        ASSERT_GE(f.tokens.size(), 20u);
        tokens_ = Tokens(f.tokens.begin(), f.tokens.begin() + 20);
        model_ = Model::load(f.model_path);
    }
    Tokens prefix(size_t n) const { return {tokens_.begin(), tokens_.begin() + ptrdiff_t(n)}; }

    Tokens tokens_;
    std::unique_ptr<Model> model_;
};

TEST_F(PromptCacheTest, DecodesOnlyPastTheCommonPrefix) {
    Context ctx(*model_, options());
    PromptCache cache(ctx);
    EXPECT_EQ(cache.assign(prefix(12)), 12);
    EXPECT_EQ(cache.assign(prefix(20)), 8);
    EXPECT_EQ(cache.size(), 20);
    EXPECT_EQ(ctx.memory().seq_pos_max(0), 19);
    EXPECT_LT(max_abs_diff(ctx.logits(0), fresh_logits(*model_, prefix(20))), 1e-4f);

    // The same prompt again: its last token is decoded again for its logits.
    EXPECT_EQ(cache.assign(prefix(20)), 1);
    EXPECT_LT(max_abs_diff(ctx.logits(0), fresh_logits(*model_, prefix(20))), 1e-4f);
}

TEST_F(PromptCacheTest, DropsTheTailThatDiverges) {
    Context ctx(*model_, options());
    PromptCache cache(ctx);
    cache.assign(prefix(20));
    Tokens diverging = prefix(10);
    diverging.insert(diverging.end(), {tokens_[15], tokens_[16], tokens_[17]});
    EXPECT_EQ(cache.assign(diverging), 3);
    EXPECT_EQ(cache.size(), 13);
    EXPECT_EQ(ctx.memory().seq_pos_max(0), 12);
    EXPECT_LT(max_abs_diff(ctx.logits(0), fresh_logits(*model_, diverging)), 1e-4f);
}

TEST_F(PromptCacheTest, AppendAndClear) {
    Context ctx(*model_, options());
    PromptCache cache(ctx);
    cache.assign(prefix(19));
    cache.append(tokens_[19]);
    EXPECT_EQ(Tokens(cache.tokens().begin(), cache.tokens().end()), prefix(20));
    EXPECT_LT(max_abs_diff(ctx.logits(0), fresh_logits(*model_, prefix(20))), 1e-4f);
    EXPECT_TRUE(cache.fits(44));
    EXPECT_FALSE(cache.fits(45));
    cache.clear();
    EXPECT_EQ(cache.size(), 0);
    EXPECT_EQ(ctx.memory().seq_pos_max(0), -1);
}

TEST_F(PromptCacheTest, RejectsEmptyAndOversizedPrompts) {
    Context ctx(*model_, options());
    PromptCache cache(ctx);
    EXPECT_THROW(cache.assign(Tokens{}), Error);
    EXPECT_THROW(cache.assign(Tokens(65, tokens_[1])), Error);
    EXPECT_EQ(cache.size(), 0);
}

}  // namespace
}  // namespace loom::engine
