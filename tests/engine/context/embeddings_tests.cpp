// ContextOptions::embeddings: each output's final hidden state, checked against the logits it
// gives through the output matrix computed here in double precision.
#include <gtest/gtest.h>

#include "engine/context/context.h"
#include "loom/error.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

using test::load_fixture;

TEST(Embeddings, AreTheHiddenStateTheLogitsComeFrom) {
    const auto f = load_fixture("stories260K");  // F32 output matrix, no logit scale or softcap
    const auto model = Model::load(f.model_path);
    Context ctx(*model, {.n_ctx = 256, .n_threads = 2, .embeddings = true});
    Batch batch;
    for (size_t i = 0; i < f.tokens.size(); ++i) batch.add(f.tokens[i], Pos(i), 0, i % 3 == 0);
    ctx.decode(batch);

    const gguf::TensorInfo *output = model->file().find_tensor("output.weight");
    ASSERT_NE(output, nullptr);
    ASSERT_EQ(output->type, DType::F32);
    const auto *w = reinterpret_cast<const float *>(model->file().tensor_data(*output).data());
    const int64_t n_embd = model->hparams().n_embd, n_vocab = model->hparams().n_vocab;
    ASSERT_GT(ctx.n_outputs(), 2);
    for (int64_t i = 0; i < ctx.n_outputs(); ++i) {
        const auto e = ctx.embeddings(i);
        ASSERT_EQ(int64_t(e.size()), n_embd);
        std::vector<double> want(size_t(n_vocab), 0.0);
        for (int64_t v = 0; v < n_vocab; ++v) {
            for (int64_t k = 0; k < n_embd; ++k)
                want[size_t(v)] += double(w[v * n_embd + k]) * e[size_t(k)];
        }
        EXPECT_LT(test::nmse<double>(ctx.logits(i), want), 1e-10) << "output " << i;
    }
}

TEST(Embeddings, RefusedFromAContextWithoutThem) {
    const auto model = Model::load(load_fixture("stories260K").model_path);
    Context ctx(*model, {.n_ctx = 64, .n_threads = 1});
    Batch batch;
    batch.add(1, 0, 0, true);
    ctx.decode(batch);
    EXPECT_THROW(ctx.embeddings(0), Error);
    Context with(*model, {.n_ctx = 64, .n_threads = 1, .embeddings = true});
    with.decode(batch);
    EXPECT_THROW(with.embeddings(1), Error);
    EXPECT_EQ(with.embeddings(0).size(), size_t(model->hparams().n_embd));
}

}  // namespace
}  // namespace loom::engine
