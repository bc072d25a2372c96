// Decoding through the scheduler with some layers on a second backend: a CPU backend with a
// buffer type of its own stands in for a device. The layers' weights and KV cells move to its
// memory, the scheduler splits each graph where the layers change hands and copies the
// activations across; no bit of the logits may change.
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

// The logits of every step of a run both contexts take: the prompt, greedy tokens one at a time,
// then a cut in the middle of the sequence closed by shifting what follows (which rotates the
// cached K on each layer's own backend) and one more token.
std::vector<std::vector<float>> run(Context &ctx, const std::vector<int32_t> &prompt) {
    std::vector<std::vector<float>> out;
    Batch batch;
    for (size_t i = 0; i < prompt.size(); ++i)
        batch.add(prompt[i], Pos(i), 0, i + 1 == prompt.size());
    Pos pos = Pos(prompt.size());
    for (int step = 0; step < 12; ++step) {
        ctx.decode(batch);
        const auto row = ctx.logits(0);
        out.emplace_back(row.begin(), row.end());
        batch.clear();
        batch.add(argmax(row), pos++, 0, true);
    }
    // The batch holds the last token, at pos - 1, not decoded yet: it moves back with the rest.
    ctx.memory().seq_rm(0, 2, 5);
    ctx.memory().seq_add(0, 5, -1, -3);
    batch.clear();
    batch.add(argmax(out.back()), pos - 4, 0, true);
    ctx.decode(batch);
    const auto row = ctx.logits(0);
    out.emplace_back(row.begin(), row.end());
    return out;
}

class ContextBackends : public ::testing::TestWithParam<const char *> {};

TEST_P(ContextBackends, LayersOnASecondBackendChangeNoBit) {
    const auto f = load_fixture(GetParam());
    ASSERT_FALSE(f.tokens.empty());
    const auto all_cpu = Model::load(f.model_path);
    const std::unique_ptr<BufferType> device_memory = new_host_buffer_type("device");
    CpuBackend device(1, device_memory.get());
    // The odd layers on the device: every layer boundary is a hop.
    ModelParams params;
    params.layer_buffer_type = [&](int64_t il) {
        return il % 2 == 1 ? device_memory.get() : nullptr;
    };
    const auto split = Model::load(f.model_path, params);
    const HParams &hp = split->hparams();
    ASSERT_GE(hp.n_layer, 2);
    for (int64_t il = 0; il < hp.n_layer; ++il) {
        const Tensor *w = split->weights().layers[size_t(il)].attn_norm;
        ASSERT_NE(w->buffer, nullptr);
        EXPECT_EQ(&w->buffer->type() == device_memory.get(), il % 2 == 1) << "layer " << il;
    }

    const std::vector<int32_t> prompt(f.tokens.begin(),
                                      f.tokens.begin() + std::min<size_t>(f.tokens.size(), 24));
    for (const bool flash : {false, true}) {
        Context one(*all_cpu, {.n_ctx = 256, .n_threads = 2, .flash_attn = flash});
        Context two(*split,
                    {.n_ctx = 256, .n_threads = 2, .flash_attn = flash, .backends = {&device}});
        const auto expected = run(one, prompt);
        const auto got = run(two, prompt);
        ASSERT_EQ(got.size(), expected.size());
        for (size_t i = 0; i < got.size(); ++i) {
            EXPECT_TRUE(bit_identical(got[i], expected[i])) << "step " << i << ", flash " << flash;
        }
        EXPECT_EQ(one.sched_stats().n_splits, 1u);
        EXPECT_EQ(one.sched_stats().n_copies, 0u);
        // At least a split per layer, and the residual stream crosses at every boundary.
        EXPECT_GE(two.sched_stats().n_splits, size_t(hp.n_layer));
        EXPECT_GE(two.sched_stats().n_copies, size_t(hp.n_layer - 1));
        EXPECT_GT(two.sched_stats().copied_bytes, 0u);
        // K and V of the device's layers live in its memory.
        for (int64_t il = 0; il < hp.n_layer; ++il) {
            const KvCache &kv = two.memory().cache(two.memory().cache_of_layer(il));
            EXPECT_EQ(&kv.k(il)->buffer->type() == device_memory.get(), il % 2 == 1)
                << "layer " << il;
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ContextBackends,
                         ::testing::Values("stories260K", "llama-moe", "gemma2", "gemma3",
                                           "deepseek2", "gpt-oss", "qwen2-yarn"));

}  // namespace
}  // namespace loom::engine
