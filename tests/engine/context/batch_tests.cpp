// How a batch is cut into ubatches: in order for one KV stream; for several, equal runs of
// consecutive streams, with every output still found at its index among the batch's outputs.
#include <gtest/gtest.h>

#include "engine/context/batch.h"

namespace loom::engine {
namespace {

// seq_lengths[s] tokens of sequence s, interleaved token by token as a server would add them;
// every token wants logits.
Batch interleaved(const std::vector<int> &seq_lengths) {
    Batch b;
    std::vector<int> added(seq_lengths.size(), 0);
    for (bool any = true; any;) {
        any = false;
        for (size_t s = 0; s < seq_lengths.size(); ++s) {
            if (added[s] == seq_lengths[s]) continue;
            b.add(int32_t(100 * s + size_t(added[s])), added[s], SeqId(s), true);
            ++added[s];
            any = true;
        }
    }
    return b;
}

TEST(SplitBatch, OneStreamKeepsTheBatchOrder) {
    const Batch b = interleaved({3, 2, 4});
    const auto ubatches = split_batch(b, 4, 8, 1);
    ASSERT_EQ(ubatches.size(), 3u);
    int64_t next = 0;
    for (const Ubatch &u : ubatches) {
        EXPECT_EQ(u.stream0, 0);
        EXPECT_EQ(u.n_stream, 1);
        for (int64_t t = 0; t < u.n_tokens(); ++t) {
            EXPECT_EQ(u.batch_index[size_t(t)], next);
            EXPECT_EQ(u.tokens[size_t(t)], b.tokens[size_t(next)]);
            EXPECT_EQ(u.output_ids[size_t(t)], next);  // every token is an output
            ++next;
        }
    }
    EXPECT_EQ(next, b.size());
}

TEST(SplitBatch, StreamsGiveEqualRunsOfConsecutiveSequences) {
    // Sequences 0..3 with 1, 5, 5, 2 tokens; sequence s in stream s.
    const Batch b = interleaved({1, 5, 5, 2});
    const auto ubatches = split_batch(b, 64, 8, 4);
    // One token of each stream; one more of 1, 2 and 3 (3 has only one left); then the last
    // three of 1 and of 2.
    ASSERT_EQ(ubatches.size(), 3u);
    const int expected_stream0[] = {0, 1, 1}, expected_streams[] = {4, 3, 2};
    const int64_t expected_tokens[] = {4, 3, 6};
    std::vector<int> seen(size_t(b.size()), 0);
    for (size_t i = 0; i < ubatches.size(); ++i) {
        const Ubatch &u = ubatches[i];
        SCOPED_TRACE(i);
        EXPECT_EQ(u.stream0, expected_stream0[i]);
        EXPECT_EQ(u.n_stream, expected_streams[i]);
        ASSERT_EQ(u.n_tokens(), expected_tokens[i]);
        const int64_t per = u.n_tokens() / u.n_stream;
        for (int64_t t = 0; t < u.n_tokens(); ++t) {
            // Stream after stream, each sequence's tokens in their order.
            EXPECT_EQ(u.seq_id[size_t(t)], u.stream0 + t / per);
            if (t % per > 0) {
                EXPECT_EQ(u.pos[size_t(t)], u.pos[size_t(t - 1)] + 1);
            }
            const int64_t i_batch = u.batch_index[size_t(t)];
            EXPECT_EQ(u.tokens[size_t(t)], b.tokens[size_t(i_batch)]);
            EXPECT_EQ(u.output_ids[size_t(t)], i_batch);
            ++seen[size_t(i_batch)];
        }
    }
    for (const int n : seen) EXPECT_EQ(n, 1);
}

TEST(SplitBatch, StreamsRespectTheUbatchSize) {
    const Batch b = interleaved({10, 10, 10});
    for (const Ubatch &u : split_batch(b, 4, 8, 3)) {
        EXPECT_LE(u.n_tokens(), 4);
        EXPECT_EQ(u.n_tokens() % u.n_stream, 0);
    }
}

TEST(SplitBatch, OutputIdsCountOnlyTheTokensThatWantLogits) {
    Batch b;
    b.add(1, 0, 0, false);
    b.add(2, 0, 1, true);
    b.add(3, 1, 0, true);
    b.add(4, 1, 1, false);
    const auto ubatches = split_batch(b, 8, 8, 2);
    ASSERT_EQ(ubatches.size(), 1u);
    const Ubatch &u = ubatches[0];  // 1, 3 (stream 0), then 2, 4 (stream 1)
    ASSERT_EQ(u.output_rows, (std::vector<int32_t>{1, 2}));
    EXPECT_EQ(u.output_ids, (std::vector<int64_t>{1, 0}));
}

TEST(BatchMixed, TokensAndEmbeddingsInOneBatch) {
    Batch b;
    const std::vector<float> e1{1, 2}, e2{3, 4};
    b.add(7, 0, 0, false);
    b.add_embd(e1, 1, 0, false);
    b.add(8, 2, 0, true);
    b.add_embd(e2, 3, 0, true);
    EXPECT_EQ(b.tokens, (std::vector<int32_t>{7, kEmbdToken, 8, kEmbdToken}));
    EXPECT_EQ(b.embd, (std::vector<float>{0, 0, 1, 2, 0, 0, 3, 4}));
    const auto ubatches = split_batch(b, 2, 2, 1);
    ASSERT_EQ(ubatches.size(), 2u);
    EXPECT_TRUE(ubatches[0].is_mixed());

    Batch only_embd;
    only_embd.add_embd(e1, 0, 0, true);
    only_embd.add_embd(e2, 1, 0, true);
    EXPECT_TRUE(only_embd.tokens.empty());
    EXPECT_TRUE(split_batch(only_embd, 8, 2, 1)[0].has_embd());
    only_embd.add(5, 2, 0, true);  // a token after embeddings makes it mixed
    EXPECT_EQ(only_embd.tokens, (std::vector<int32_t>{kEmbdToken, kEmbdToken, 5}));
    EXPECT_EQ(only_embd.embd, (std::vector<float>{1, 2, 3, 4, 0, 0}));
}

}  // namespace
}  // namespace loom::engine
