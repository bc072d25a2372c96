// Ubatch padding (engine/context/ubatch_padding.h): the buckets, and a padded ubatch that
// repeats each stream's last token and keeps its outputs in place.
#include "engine/context/ubatch_padding.h"

#include <gtest/gtest.h>

namespace loom::engine {
namespace {

TEST(UbatchPadding, Buckets) {
    EXPECT_EQ(bucketed_tokens(1, 512), 1);
    EXPECT_EQ(bucketed_tokens(3, 512), 4);
    EXPECT_EQ(bucketed_tokens(9, 512), 16);
    EXPECT_EQ(bucketed_tokens(17, 512), 32);
    EXPECT_EQ(bucketed_tokens(33, 512), 64);
    EXPECT_EQ(bucketed_tokens(500, 512), 512);
    EXPECT_EQ(bucketed_tokens(5, 7), 7);  // never past the ubatch's room
    EXPECT_EQ(bucketed_tokens(9, 7), 9);  // nor below the tokens themselves
}

TEST(UbatchPadding, RepeatsEachStreamsLastToken) {
    // Two streams of 3 tokens each, embeddings of width 2, outputs at the end of each run.
    Ubatch u;
    u.tokens = {10, 11, 12, 20, 21, 22};
    u.embd = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
    u.pos = {0, 1, 2, 5, 6, 7};
    u.seq_id = {0, 0, 0, 1, 1, 1};
    u.batch_index = {0, 1, 2, 3, 4, 5};
    u.output_rows = {2, 5};
    u.output_ids = {0, 1};
    u.n_stream = 2;
    const std::vector<int32_t> from = pad_ubatch(u, 2, 256);
    EXPECT_EQ(from, (std::vector<int32_t>{0, 1, 2, 2, 3, 4, 5, 5}));
    EXPECT_EQ(u.tokens, (std::vector<int32_t>{10, 11, 12, 12, 20, 21, 22, 22}));
    EXPECT_EQ(u.pos, (std::vector<Pos>{0, 1, 2, 2, 5, 6, 7, 7}));
    EXPECT_EQ(u.seq_id, (std::vector<SeqId>{0, 0, 0, 0, 1, 1, 1, 1}));
    EXPECT_EQ(u.embd.size(), 16u);
    EXPECT_EQ(u.embd[6], 4.0f);    // token 3 repeats token 2's row
    EXPECT_EQ(u.embd[14], 10.0f);  // token 7 repeats token 5's row
    EXPECT_EQ(u.output_rows, (std::vector<int32_t>{2, 6}));
    EXPECT_EQ(u.output_ids, (std::vector<int64_t>{0, 1}));
    EXPECT_EQ(u.n_stream, 2);
}

TEST(UbatchPadding, ABucketSizeIsLeftAlone) {
    Ubatch u;
    u.tokens = {1, 2, 3, 4};
    u.pos = {0, 1, 2, 3};
    u.seq_id = {0, 0, 0, 0};
    u.batch_index = {0, 1, 2, 3};
    u.output_rows = {3};
    u.output_ids = {0};
    const std::vector<int32_t> from = pad_ubatch(u, 8, 512);
    EXPECT_EQ(from, (std::vector<int32_t>{0, 1, 2, 3}));
    EXPECT_EQ(u.tokens, (std::vector<int32_t>{1, 2, 3, 4}));
}

}  // namespace
}  // namespace loom::engine
