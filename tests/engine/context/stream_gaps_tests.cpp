// Idle streams between busy ones (engine/context/stream_gaps.h): sequences 0 and 2 decoding
// while 1 waits take one ubatch instead of two, their logits are those of a context where
// sequence 1 never existed (bit for bit), and sequence 1's cells are as they were.
#include <gtest/gtest.h>

#include "engine/context/context.h"
#include "engine/context/stream_gaps.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

const std::vector<std::vector<int32_t>> kPrompts = {
    {1, 403, 407, 261, 378}, {1, 500, 12, 90}, {1, 77, 300, 301, 45, 6}};

ContextOptions streams(int n_seq_max) {
    return {.n_ctx = 64 * n_seq_max, .n_threads = 2, .n_seq_max = n_seq_max, .kv_unified = false};
}

int32_t step_token(int step, int s) {
    return int32_t(100 + 7 * step + s);
}

// Each prompt as its sequence, then `steps` more tokens of 0 and 2 together (1 idle); the
// logits of every step, 0's then 2's. `step_ubatches`: the ubatches the steps took.
std::vector<float> run_with_idle(Context &ctx, int steps, int64_t &step_ubatches) {
    Batch prompt;
    for (int s = 0; s < 3; ++s) {
        const auto &p = kPrompts[size_t(s)];
        for (size_t i = 0; i < p.size(); ++i) prompt.add(p[i], Pos(i), SeqId(s), false);
    }
    ctx.decode(prompt);
    const int64_t before = ctx.stats().ubatches;
    std::vector<float> out;
    for (int step = 0; step < steps; ++step) {
        Batch b;
        for (const int s : {0, 2}) {
            b.add(step_token(step, s), Pos(kPrompts[size_t(s)].size()) + step, SeqId(s), true);
        }
        ctx.decode(b);
        for (int64_t i = 0; i < ctx.n_outputs(); ++i) {
            const auto row = ctx.logits(i);
            out.insert(out.end(), row.begin(), row.end());
        }
    }
    step_ubatches = ctx.stats().ubatches - before;
    return out;
}

// Prompt s and its steps alone in a context of one sequence: the logits of every step.
std::vector<std::vector<float>> run_alone(const Model &model, int s, int steps) {
    Context ctx(model, streams(1));
    Batch prompt;
    const auto &p = kPrompts[size_t(s)];
    for (size_t i = 0; i < p.size(); ++i) prompt.add(p[i], Pos(i), 0, false);
    ctx.decode(prompt);
    std::vector<std::vector<float>> out;
    for (int step = 0; step < steps; ++step) {
        Batch b;
        b.add(step_token(step, s), Pos(p.size()) + step, 0, true);
        ctx.decode(b);
        out.emplace_back(ctx.logits(0).begin(), ctx.logits(0).end());
    }
    return out;
}

TEST(StreamGaps, OneUbatchAndTheSameLogits) {
    const auto f = test::load_fixture("stories260K");
    const auto model = Model::load(f.model_path);
    Context ctx(*model, streams(3));
    int64_t step_ubatches = 0;
    const auto got = run_with_idle(ctx, 4, step_ubatches);
    EXPECT_EQ(step_ubatches, 4);  // one a step, not two
    EXPECT_EQ(ctx.memory().seq_pos_max(1), Pos(kPrompts[1].size()) - 1);
    EXPECT_EQ(ctx.memory().used(),
              int64_t(kPrompts[0].size() + kPrompts[1].size() + kPrompts[2].size() + 8));

    const auto alone0 = run_alone(*model, 0, 4), alone2 = run_alone(*model, 2, 4);
    std::vector<float> want;
    for (int step = 0; step < 4; ++step) {
        want.insert(want.end(), alone0[size_t(step)].begin(), alone0[size_t(step)].end());
        want.insert(want.end(), alone2[size_t(step)].begin(), alone2[size_t(step)].end());
    }
    ASSERT_EQ(got.size(), want.size());
    EXPECT_TRUE(test::bit_identical(std::span<const float>(got), std::span<const float>(want)));
}

// An idle stream with no room takes no filler: the runs go apart, the decode still succeeds.
TEST(StreamGaps, AFullIdleStreamSplitsTheRun) {
    const auto f = test::load_fixture("stories260K");
    const auto model = Model::load(f.model_path);
    Context ctx(*model, {.n_ctx = 3 * 32, .n_threads = 2, .n_seq_max = 3, .kv_unified = false});
    Batch fill;
    for (int i = 0; i < 32; ++i) fill.add(1 + i, Pos(i), 1, false);  // sequence 1's 32 cells
    fill.add(1, 0, 0, false);
    fill.add(1, 0, 2, false);
    ctx.decode(fill);
    const int64_t before = ctx.stats().ubatches;
    Batch step;
    step.add(5, 1, 0, true);
    step.add(6, 1, 2, true);
    ctx.decode(step);
    EXPECT_EQ(ctx.stats().ubatches - before, 2);
    EXPECT_EQ(ctx.memory().seq_pos_max(1), 31);
}

TEST(StreamGaps, NothingToFill) {
    const auto f = test::load_fixture("stories260K");
    const auto model = Model::load(f.model_path);
    Context ctx(*model, streams(3));
    Batch b;
    b.add(1, 0, 0, true);
    b.add(1, 0, 1, true);
    EXPECT_FALSE(fill_stream_gaps(b, ctx.memory(), 3, 1000));  // no gap
    Batch gap;
    gap.add(1, 0, 0, true);
    gap.add(1, 0, 2, true);
    const auto fill = fill_stream_gaps(gap, ctx.memory(), 3, 1000);
    ASSERT_TRUE(fill);
    EXPECT_EQ(fill->batch.size(), 3);
    EXPECT_EQ(fill->batch.seq_id.back(), 1);
    EXPECT_EQ(fill->batch.logits.back(), 0);
    EXPECT_FALSE(fill_stream_gaps(gap, ctx.memory(), 3, 0));  // past a learned table's end
    EXPECT_FALSE(fill_stream_gaps(gap, ctx.memory(), 1, 1000));
}

}  // namespace
}  // namespace loom::engine
