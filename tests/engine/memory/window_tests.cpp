// A KV cache with a sliding window: which positions the window hides, which cells a ubatch may
// take (around a ring: empty ones, or ones every later token's window has left), the mask, and
// whether a sequence cut back can resume; and how large the iSWA memory makes its window's cache.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/memory/kv_cache_iswa.h"
#include "loom/error.h"
#include "tests/engine/memory/tiny_hparams.h"

namespace loom::engine {
namespace {

using test::tiny_hparams;

// One ubatch of sequence `seq` at positions [p0, p1).
Ubatch run(SeqId seq, Pos p0, Pos p1) {
    Batch b;
    for (Pos p = p0; p < p1; ++p) b.add(1, p, seq, true);
    return split_batch(b, 512, 8, 1).at(0);
}

// Plans and applies one ubatch; its cells.
std::vector<int32_t> take(KvCache &kv, const Ubatch &u) {
    const UbatchMemory m = kv.plan({&u, 1}).at(0);
    kv.apply(u, m);
    return m.slots.at(0).cells;
}

// Plans and applies u, then checks its mask: want(t, c) gives what token t sees in cell c (a
// value, or -inf where hidden).
template <typename Want>
void expect_mask(KvCache &kv, const Ubatch &u, Want want) {
    const UbatchMemory m = kv.plan({&u, 1}).at(0);
    kv.apply(u, m);
    const int64_t n_kv = m.slots[0].n_kv;
    std::vector<float> mask(size_t(n_kv * u.n_tokens()));
    kv.fill_mask(u, n_kv, mask.data());
    for (int64_t t = 0; t < u.n_tokens(); ++t) {
        for (int64_t c = 0; c < n_kv; ++c) {
            EXPECT_EQ(mask[size_t(t * n_kv + c)], want(t, c)) << "token " << t << " cell " << c;
        }
    }
}

KvCacheParams window_params(int64_t size, int64_t n_swa, WindowType type = WindowType::standard,
                            int n_seq_max = 1) {
    return {.size = size,
            .type_k = DType::F32,
            .type_v = DType::F32,
            .n_seq_max = n_seq_max,
            .window = {.type = type, .n_swa = n_swa}};
}

TEST(AttnWindow, StandardHidesWhatIsAWindowBack) {
    const AttnWindow w{.type = WindowType::standard, .n_swa = 4};
    EXPECT_FALSE(w.hides(9, 9));
    EXPECT_FALSE(w.hides(6, 9));  // 9 - 6 < 4
    EXPECT_TRUE(w.hides(5, 9));   // 9 - 5 >= 4
    EXPECT_FALSE(AttnWindow{}.hides(0, 1000));
}

TEST(AttnWindow, ChunkedHidesEarlierChunks) {
    const AttnWindow w{.type = WindowType::chunked, .n_swa = 4};
    EXPECT_FALSE(w.hides(4, 7));  // the chunk 4..7
    EXPECT_TRUE(w.hides(3, 4));   // the chunk before
    EXPECT_FALSE(w.hides(8, 8));
    EXPECT_TRUE(w.hides(7, 8));
}

TEST(KvWindowCache, ReusesTheCellsTheWindowLeft) {
    KvCache kv(tiny_hparams(), window_params(8, 4));
    EXPECT_EQ(take(kv, run(0, 0, 8)), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
    // Position 8's window is 5..8: the cells of 0..4 are free, the lowest ones taken first.
    EXPECT_EQ(take(kv, run(0, 8, 10)), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(kv.seq_pos_min(0), 2);
    EXPECT_EQ(kv.seq_pos_max(0), 9);
    EXPECT_EQ(kv.used(), 8);
}

TEST(KvWindowCache, TheRingNeverTakesACellStillRead) {
    // From 0..5 cached, positions 6..9 take the two empty cells after them, then (around the
    // ring) the cells of 0 and 1, hidden from 6, whose window is 3..6.
    KvCache kv(tiny_hparams(), window_params(8, 4));
    take(kv, run(0, 0, 6));
    EXPECT_EQ(take(kv, run(0, 6, 10)), (std::vector<int32_t>{6, 7, 0, 1}));
    // Now 2..9 are cached: six more tokens have the cells of 2..6 (hidden from 10), five, as
    // 10's window still shows 7..9.
    const Ubatch too_many = run(0, 10, 16);
    try {
        kv.plan({&too_many, 1});
        ADD_FAILURE() << "the plan should not fit";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("sliding-window"), std::string::npos) << e.what();
    }
    EXPECT_EQ(kv.seq_pos_max(0), 9);  // unchanged
    EXPECT_EQ(kv.seq_pos_min(0), 2);
    EXPECT_EQ(kv.used(), 8);
}

TEST(KvWindowCache, ACutBackSequenceRefillsTheCellsItsPositionsHad) {
    // 0..5 in cells 0..5, the ring's next search at 6. Cut back to 0..1 and continued, the
    // sequence takes cells 2.. again: laid out as when it was first decoded, so it computes the
    // same bits (the server's prompt cache depends on it).
    KvCache kv(tiny_hparams(), window_params(16, 8));
    take(kv, run(0, 0, 6));
    kv.seq_rm(0, 2, -1);
    EXPECT_EQ(take(kv, run(0, 2, 5)), (std::vector<int32_t>{2, 3, 4}));
    // A cut that frees nothing before the search point leaves it: the ring goes on after 4.
    kv.seq_rm(0, 7, -1);
    EXPECT_EQ(take(kv, run(0, 5, 6)), (std::vector<int32_t>{5}));
}

TEST(KvWindowCache, PlanningSeveralUbatchesChangesNothing) {
    KvCache kv(tiny_hparams(), window_params(8, 4));
    const std::vector<Ubatch> ubatches = {run(0, 0, 6), run(0, 6, 10), run(0, 10, 12)};
    const std::vector<UbatchMemory> plan = kv.plan(ubatches);
    ASSERT_EQ(plan.size(), 3u);
    EXPECT_EQ(plan[1].slots[0].cells, (std::vector<int32_t>{6, 7, 0, 1}));
    EXPECT_EQ(kv.used(), 0);
}

TEST(KvWindowCache, ASharedCellGoesOnceEverySequenceHasLeftIt) {
    KvCache kv(tiny_hparams(), window_params(4, 2, WindowType::standard, 2));
    take(kv, run(0, 0, 4));
    kv.seq_cp(0, 1, 0, -1);  // one stream: both sequences share the four cells...
    kv.seq_rm(1, 2, -1);     // ...then sequence 1 keeps positions 0 and 1
    // Sequence 0 at 4 and 5: position 0's cell has left both windows (4's is 3..4, and 1's next
    // position, 2, sees 1..2); position 1's is still sequence 1's; position 2's is 0's alone.
    EXPECT_EQ(take(kv, run(0, 4, 6)), (std::vector<int32_t>{0, 2}));
}

TEST(KvWindowCache, MaskHidesWhatTheWindowHides) {
    KvCache kv(tiny_hparams(), window_params(8, 3));
    expect_mask(kv, run(0, 0, 5),
                [](int64_t t, int64_t c) { return c <= t && t - c < 3 ? 0.0f : -INFINITY; });
}

TEST(KvWindowCache, ChunkedMask) {
    KvCache kv(tiny_hparams(), window_params(8, 4, WindowType::chunked));
    expect_mask(kv, run(0, 0, 6),
                [](int64_t t, int64_t c) { return c <= t && c / 4 == t / 4 ? 0.0f : -INFINITY; });
}

TEST(KvCacheMask, AlibiHoldsTheDistance) {
    KvCacheParams params = window_params(8, 3);
    params.alibi = true;
    KvCache kv(tiny_hparams(), params);
    expect_mask(kv, run(0, 0, 5), [](int64_t t, int64_t c) {
        return c <= t && t - c < 3 ? -float(t - c) : -INFINITY;
    });
}

TEST(KvWindowCache, ResumesOnlyWhereTheWindowIsWhole) {
    KvCache kv(tiny_hparams(), window_params(8, 4));
    take(kv, run(0, 0, 8));
    take(kv, run(0, 8, 12));  // positions 4..11 remain
    EXPECT_TRUE(kv.seq_can_resume(0, 12));
    EXPECT_TRUE(kv.seq_can_resume(0, 8));   // needs 5..7
    EXPECT_FALSE(kv.seq_can_resume(0, 6));  // needs 3..5; 3 is gone
    EXPECT_TRUE(kv.seq_can_resume(0, 0));
    KvCache full(tiny_hparams(), window_params(8, 0, WindowType::none));
    EXPECT_TRUE(full.seq_can_resume(0, 5));
}

TEST(KvCacheIswa, TheWindowCacheHoldsAWindowPerSequenceAndAUbatch) {
    const KvCacheParams unified{.size = 4096, .n_stream = 1, .n_seq_max = 2};
    const AttnWindow w{.type = WindowType::standard, .n_swa = 100};
    EXPECT_EQ(KvCacheIswa::swa_cells_per_stream(unified, w, 64), 288);  // 264 in 32s
    const KvCacheParams streams{.size = 4096, .n_stream = 4, .n_seq_max = 4};
    EXPECT_EQ(KvCacheIswa::swa_cells_per_stream(streams, w, 64), 192);  // 164 in 32s
    const AttnWindow wide{.type = WindowType::standard, .n_swa = 8192};
    EXPECT_EQ(KvCacheIswa::swa_cells_per_stream(unified, wide, 64), 4096);  // at most the full

    HParams hp = tiny_hparams();
    hp.n_layer = 4;
    KvCacheIswa mem(hp, {.size = 256, .type_k = DType::F32, .type_v = DType::F32}, {0, 2}, w, 32);
    EXPECT_EQ(mem.cache_of_layer(0), 1);
    EXPECT_EQ(mem.cache_of_layer(1), 0);
    EXPECT_EQ(mem.cache(0).layers(), (std::vector<int64_t>{1, 3}));
    EXPECT_EQ(mem.cache(1).size(), 32);
    // K and V of 8 floats per cell and layer: 256 cells x 2 layers + 32 x 2.
    EXPECT_EQ(mem.memory_bytes(), size_t((256 * 2 + 32 * 2) * 2 * 8 * 4));
}

}  // namespace
}  // namespace loom::engine
