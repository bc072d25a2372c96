// Sliding-window models (gemma2, gemma3, gpt-oss: window 8, a 67-token prompt) on the iSWA
// memory with a window cache of a few dozen cells, so that its cells are reused many times:
// llama.cpp's logits still come out whatever the ubatch size, sequences batched together give
// what they give alone, a context shift and a prompt cut back behind the window work as with a
// full-size window cache, and the window cache's memory stays the window's.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/chat/prompt_cache.h"
#include "engine/context/context.h"
#include "engine/memory/kv_cache.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

using Tokens = std::vector<int32_t>;

class SlidingWindow : public ::testing::TestWithParam<const char *> {
  protected:
    void SetUp() override {
        fixture_ = test::load_fixture(GetParam());
        ASSERT_FALSE(fixture_.logits.empty());
        model_ = Model::load(fixture_.model_path);
        ASSERT_EQ(model_->hparams().swa.n_swa, 8);
    }
    ContextOptions options(int64_t n_ubatch, int n_seq_max = 1, bool unified = true) const {
        return {.n_ctx = 192,  // 64 cells for each of three streams
                .n_ubatch = n_ubatch,
                .n_threads = 2,
                .type_k = DType::F32,
                .type_v = DType::F32,
                .n_seq_max = n_seq_max,
                .kv_unified = unified};
    }
    // Decodes `tokens` of sequence seq from position p0 in batches of n, every logit wanted.
    static std::vector<float> decode(Context &ctx, const Tokens &tokens, Pos p0, int64_t n,
                                     SeqId seq = 0) {
        std::vector<float> out;
        for (size_t start = 0; start < tokens.size(); start += size_t(n)) {
            Batch b;
            const size_t end = std::min(tokens.size(), start + size_t(n));
            for (size_t i = start; i < end; ++i) b.add(tokens[i], p0 + Pos(i), seq, true);
            ctx.decode(b);
            for (int64_t r = 0; r < b.size(); ++r) {
                const auto row = ctx.logits(r);
                out.insert(out.end(), row.begin(), row.end());
            }
        }
        return out;
    }

    test::Fixture fixture_;
    std::unique_ptr<Model> model_;
};

TEST_P(SlidingWindow, SmallWindowCacheStillMatchesLlamaCpp) {
    for (const int64_t n_ubatch : {1, 4, 13}) {
        SCOPED_TRACE("n_ubatch " + std::to_string(n_ubatch));
        Context ctx(*model_, options(n_ubatch));
        ASSERT_EQ(ctx.memory().n_caches(), 2);
        // A window and a ubatch, in whole 32-cell steps, against 192 for the full layers.
        EXPECT_EQ(ctx.memory().cache(1).size(), 32);
        EXPECT_EQ(ctx.memory().cache(0).size(), 192);
        // Ubatches of n_ubatch, decoded one batch each: the window cache wraps around.
        const std::vector<float> got = decode(ctx, fixture_.tokens, 0, n_ubatch);
        EXPECT_LT(test::nmse(got, fixture_.logits), 1e-6);
    }
}

TEST_P(SlidingWindow, SequencesTogetherMatchThemAlone) {
    const Tokens &t = fixture_.tokens;
    const std::vector<Tokens> prompts = {Tokens(t.begin(), t.begin() + 40),
                                         Tokens(t.begin() + 5, t.begin() + 30),
                                         Tokens(t.begin() + 20, t.end())};
    std::vector<std::vector<float>> alone;
    for (const Tokens &p : prompts) {
        Context ctx(*model_, options(8));
        alone.push_back(decode(ctx, p, 0, 8));
    }
    for (const bool unified : {true, false}) {
        SCOPED_TRACE(unified ? "one stream" : "a stream per sequence");
        Context ctx(*model_, options(8, 3, unified));
        std::vector<std::vector<float>> together(3);
        // Four tokens of each sequence per batch, interleaved.
        for (size_t start = 0; start < t.size(); start += 4) {
            Batch b;
            std::vector<size_t> owner;
            for (size_t s = 0; s < prompts.size(); ++s) {
                for (size_t i = start; i < std::min(start + 4, prompts[s].size()); ++i) {
                    b.add(prompts[s][i], Pos(i), SeqId(s), true);
                    owner.push_back(s);
                }
            }
            if (b.size() == 0) break;
            ctx.decode(b);
            for (size_t r = 0; r < owner.size(); ++r) {
                const auto row = ctx.logits(int64_t(r));
                together[owner[r]].insert(together[owner[r]].end(), row.begin(), row.end());
            }
        }
        for (size_t s = 0; s < prompts.size(); ++s) {
            if (!unified) {  // a stream per sequence: its ring of cells fills as when alone
                EXPECT_EQ(together[s], alone[s]) << "sequence " << s;
                continue;
            }
            // One ring for all three: the cells of a sequence in another order, its scores
            // summed in another order, float noise only (up to 2e-9 here; a cell seen wrongly
            // moves the logits by more than 1e-4).
            EXPECT_LT(test::nmse(together[s], alone[s]), 1e-8) << "sequence " << s;
        }
    }
}

TEST_P(SlidingWindow, ContextShiftMatchesAFullSizeWindowCache) {
    const Tokens &t = fixture_.tokens;
    const Tokens head(t.begin(), t.begin() + 60), tail(t.begin() + 60, t.end());
    std::vector<float> results[2];
    for (const bool swa_full : {false, true}) {
        ContextOptions o = options(4);
        o.n_ctx = 64;
        o.swa_full = swa_full;
        Context ctx(*model_, o);
        decode(ctx, head, 0, 4);
        // llama.cpp's shift: keep 4 tokens, drop the next 28, move the rest back.
        ctx.memory().seq_rm(0, 4, 32);
        ctx.memory().seq_add(0, 32, -1, -28);
        results[swa_full] = decode(ctx, tail, 32, 1);
    }
    // The ring's cells after the shift lie in another order than the full cache's, so the scores
    // are summed in another order: float noise (1.02e-8 measured at the baseline SSE2 level), where
    // a cell seen wrongly moves the logits by more than 1e-4.
    EXPECT_LT(test::nmse(results[0], results[1]), 1e-7);
}

TEST_P(SlidingWindow, APromptCutBackBehindTheWindowIsDecodedAgain) {
    const Tokens &t = fixture_.tokens;
    const Tokens &first = t;  // 67 tokens through 32 window cells: 0..34 let go
    Tokens second(t.begin(), t.begin() + 30);
    second.push_back(t[60]);
    second.push_back(t[61]);
    for (const bool swa_full : {false, true}) {
        SCOPED_TRACE(swa_full ? "full-size window cache" : "window-size cache");
        ContextOptions o = options(4);
        o.swa_full = swa_full;
        Context ctx(*model_, o);
        PromptCache cache(ctx);
        cache.assign(first);
        // Position 30's window was let go by the small cache: everything again; the full-size
        // one resumes after the 30 shared tokens.
        EXPECT_EQ(cache.assign(second), swa_full ? 2 : int64_t(second.size()));
        const auto row = ctx.logits(0);
        const std::vector<float> got(row.begin(), row.end());
        Context fresh(*model_, options(512));
        const std::vector<float> all = decode(fresh, second, 0, 512);
        const std::span<const float> want(all.end() - ptrdiff_t(got.size()), all.end());
        EXPECT_LT(test::nmse(got, want), 1e-8);
    }
}

TEST_P(SlidingWindow, GenerationReusesTheGraph) {
    Context ctx(*model_, options(512));
    decode(ctx, fixture_.tokens, 0, 512);
    const int64_t builds = ctx.stats().graph_builds;
    // 64 tokens one at a time: the window cache is full-sized at once, the full cache grows by a
    // 32-cell step twice, so at most three new graphs; the rest reuse them.
    const Tokens more(64, fixture_.tokens[5]);
    decode(ctx, more, Pos(fixture_.tokens.size()), 1);
    EXPECT_LE(ctx.stats().graph_builds - builds, 3);
    EXPECT_GE(ctx.stats().graph_reuses, 61);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, SlidingWindow, ::testing::Values("gemma2", "gemma3", "gpt-oss"),
                         [](const auto &info) {
                             std::string s = info.param;
                             std::replace(s.begin(), s.end(), '-', '_');
                             return s;
                         });

}  // namespace
}  // namespace loom::engine
