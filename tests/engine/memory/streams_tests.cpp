// KV streams: each sequence's tokens land in its own stream's cells, the attention window is
// counted within a stream, and the mask [n_kv, n_tokens / n_stream, 1, n_stream] lets a token
// see only its stream's cells of its sequence at earlier or equal positions.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/memory/kv_cache.h"
#include "tests/engine/memory/tiny_hparams.h"

namespace loom::engine {
namespace {

using test::tiny_hparams;

// Two tokens of each of sequences 1 and 2 (streams 1 and 2 of 4, 256 cells each).
Ubatch two_streams_ubatch() {
    Batch b;
    for (Pos p = 0; p < 2; ++p) {
        b.add(10 + p, p, 1, true);
        b.add(20 + p, p, 2, true);
    }
    auto ubatches = split_batch(b, 512, 8, 4);
    EXPECT_EQ(ubatches.size(), 1u);
    return ubatches[0];
}

TEST(KvStreams, TokensTakeTheirStreamsCells) {
    KvCache kv(
        tiny_hparams(),
        {.size = 1024, .type_k = DType::F32, .type_v = DType::F32, .n_stream = 4, .n_seq_max = 4});
    EXPECT_EQ(kv.k(0)->ne[1], 256);  // [n_embd_k_gqa, cells per stream, n_stream]
    EXPECT_EQ(kv.k(0)->ne[2], 4);
    const Ubatch u = two_streams_ubatch();
    ASSERT_EQ(u.stream0, 1);
    ASSERT_EQ(u.n_stream, 2);
    const std::vector<UbatchMemory> plan = kv.plan({&u, 1});
    ASSERT_EQ(plan.size(), 1u);
    const KvSlot &slot = plan[0].slots.at(0);
    EXPECT_EQ(slot.cells, (std::vector<int32_t>{256, 257, 512, 513}));
    // The window counts cells within a stream, not across the cache.
    EXPECT_EQ(slot.n_kv, KvCache::kWindowPad);
    EXPECT_EQ(kv.used(), 0);  // planned, not yet applied
}

TEST(KvStreams, MaskSeesOnlyTheTokensStream) {
    KvCache kv(
        tiny_hparams(),
        {.size = 1024, .type_k = DType::F32, .type_v = DType::F32, .n_stream = 4, .n_seq_max = 4});
    const Ubatch u = two_streams_ubatch();
    const UbatchMemory plan = kv.plan({&u, 1}).at(0);
    kv.apply(u, plan);
    const int64_t n_kv = plan.slots.at(0).n_kv;
    std::vector<float> mask(size_t(n_kv * u.n_tokens()));
    kv.fill_mask(u, n_kv, mask.data());
    // Rows: (stream 1, pos 0), (stream 1, pos 1), (stream 2, pos 0), (stream 2, pos 1); the
    // columns of each stream are its own cells 0..n_kv-1, holding positions 0 and 1.
    for (int64_t t = 0; t < 4; ++t) {
        for (int64_t c = 0; c < n_kv; ++c) {
            const bool visible = c <= t % 2;
            EXPECT_EQ(mask[size_t(t * n_kv + c)], visible ? 0.0f : -INFINITY)
                << "token " << t << " cell " << c;
        }
    }
}

TEST(KvStreams, OneStreamIsTheWholeCache) {
    KvCache kv(
        tiny_hparams(),
        {.size = 512, .type_k = DType::F32, .type_v = DType::F32, .n_stream = 1, .n_seq_max = 4});
    Batch b;
    b.add(1, 0, 3, true);
    const Ubatch u = split_batch(b, 512, 8, 1)[0];
    const KvSlot slot = kv.plan({&u, 1}).at(0).slots.at(0);
    EXPECT_EQ(slot.cells, (std::vector<int32_t>{0}));
    EXPECT_EQ(slot.n_kv, KvCache::kWindowPad);
}

}  // namespace
}  // namespace loom::engine
