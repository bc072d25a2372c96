// The KV cache's sequence operations (seq_rm, seq_cp, seq_keep, seq_add, seq_div) seen through
// decode(): after each, the next logits equal those of a context that never needed it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "engine/context/context.h"
#include "loom/error.h"
#include "tests/engine/model/fixture.h"
#include "tests/engine/model/fixture_variants.h"
#include "tests/engine/model/rope_variants.h"

namespace loom::engine {
namespace {

using test::bit_identical;
using test::load_fixture;
using test::nmse;

using Tokens = std::vector<int32_t>;

ContextOptions exact_options(DType kv_type = DType::F32, int n_seq_max = 1, bool flash = false) {
    return {.n_ctx = 256,
            .n_threads = 2,
            .flash_attn = flash,
            .type_k = kv_type,
            .type_v = kv_type,
            .n_seq_max = n_seq_max};
}

// Decodes tokens[i] at first_pos + i in `seq`, and returns the last token's logits.
std::vector<float> decode_run(Context &ctx, const Tokens &tokens, Pos first_pos, SeqId seq = 0) {
    Batch batch;
    for (size_t i = 0; i < tokens.size(); ++i) {
        batch.add(tokens[i], first_pos + Pos(i), seq, i + 1 == tokens.size());
    }
    ctx.decode(batch);
    const auto row = ctx.logits(0);
    return {row.begin(), row.end()};
}

Tokens slice(const Tokens &t, size_t begin, size_t end) {
    return {t.begin() + ptrdiff_t(begin), t.begin() + ptrdiff_t(end)};
}

class ContextSeqOps : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto f = load_fixture("stories260K");
        ASSERT_FALSE(f.tokens.empty());
        prompt_ = f.tokens;  // 27 tokens
        model_ = Model::load(f.model_path);
    }
    Tokens prompt_;
    std::unique_ptr<Model> model_;
};

TEST_F(ContextSeqOps, SeqRmThenRedecodeGivesTheSameLogits) {
    Context ctx(*model_, exact_options());
    const std::vector<float> want = decode_run(ctx, prompt_, 0);
    for (Pos p : {Pos(26), Pos(10), Pos(1)}) {
        SCOPED_TRACE("seq_rm from " + std::to_string(p));
        ctx.memory().seq_rm(0, p, -1);
        EXPECT_EQ(ctx.memory().seq_pos_max(0), p - 1);
        EXPECT_EQ(ctx.memory().used(), p);
        const std::vector<float> got =
            decode_run(ctx, slice(prompt_, size_t(p), prompt_.size()), p);
        EXPECT_LT(nmse(got, want), 1e-6);
        // The same cells are refilled with the same K and V, and products sum in the same order
        // for any number of tokens (core/cpu/gemm.h): no bit changes.
        EXPECT_TRUE(bit_identical(got, want)) << "NMSE " << nmse(got, want);
    }
}

// A hole in the middle of the cells: the next sequence's tokens fill it first, before cells
// that come after older tokens, and attend in position order all the same.
TEST_F(ContextSeqOps, TokensPlacedInAHoleAttendCorrectly) {
    for (bool flash : {false, true}) {
        SCOPED_TRACE(flash ? "flash attention" : "naive attention");
        const DType kv_type = flash ? DType::F16 : DType::F32;
        Context ctx(*model_, exact_options(kv_type, 2, flash));
        decode_run(ctx, slice(prompt_, 0, 20), 0, 0);
        ctx.memory().seq_rm(0, 5, 12);  // frees cells 5..11
        EXPECT_EQ(ctx.memory().used(), 13);
        const Tokens other = slice(prompt_, 4, 27);  // 23 tokens: cells 5..11, then 20..35
        const std::vector<float> got = decode_run(ctx, other, 0, 1);
        Context alone(*model_, exact_options(kv_type, 1, flash));
        const std::vector<float> want = decode_run(alone, other, 0);
        EXPECT_LT(nmse(got, want), 1e-6);
        // Sequence 0 kept its hole: its next token sees positions 0..4 and 12..19 only.
        ctx.memory().seq_rm(1, 0, -1);
        const std::vector<float> got0 = decode_run(ctx, {prompt_[20]}, 20, 0);
        for (float x : got0) ASSERT_TRUE(std::isfinite(x));
        EXPECT_EQ(ctx.memory().seq_pos_max(0), 20);
        EXPECT_EQ(ctx.memory().used(), 14);
    }
}

TEST_F(ContextSeqOps, SeqRmOfEverySequenceEmptiesTheCache) {
    Context ctx(*model_, exact_options(DType::F32, 2));
    decode_run(ctx, slice(prompt_, 0, 5), 0, 0);
    decode_run(ctx, slice(prompt_, 5, 12), 0, 1);
    EXPECT_EQ(ctx.memory().used(), 12);
    ctx.memory().seq_rm(-1, 3, -1);
    EXPECT_EQ(ctx.memory().seq_pos_max(0), 2);
    EXPECT_EQ(ctx.memory().seq_pos_max(1), 2);
    ctx.memory().seq_rm(-1, 0, -1);
    EXPECT_EQ(ctx.memory().used(), 0);
    EXPECT_EQ(ctx.memory().seq_pos_max(0), -1);
    EXPECT_EQ(ctx.memory().seq_pos_min(1), -1);
}

TEST_F(ContextSeqOps, SeqCpSharesAPrefixBetweenTwoContinuations) {
    const size_t n_prefix = 12;
    const Tokens prefix = slice(prompt_, 0, n_prefix);
    const Tokens cont0 = slice(prompt_, n_prefix, 20);
    const Tokens cont1 = slice(prompt_, 19, 27);  // another continuation, of another length

    Context ctx(*model_, exact_options(DType::F32, 2));
    decode_run(ctx, prefix, 0, 0);
    ctx.memory().seq_cp(0, 1, 0, -1);
    EXPECT_EQ(ctx.memory().used(), Pos(n_prefix));  // shared cells, not copies
    EXPECT_EQ(ctx.memory().seq_pos_max(1), Pos(n_prefix) - 1);
    Batch batch;
    for (size_t i = 0; i < cont0.size(); ++i)
        batch.add(cont0[i], Pos(n_prefix + i), 0, i + 1 == cont0.size());
    for (size_t i = 0; i < cont1.size(); ++i)
        batch.add(cont1[i], Pos(n_prefix + i), 1, i + 1 == cont1.size());
    ctx.decode(batch);
    ASSERT_EQ(ctx.n_outputs(), 2);

    for (int s = 0; s < 2; ++s) {
        SCOPED_TRACE("sequence " + std::to_string(s));
        Context alone(*model_, exact_options());
        decode_run(alone, prefix, 0);
        const std::vector<float> want = decode_run(alone, s == 0 ? cont0 : cont1, Pos(n_prefix));
        const auto row = ctx.logits(s);
        const std::vector<float> got(row.begin(), row.end());
        EXPECT_LT(nmse(got, want), 1e-6);
        // Sequence 0's continuation takes the same cells as alone; sequence 1's comes after it,
        // so its attention sums group the cells differently (see multiseq_tests.cpp).
        if (s == 0) {
            EXPECT_TRUE(bit_identical(got, want)) << "NMSE " << nmse(got, want);
        }
    }
}

TEST_F(ContextSeqOps, SeqKeepDropsTheOtherSequences) {
    Context ctx(*model_, exact_options(DType::F32, 3));
    decode_run(ctx, slice(prompt_, 0, 6), 0, 0);
    decode_run(ctx, slice(prompt_, 0, 20), 0, 1);
    decode_run(ctx, slice(prompt_, 3, 13), 0, 2);
    ctx.memory().seq_keep(1);
    EXPECT_EQ(ctx.memory().used(), 20);
    EXPECT_EQ(ctx.memory().seq_pos_max(0), -1);
    EXPECT_EQ(ctx.memory().seq_pos_max(2), -1);
    EXPECT_EQ(ctx.memory().seq_pos_max(1), 19);
    const std::vector<float> got = decode_run(ctx, slice(prompt_, 20, 27), 20, 1);

    Context alone(*model_, exact_options());
    const std::vector<float> want = decode_run(alone, prompt_, 0);
    EXPECT_LT(nmse(got, want), 1e-6);
}

// Shifting a sequence by +k re-rotates its cached K; the next token at the shifted position
// then sees the same keys as a run that started at position k (rotations by angles add).
void expect_shift_matches(const Model &model, const Tokens &prompt, DType kv_type, bool flash,
                          Pos k, double tolerance) {
    const Tokens head = slice(prompt, 0, prompt.size() - 1);
    const Tokens last = slice(prompt, prompt.size() - 1, prompt.size());
    Context shifted(model, exact_options(kv_type, 1, flash));
    decode_run(shifted, head, 0);
    shifted.memory().seq_add(0, 0, -1, k);
    EXPECT_EQ(shifted.memory().seq_pos_min(0), k);
    EXPECT_EQ(shifted.memory().seq_pos_max(0), k + Pos(head.size()) - 1);
    const std::vector<float> got = decode_run(shifted, last, k + Pos(head.size()));

    Context from_k(model, exact_options(kv_type, 1, flash));
    const std::vector<float> want = decode_run(from_k, prompt, k);
    EXPECT_LT(nmse(got, want), tolerance);
}

TEST_F(ContextSeqOps, SeqAddShiftsPositionsLikeStartingThere) {
    for (Pos k : {Pos(1), Pos(7), Pos(100)}) {
        SCOPED_TRACE("shift " + std::to_string(k));
        expect_shift_matches(*model_, prompt_, DType::F32, false, k, 1e-6);
        expect_shift_matches(*model_, prompt_, DType::F16, false, k, 1e-5);
        expect_shift_matches(*model_, prompt_, DType::F16, true, k, 1e-5);
    }
}

// DeepSeek's heads keep their rotary dims last (and with latent attention the cache holds K
// alone): the shift must rotate those dims and nothing else.
TEST(ContextSeqOpsDeepSeek, SeqAddRotatesTheTrailingRotaryDims) {
    for (const char *name : {"deepseek2", "deepseek2-kvb"}) {
        SCOPED_TRACE(name);
        const auto f = load_fixture(name);
        const auto model = Model::load(f.model_path);
        for (Pos k : {Pos(3), Pos(50)}) {
            SCOPED_TRACE("shift " + std::to_string(k));
            expect_shift_matches(*model, f.tokens, DType::F32, false, k, 1e-6);
            expect_shift_matches(*model, f.tokens, DType::F16, true, k, 1e-5);
        }
    }
}

// With YaRN the rotation also scales cos and sin by its mscale, and rope.scaling.attn_factor
// scales them too (LongRoPE here); a shift must rotate K by the delta without scaling it again.
TEST(ContextSeqOpsScaledRope, SeqAddKeepsTheMagnitude) {
    for (const char *name : {"qwen2-yarn", "deepseek2-yarn"}) {
        SCOPED_TRACE(name);
        const auto f = load_fixture(name);
        const auto model = Model::load(f.model_path);
        for (Pos k : {Pos(5), Pos(40)}) {
            SCOPED_TRACE("shift " + std::to_string(k));
            expect_shift_matches(*model, f.tokens, DType::F32, false, k, 1e-6);
        }
    }
    const auto stories = load_fixture("stories260K");
    const auto path = std::filesystem::temp_directory_path() /
                      ("loom-seq-ops-longrope-" + std::to_string(::getpid()) + ".gguf");
    const auto &variants = test::rope_variants();
    const auto longrope = std::find_if(variants.begin(), variants.end(),
                                       [](const auto &v) { return v.name == "longrope-long"; });
    ASSERT_NE(longrope, variants.end());
    test::write_rope_variant(*longrope, stories.model_path, path.string());
    const auto model = Model::load(path.string());
    std::filesystem::remove(path);
    expect_shift_matches(*model, stories.tokens, DType::F32, false, 9, 1e-6);
}

// Command R7B's full-attention layers have no rotary positions: a shift must leave their cached
// K as it is and rotate the sliding-window layers' (window 8, so the last token sees only the
// shifted keys there).
TEST(ContextSeqOpsCohere2, SeqAddRotatesOnlyTheLayersWithRotary) {
    const auto command_r = load_fixture("command-r");
    const auto &variants = test::fixture_variants();
    const auto cohere2 = std::find_if(variants.begin(), variants.end(),
                                      [](const auto &v) { return v.name == "cohere2"; });
    ASSERT_NE(cohere2, variants.end());
    const auto model = Model::load(test::write_variant_model(*cohere2, command_r));
    if (!test::keep_variant_files()) std::filesystem::remove_all(test::variants_dir());
    const Tokens prompt = slice(command_r.tokens, 0, 20);
    for (Pos k : {Pos(3), Pos(30)}) {
        SCOPED_TRACE("shift " + std::to_string(k));
        expect_shift_matches(*model, prompt, DType::F32, false, k, 1e-6);
    }
}

// llama.cpp's context shift: drop tokens [1, 1 + m) and move the rest back by m. The kept K and
// V were computed while the dropped tokens were visible, so no fresh decode reproduces the
// logits; the positions must close the gap and the next decode must run.
TEST_F(ContextSeqOps, ContextShiftClosesTheGap) {
    const Pos m = 9;
    Context ctx(*model_, exact_options());
    decode_run(ctx, slice(prompt_, 0, 26), 0);
    ctx.memory().seq_rm(0, 1, 1 + m);
    ctx.memory().seq_add(0, 1 + m, -1, -m);
    EXPECT_EQ(ctx.memory().seq_pos_min(0), 0);
    EXPECT_EQ(ctx.memory().seq_pos_max(0), 25 - m);
    EXPECT_EQ(ctx.memory().used(), 26 - m);
    const std::vector<float> got = decode_run(ctx, {prompt_[26]}, 26 - m);
    EXPECT_EQ(ctx.memory().seq_pos_max(0), 26 - m);
    for (float x : got) ASSERT_TRUE(std::isfinite(x));
}

TEST_F(ContextSeqOps, SeqAddBelowZeroRemovesCells) {
    Context ctx(*model_, exact_options());
    decode_run(ctx, slice(prompt_, 0, 10), 0);
    ctx.memory().seq_add(0, 0, -1, -4);
    EXPECT_EQ(ctx.memory().used(), 6);
    EXPECT_EQ(ctx.memory().seq_pos_min(0), 0);
    EXPECT_EQ(ctx.memory().seq_pos_max(0), 5);
}

TEST_F(ContextSeqOps, SeqDivBookkeeping) {
    Context ctx(*model_, exact_options(DType::F32, 2));
    decode_run(ctx, slice(prompt_, 0, 8), 0, 0);
    decode_run(ctx, slice(prompt_, 0, 8), 0, 1);
    ctx.memory().seq_div(0, 0, -1, 2);  // 0..7 -> 0,0,1,1,2,2,3,3
    EXPECT_EQ(ctx.memory().seq_pos_min(0), 0);
    EXPECT_EQ(ctx.memory().seq_pos_max(0), 3);
    EXPECT_EQ(ctx.memory().seq_pos_max(1), 7);  // other sequences keep their positions
    ctx.memory().seq_div(1, 4, -1, 4);          // 4..7 -> 1
    EXPECT_EQ(ctx.memory().seq_pos_min(1), 0);
    EXPECT_EQ(ctx.memory().seq_pos_max(1), 3);
    EXPECT_EQ(ctx.memory().used(), 16);
    EXPECT_THROW(ctx.memory().seq_div(0, 0, -1, 0), Error);
    // The pending shift is applied on the next decode, which still works.
    const std::vector<float> got = decode_run(ctx, {prompt_[8]}, 4, 0);
    for (float x : got) ASSERT_TRUE(std::isfinite(x));
}

}  // namespace
}  // namespace loom::engine
