// BERT against llama.cpp (../shared/fixtures/bert): the prompt's tokens with [CLS] and [SEP], every
// token's final state and the mean-pooled embedding within NMSE 1e-6 (F32) and cosine 0.9999 once
// quantized to Q8_0, and what an encoder
// does differently: no logits, every token seeing its whole sequence (a token's state depends on
// those after it), and sequences in one batch apart from each other.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "engine/context/pooling.h"
#include "engine/quantize/file_types.h"
#include "engine/quantize/quantize.h"
#include "loom/error.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine::test {
namespace {

std::vector<float> read_floats(const std::filesystem::path &path, size_t n) {
    std::vector<float> out(n);
    std::ifstream in(path, std::ios::binary);
    if (!in) ADD_FAILURE() << "missing " << path;
    in.read(reinterpret_cast<char *>(out.data()), std::streamsize(n * sizeof(float)));
    return out;
}

// Each token's state of `tokens` decoded as sequence `seq` (after emptying it), row after row.
std::vector<float> token_states(Context &ctx, const std::vector<int32_t> &tokens, SeqId seq = 0) {
    ctx.memory().seq_rm(seq, 0, -1);
    return all_embeddings(ctx, tokens, seq);
}

TEST(Bert, MatchesLlamaCpp) {
    const Fixture f = load_fixture("bert");
    const auto model = Model::load(f.model_path);
    const int64_t n_embd = model->hparams().n_embd;
    EXPECT_FALSE(model->hparams().causal_attn);
    EXPECT_EQ(model->hparams().pooling, Pooling::mean);
    EXPECT_EQ(model->vocab().tokenize(f.json["prompt_text"].get<std::string>(), true, false),
              f.tokens);

    Context ctx(*model, {.n_ctx = 256, .n_threads = 2});
    const std::vector<float> states = token_states(ctx, f.tokens);
    const auto want_states =
        read_floats(f.dir / f.json["token_embeddings_file"].get<std::string>(), states.size());
    EXPECT_LT(nmse(std::span<const float>(states), std::span<const float>(want_states)), 1e-6);

    const std::vector<float> pooled = pool(states, n_embd, model->hparams().pooling);
    const auto want_pooled = f.json["pooled"].get<std::vector<float>>();
    EXPECT_LT(nmse(std::span<const float>(pooled), std::span<const float>(want_pooled)), 1e-6);
    EXPECT_THROW(ctx.logits(0), Error);
}

// Quantized to Q8_0 (every matrix), the pooled embedding stays within cosine 0.9999 of
// llama.cpp's F32 one.
TEST(Bert, Q8_0KeepsThePooledEmbedding) {
    const Fixture f = load_fixture("bert");
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("loom-bert-q8_0-" + std::to_string(getpid()) + ".gguf"))
                                 .string();
    QuantizeOptions options;
    options.file_type = find_file_type("Q8_0");
    options.pure = true;
    options.n_threads = 2;
    const QuantizeReport report = quantize_file(f.model_path, path, options);
    EXPECT_TRUE(std::any_of(report.tensors.begin(), report.tensors.end(),
                            [](const QuantizedTensor &t) { return t.to == DType::Q8_0; }));
    const auto model = Model::load(path);
    std::filesystem::remove(path);
    Context ctx(*model, {.n_ctx = 256, .n_threads = 2});
    const std::vector<float> pooled =
        pool(token_states(ctx, f.tokens), model->hparams().n_embd, Pooling::mean);
    const auto want = f.json["pooled"].get<std::vector<float>>();
    double dot = 0.0, a2 = 0.0, b2 = 0.0;
    for (size_t i = 0; i < want.size(); ++i) {
        dot += double(pooled[i]) * want[i];
        a2 += double(pooled[i]) * pooled[i];
        b2 += double(want[i]) * want[i];
    }
    EXPECT_GE(dot / std::sqrt(a2 * b2), 0.9999);
}

TEST(Bert, EveryTokenSeesItsWholeSequenceAndNoOther) {
    const Fixture f = load_fixture("bert");
    const auto model = Model::load(f.model_path);
    const auto n_embd = size_t(model->hparams().n_embd);
    Context ctx(*model, {.n_ctx = 256, .n_threads = 2, .n_seq_max = 2});
    const std::vector<int32_t> a(f.tokens.begin(), f.tokens.begin() + 12);
    std::vector<int32_t> b = a;
    b.back() = f.tokens[20];  // the same beginning, another last token
    const std::vector<float> alone_a = token_states(ctx, a), alone_b = token_states(ctx, b);
    // Not causal: the first token's state already differs with the last token.
    EXPECT_GT(nmse(std::span<const float>(alone_a).first(n_embd),
                   std::span<const float>(alone_b).first(n_embd)),
              1e-6);

    // Both in one batch, as two sequences: each as it was alone.
    ctx.memory().seq_rm(0, 0, -1);
    Batch batch;
    for (size_t i = 0; i < a.size(); ++i) batch.add(a[i], Pos(i), 0, true);
    for (size_t i = 0; i < b.size(); ++i) batch.add(b[i], Pos(i), 1, true);
    ctx.decode(batch);
    for (size_t i = 0; i < a.size(); ++i) {
        const auto got_a = ctx.embeddings(int64_t(i));
        const auto got_b = ctx.embeddings(int64_t(a.size() + i));
        EXPECT_LT(nmse(got_a, std::span<const float>(alone_a).subspan(i * n_embd, n_embd)), 1e-10)
            << i;
        EXPECT_LT(nmse(got_b, std::span<const float>(alone_b).subspan(i * n_embd, n_embd)), 1e-10)
            << i;
    }
}

}  // namespace
}  // namespace loom::engine::test
