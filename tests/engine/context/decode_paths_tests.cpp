// The same computation by different routes: a reused graph against rebuilt ones, flash against
// naive attention, one ubatch against many.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "engine/context/context.h"
#include "engine/memory/kv_cache.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

using test::argmax;
using test::bit_identical;
using test::load_fixture;
using test::nmse;

using Tokens = std::vector<int32_t>;

struct Generation {
    Tokens tokens;                           // greedy choices
    std::vector<std::vector<float>> logits;  // the logits each choice was made from
};

// The prompt in one batch, then one token per decode, `n` greedy tokens.
Generation generate(Context &ctx, const Tokens &prompt, int n) {
    Generation g;
    Batch batch;
    for (size_t i = 0; i < prompt.size(); ++i) {
        batch.add(prompt[i], Pos(i), 0, i + 1 == prompt.size());
    }
    Pos pos = Pos(prompt.size());
    for (int step = 0; step < n; ++step) {
        ctx.decode(batch);
        const auto row = ctx.logits(0);
        g.logits.emplace_back(row.begin(), row.end());
        g.tokens.push_back(argmax(row));
        batch.clear();
        batch.add(g.tokens.back(), pos++, 0, true);
    }
    return g;
}

// The graphs that single-token steps attending over the cells before `first`, then before each
// count up to `last`, build: one per attention window (KvCache::kWindowPad cells) they reach.
int64_t step_graphs(int64_t first, int64_t last) {
    const int64_t pad = KvCache::kWindowPad;
    return (last + pad - 1) / pad - (first + pad - 1) / pad + 1;
}

class ContextDecodePaths : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto f = load_fixture("stories260K");
        ASSERT_FALSE(f.tokens.empty());
        prompt_ = f.tokens;
        model_ = Model::load(f.model_path);
    }
    ContextOptions options(DType kv_type = DType::F32) const {
        return {.n_ctx = 256, .n_threads = 2, .type_k = kv_type, .type_v = kv_type};
    }
    Tokens prompt_;
    std::unique_ptr<Model> model_;
};

TEST_F(ContextDecodePaths, GraphReuseBuildsOncePerWindowAndChangesNoBit) {
    const int n = 64;
    Context reused(*model_, options());
    const Generation a = generate(reused, prompt_, n);
    // One graph for the prompt, one for the single-token steps after it in each window.
    const auto p = int64_t(prompt_.size());
    const int64_t builds = 1 + step_graphs(p + 1, p + n - 1);
    EXPECT_EQ(reused.stats().graph_builds, builds);
    EXPECT_EQ(reused.stats().graph_reuses, n - builds);

    ContextOptions o = options();
    o.graph_reuse = false;
    Context rebuilt(*model_, o);
    const Generation b = generate(rebuilt, prompt_, n);
    EXPECT_EQ(rebuilt.stats().graph_builds, n);
    EXPECT_EQ(rebuilt.stats().graph_reuses, 0);

    EXPECT_EQ(a.tokens, b.tokens);
    ASSERT_EQ(a.logits.size(), b.logits.size());
    for (size_t i = 0; i < a.logits.size(); ++i) {
        EXPECT_TRUE(bit_identical(a.logits[i], b.logits[i])) << "step " << i;
    }
}

// A prompt fed in chunks of 5, 7, 6, 8 and 3 tokens, then 8 generated: with padding the chunks
// are 8 tokens each (engine/context/ubatch_padding.h) and share one graph; every logit is the
// same bit for bit as without padding, where each size builds its own.
TEST_F(ContextDecodePaths, PaddedUbatchesShareGraphsAndChangeNoBit) {
    const std::vector<int> chunks = {5, 7, 6, 8, 3};
    auto run = [&](bool pad) {
        ContextOptions o = options();
        o.pad_ubatches = pad;
        Context ctx(*model_, o);
        std::vector<std::vector<float>> logits;
        Pos pos = 0;
        for (const int n : chunks) {
            Batch batch;
            for (int i = 0; i < n; ++i, ++pos) {
                batch.add(prompt_[size_t(pos) % prompt_.size()], pos, 0, i == n - 1 || i == 1);
            }
            ctx.decode(batch);
            for (int64_t r = 0; r < ctx.n_outputs(); ++r) {
                logits.emplace_back(ctx.logits(r).begin(), ctx.logits(r).end());
            }
        }
        for (int step = 0; step < 8; ++step, ++pos) {
            Batch batch;
            batch.add(argmax(logits.back()), pos, 0, true);
            ctx.decode(batch);
            logits.emplace_back(ctx.logits(0).begin(), ctx.logits(0).end());
        }
        return std::pair{logits, ctx.stats()};
    };
    const auto [padded, padded_stats] = run(true);
    const auto [plain, plain_stats] = run(false);
    // The chunks fill 29 cells; the steps attend over 30 to 37.
    const int64_t steps = step_graphs(30, 37);
    EXPECT_EQ(plain_stats.graph_builds, 5 + steps);   // five chunk sizes, then one token
    EXPECT_EQ(padded_stats.graph_builds, 2 + steps);  // 8, then 4 (the last chunk), then 1
    ASSERT_EQ(padded.size(), plain.size());
    for (size_t i = 0; i < plain.size(); ++i) {
        EXPECT_TRUE(bit_identical(padded[i], plain[i])) << "output " << i;
    }
}

// A 200-token prompt: the 64 steps cross attention windows (KvCache::kWindowPad cells each), so
// the graph is built for the prompt and once per window the steps reach, and reused in between.
TEST_F(ContextDecodePaths, GraphReuseAcrossTheWindowPad) {
    const auto f = load_fixture("stories260K-p200");
    ASSERT_EQ(f.tokens.size(), 200u);
    const int n = 64;
    // Decode 0 is the prompt; decode j > 0 attends over the cells before 200 + j.
    const int64_t windows = step_graphs(201, 200 + n - 1);
    ASSERT_GE(windows, 2) << "the steps should cross a window";
    ContextOptions o = options();
    o.n_ctx = 512;
    Context reused(*model_, o);
    const Generation a = generate(reused, f.tokens, n);
    EXPECT_EQ(reused.stats().graph_builds, 1 + windows);
    EXPECT_EQ(reused.stats().graph_reuses, n - 1 - windows);
    o.graph_reuse = false;
    Context rebuilt(*model_, o);
    const Generation b = generate(rebuilt, f.tokens, n);
    EXPECT_EQ(a.tokens, b.tokens);
    for (size_t i = 0; i < a.logits.size(); ++i) {
        EXPECT_TRUE(bit_identical(a.logits[i], b.logits[i])) << "step " << i;
    }
}

// Two sequences generating side by side, one token of each per decode: the reused graph gets
// each step's positions, cells and mask.
TEST_F(ContextDecodePaths, ParallelSequencesReuseTheGraph) {
    const Tokens p0(prompt_.begin(), prompt_.begin() + 10), p1(prompt_.begin() + 12, prompt_.end());
    auto run = [&](bool reuse) {
        ContextOptions o = options();
        o.n_seq_max = 2;
        o.graph_reuse = reuse;
        Context ctx(*model_, o);
        Batch batch;
        for (size_t i = 0; i < p0.size(); ++i) batch.add(p0[i], Pos(i), 0, i + 1 == p0.size());
        for (size_t i = 0; i < p1.size(); ++i) batch.add(p1[i], Pos(i), 1, i + 1 == p1.size());
        Pos pos[2] = {Pos(p0.size()), Pos(p1.size())};
        std::vector<Generation> g(2);
        for (int step = 0; step < 16; ++step) {
            ctx.decode(batch);
            batch.clear();
            for (int s = 0; s < 2; ++s) {
                const auto row = ctx.logits(s);
                g[size_t(s)].logits.emplace_back(row.begin(), row.end());
                g[size_t(s)].tokens.push_back(argmax(row));
                batch.add(g[size_t(s)].tokens.back(), pos[s]++, s, true);
            }
        }
        // The prompts' graph, then one per window the steps reach (two cells per step at most).
        const auto cells = int64_t(p0.size() + p1.size());
        if (reuse) {
            EXPECT_LE(ctx.stats().graph_builds, 1 + step_graphs(cells + 2, cells + 30));
        }
        return g;
    };
    const std::vector<Generation> reused = run(true), rebuilt = run(false);
    for (int s = 0; s < 2; ++s) {
        SCOPED_TRACE("sequence " + std::to_string(s));
        EXPECT_EQ(reused[size_t(s)].tokens, rebuilt[size_t(s)].tokens);
        for (size_t i = 0; i < reused[size_t(s)].logits.size(); ++i) {
            EXPECT_TRUE(bit_identical(reused[size_t(s)].logits[i], rebuilt[size_t(s)].logits[i]));
        }
        // Each sequence alone gives the same choices.
        Context alone(*model_, options());
        const Generation want = generate(alone, s == 0 ? p0 : p1, 16);
        EXPECT_EQ(reused[size_t(s)].tokens, want.tokens);
        for (size_t i = 0; i < want.logits.size(); ++i) {
            EXPECT_LT(nmse(reused[size_t(s)].logits[i], want.logits[i]), 1e-6) << "step " << i;
        }
    }
}

// Flash attention reads K and V as F16 like llama.cpp's; with an F16 cache the naive path sees
// the same values, and only the order of the softmax sums differs.
TEST_F(ContextDecodePaths, FlashAttentionMatchesNaiveAttention) {
    const int n = 32;
    Context naive(*model_, options(DType::F16));
    const Generation a = generate(naive, prompt_, n);
    ContextOptions o = options(DType::F16);
    o.flash_attn = true;
    Context flash(*model_, o);
    const Generation b = generate(flash, prompt_, n);

    EXPECT_EQ(a.tokens, b.tokens);
    ASSERT_EQ(a.logits.size(), b.logits.size());
    for (size_t i = 0; i < a.logits.size(); ++i) {
        EXPECT_LT(nmse(b.logits[i], a.logits[i]), 1e-5) << "step " << i;
    }
}

// A prompt decoded without asking for logits (its graph computes and drops the last token's),
// then its last token on its own: the same logits as the whole prompt at once. After clear()
// the context starts over.
TEST_F(ContextDecodePaths, PrefillWithoutLogits) {
    Context ctx(*model_, options());
    const Tokens head(prompt_.begin(), prompt_.end() - 1);
    Batch batch;
    for (size_t i = 0; i < head.size(); ++i) batch.add(head[i], Pos(i), 0, false);
    ctx.decode(batch);
    EXPECT_EQ(ctx.n_outputs(), 0);
    batch.clear();
    batch.add(prompt_.back(), Pos(head.size()), 0, true);
    ctx.decode(batch);
    const std::vector<float> got(ctx.logits(0).begin(), ctx.logits(0).end());

    ctx.memory().clear();
    EXPECT_EQ(ctx.memory().used(), 0);
    const Generation whole = generate(ctx, prompt_, 1);
    EXPECT_LT(nmse(got, whole.logits[0]), 1e-6);
}

// Raw embeddings equal to the token embedding rows give the token path's logits bit for bit,
// alone or mixed with token ids in one batch, and the graph built for one kind of ubatch is not
// reused for another.
TEST_F(ContextDecodePaths, EmbeddingsInputMatchesTokens) {
    const Tensor *table = model_->weights().tok_embd;
    ASSERT_EQ(table->type, DType::F32);
    const int64_t n_embd = model_->hparams().n_embd;
    const auto row_of = [&](int32_t token) {
        return std::span(static_cast<const float *>(table->row_ptr(token)), size_t(n_embd));
    };
    Batch tokens, embd, mixed;
    for (size_t i = 0; i < prompt_.size(); ++i) {
        tokens.add(prompt_[i], Pos(i), 0, true);
        embd.add_embd(row_of(prompt_[i]), Pos(i), 0, true);
        if (i % 3 == 1) {
            mixed.add_embd(row_of(prompt_[i]), Pos(i), 0, true);
        } else {
            mixed.add(prompt_[i], Pos(i), 0, true);
        }
    }
    Context by_tokens(*model_, options()), by_other(*model_, options());
    by_tokens.decode(tokens);
    for (const Batch *other : {&embd, &mixed, &tokens}) {
        by_other.memory().clear();
        by_other.decode(*other);
        for (int64_t i = 0; i < int64_t(prompt_.size()); ++i) {
            EXPECT_TRUE(bit_identical(by_tokens.logits(i), by_other.logits(i)))
                << "position " << i << (other == &mixed ? " (mixed)" : "");
        }
    }
    EXPECT_EQ(by_other.stats().graph_builds, 3);
}

// Every position's logits of the prompt, cut into ubatches of n_ubatch tokens.
std::vector<float> prompt_logits(const Model &model, const Tokens &prompt, int64_t n_ubatch,
                                 bool flash_attn) {
    Context ctx(model, {.n_ctx = 256,
                        .n_ubatch = n_ubatch,
                        .n_threads = 2,
                        .flash_attn = flash_attn,
                        .type_k = DType::F32,
                        .type_v = DType::F32});
    return test::all_logits(ctx, prompt);
}

TEST_F(ContextDecodePaths, UbatchSizeChangesNoBit) {
    for (bool flash : {false, true}) {
        SCOPED_TRACE(flash ? "flash attention" : "naive attention");
        const std::vector<float> whole = prompt_logits(*model_, prompt_, 512, flash);
        ASSERT_EQ(whole.size(), prompt_.size() * size_t(model_->hparams().n_vocab));
        // Every product sums each element's terms in one order whatever the number of columns
        // (core/cpu/gemm.h), and each token sees the same cells: no bit changes for any cut.
        for (const int64_t n_ubatch : {1, 2, 7, 64}) {
            SCOPED_TRACE("n_ubatch " + std::to_string(n_ubatch));
            const std::vector<float> cut = prompt_logits(*model_, prompt_, n_ubatch, flash);
            EXPECT_TRUE(bit_identical(cut, whole)) << "NMSE " << nmse(cut, whole);
        }
    }
}

}  // namespace
}  // namespace loom::engine
