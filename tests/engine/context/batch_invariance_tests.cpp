// Batch invariance: a sequence's logits, at every step of a greedy generation, are the same bit
// for bit whether it is decoded alone or with three others (one KV stream each), with any
// ubatch size, on 1 or 2 threads; flash attention on and off separately. On an F32 model
// (stories260K), a quantized one (the Q4_0 fixture, whose weights take the interleaved integer
// kernels) and an F16 one with an F16 cache.
#include <gtest/gtest.h>

#include <cstring>

#include "engine/context/context.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

using Tokens = std::vector<int32_t>;

struct Setup {
    int64_t n_ubatch = 512;
    int n_threads = 1;
    DType kv_type = DType::F32;
};

// The logits of each prompt's last token, then of each of `steps` greedy tokens, per sequence;
// all prompts decoded together in one context (sequence s = prompt s).
std::vector<std::vector<float>> generate_together(const Model &model,
                                                  const std::vector<Tokens> &prompts, int steps,
                                                  bool flash, const Setup &setup) {
    const int n = int(prompts.size());
    Context ctx(model, {.n_ctx = 256 * n,
                        .n_ubatch = setup.n_ubatch,
                        .n_threads = setup.n_threads,
                        .flash_attn = flash,
                        .type_k = setup.kv_type,
                        .type_v = setup.kv_type,
                        .n_seq_max = n,
                        .kv_unified = false});
    std::vector<std::vector<float>> out(static_cast<size_t>(n));
    Batch batch;
    for (int s = 0; s < n; ++s) {
        const Tokens &p = prompts[size_t(s)];
        for (size_t i = 0; i < p.size(); ++i) batch.add(p[i], Pos(i), s, i + 1 == p.size());
    }
    std::vector<Pos> pos(static_cast<size_t>(n));
    for (int s = 0; s < n; ++s) pos[size_t(s)] = Pos(prompts[size_t(s)].size());
    for (int step = 0;; ++step) {
        ctx.decode(batch);
        batch.clear();
        for (int s = 0; s < n; ++s) {
            const auto row = ctx.logits(s);
            out[size_t(s)].insert(out[size_t(s)].end(), row.begin(), row.end());
            const auto next = int32_t(std::max_element(row.begin(), row.end()) - row.begin());
            batch.add(next, pos[size_t(s)]++, s, true);
        }
        if (step == steps) return out;
    }
}

void expect_invariant(const char *fixture, bool flash, DType kv_type = DType::F32) {
    const auto f = test::load_fixture(fixture);
    const auto model = Model::load(f.model_path);
    const Tokens &t = f.tokens;
    // Four prompts of different lengths cut from the fixture's tokens.
    const std::vector<Tokens> prompts = {
        Tokens(t.begin(), t.begin() + 5), Tokens(t.begin(), t.begin() + 17),
        Tokens(t.begin() + 3, t.begin() + 12), Tokens(t.begin() + 1, t.end())};
    constexpr int kSteps = 12;
    const auto alone_at = [&](int64_t n_ubatch) {
        std::vector<std::vector<float>> alone;
        for (const Tokens &p : prompts) {
            alone.push_back(generate_together(*model, {p}, kSteps, flash,
                                              {.n_ubatch = n_ubatch, .kv_type = kv_type})[0]);
        }
        return alone;
    };
    // A sliding-window cache is a ring of window + n_ubatch cells: another ubatch size places a
    // sequence's tokens in other cells and sums its scores in another order, so such models are
    // compared alone and together at the same ubatch size.
    const bool window = model->hparams().swa.any();
    std::vector<std::vector<float>> alone = alone_at(512);
    for (const auto &[n_ubatch, n_threads] : {std::pair{512, 1}, std::pair{512, 2}, std::pair{1, 2},
                                              std::pair{7, 1}, std::pair{64, 2}}) {
        const Setup setup{.n_ubatch = n_ubatch, .n_threads = n_threads, .kv_type = kv_type};
        SCOPED_TRACE("n_ubatch " + std::to_string(setup.n_ubatch) + ", threads " +
                     std::to_string(setup.n_threads));
        if (window) alone = alone_at(n_ubatch);
        const auto together = generate_together(*model, prompts, kSteps, flash, setup);
        for (size_t s = 0; s < prompts.size(); ++s) {
            ASSERT_EQ(together[s].size(), alone[s].size());
            EXPECT_EQ(std::memcmp(together[s].data(), alone[s].data(), alone[s].size() * 4), 0)
                << "sequence " << s << ": NMSE " << test::nmse(together[s], alone[s]);
        }
    }
}

TEST(BatchInvariance, F32ModelNaiveAttention) {
    expect_invariant("stories260K", false);
}
TEST(BatchInvariance, F32ModelFlashAttention) {
    expect_invariant("stories260K", true);
}
TEST(BatchInvariance, QuantizedModelNaiveAttention) {
    expect_invariant("llama-q-q4_0", false);
}
TEST(BatchInvariance, QuantizedModelFlashAttention) {
    expect_invariant("llama-q-q4_0", true);
}
// F16 weights (stored 16 rows interleaved) and an F16 cache, whose K and V are products too.
TEST(BatchInvariance, F16ModelF16CacheNaiveAttention) {
    expect_invariant("llama-q-f16", false, DType::F16);
}
TEST(BatchInvariance, F16ModelF16CacheFlashAttention) {
    expect_invariant("llama-q-f16", true, DType::F16);
}

// The newer architectures: fused Q/K/V (phi3), parallel blocks (command-r), post-norms (olmo2),
// multipliers (granite), YaRN, sliding windows (gemma2, gemma3, gpt-oss: their rings wrap
// around at the small ubatch sizes), sinks and MXFP4 experts (gpt-oss).
TEST(BatchInvariance, NewerArchitectures) {
    for (const char *fixture :
         {"granite", "command-r", "olmo2", "phi3", "qwen2-yarn", "gemma2", "gemma3", "gpt-oss"}) {
        SCOPED_TRACE(fixture);
        expect_invariant(fixture, false);
        expect_invariant(fixture, true, DType::F16);
    }
}

}  // namespace
}  // namespace loom::engine
