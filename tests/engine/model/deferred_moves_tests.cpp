// F16 and BF16 matrices repacked in the background (engine/model/deferred_moves.h): every tensor
// points either at its old bytes or at a finished copy that reads back as the same bytes, each
// old range is released exactly once, and a model computes the same logits, bit for bit, before,
// during and after the moves as one whose weights moved before its first token.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "engine/context/context.h"
#include "engine/model/deferred_moves.h"
#include "engine/model/model.h"
#include "engine/model/synthetic_llama.h"
#include "loom/core.h"
#include "loom/cpu.h"

namespace loom::engine {
namespace {

namespace fs = std::filesystem;

// Tensors in plain host memory with random bytes, and the releases DeferredMoves reports.
struct Weights {
    loom::Context ctx{{.mem_size = 1u << 16, .no_alloc = true}};
    std::vector<Tensor *> tensors;
    std::unique_ptr<Buffer> buffer;
    std::vector<std::vector<std::byte>> bytes;  // each tensor's bytes, as the file has them
    std::vector<const void *> old_data;
    std::mutex mutex;
    std::map<const std::byte *, size_t> released;  // old bytes -> size, each range once
    int released_twice = 0;

    Weights() {
        tensors = {ctx.new_tensor(DType::F16, {64, 32}), ctx.new_tensor(DType::BF16, {96, 48, 3}),
                   ctx.new_tensor(DType::F16, {4096, 1024})};  // 8 MiB: more than one chunk
        buffer = place_tensors(host_buffer_type(), tensors);
        std::mt19937 rng(7);
        for (Tensor *t : tensors) {
            std::vector<std::byte> b(t->nbytes());
            for (std::byte &x : b) x = std::byte(rng());
            buffer->set_tensor(t, b.data(), 0, b.size());
            bytes.push_back(std::move(b));
            old_data.push_back(t->data);
        }
    }
    DeferredMoves::Release release() {
        return [this](const void *data, size_t size) {
            std::lock_guard lock(mutex);
            const auto *begin = static_cast<const std::byte *>(data);
            released_twice += released.count(begin) != 0;
            released[begin] = size;
        };
    }
    // The bytes of tensor i released so far, -1 if two released ranges overlap in it.
    int64_t released_bytes(size_t i) {
        std::lock_guard lock(mutex);
        const auto *begin = static_cast<const std::byte *>(old_data[i]);
        const std::byte *end = begin + tensors[i]->nbytes();
        int64_t sum = 0;
        const std::byte *covered = begin;
        for (auto it = released.lower_bound(begin); it != released.end() && it->first < end; ++it) {
            if (it->first < covered) return -1;
            covered = it->first + it->second;
            sum += int64_t(it->second);
        }
        return sum;
    }
    // Each tensor at its old bytes or at a copy giving back the same bytes; how many moved.
    size_t check_consistent() {
        size_t moved = 0;
        for (size_t i = 0; i < tensors.size(); ++i) {
            const Tensor *t = tensors[i];
            std::vector<std::byte> got(t->nbytes());
            if (t->data == old_data[i]) {
                EXPECT_EQ(t->buffer, buffer.get()) << i;
                std::memcpy(got.data(), t->data, got.size());
            } else {
                EXPECT_EQ(&t->buffer->type(), &cpu_repack_buffer_type()) << i;
                t->buffer->get_tensor(t, got.data(), 0, got.size());
                ++moved;
            }
            EXPECT_TRUE(got == bytes[i]) << "tensor " << i << " reads back other bytes";
        }
        return moved;
    }
};

// With the default budget every tensor is copied beside the computations; with a 4 MiB one the
// 8 MiB tensor is copied while nothing computes, its old bytes released chunk by chunk.
class DeferredMovesWithBudget : public testing::TestWithParam<uint64_t> {};

TEST_P(DeferredMovesWithBudget, TensorsMoveOnlyBetweenHoldsAndKeepTheirBytes) {
    Weights w;
    DeferredMoves moves(cpu_repack_buffer_type(), w.tensors, w.release(), GetParam());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (moves.n_moved() < moves.size()) {
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the moves never finished";
        const auto hold = moves.hold();
        const size_t before = moves.n_moved();
        const size_t moved = w.check_consistent();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        // Nothing moves, and no bytes in use are released, while the hold lasts.
        EXPECT_EQ(moves.n_moved(), before);
        EXPECT_EQ(w.check_consistent(), moved);
        EXPECT_EQ(moved, before);
        for (size_t i = before; i < w.tensors.size(); ++i) {
            EXPECT_EQ(w.released_bytes(i), 0) << "tensor " << i << " in use lost its bytes";
        }
    }
    moves.finish();
    EXPECT_EQ(w.check_consistent(), w.tensors.size());
    for (size_t i = 0; i < w.tensors.size(); ++i) {
        EXPECT_EQ(w.released_bytes(i), int64_t(w.tensors[i]->nbytes())) << i;
    }
    std::lock_guard lock(w.mutex);
    EXPECT_EQ(w.released_twice, 0);
    // The big tensor's bytes went chunk by chunk (4 MiB each) where the budget is smaller.
    EXPECT_EQ(w.released.size(), w.tensors.size() + (GetParam() != 0 ? 1 : 0));
}

// Nobody computes: the copying starts on its own (after 100 ms) and finish() waits for it.
TEST(DeferredMoves, FinishWithoutAnyHold) {
    Weights w;
    DeferredMoves moves(cpu_repack_buffer_type(), w.tensors, w.release());
    moves.finish();
    EXPECT_EQ(moves.n_moved(), moves.size());
    EXPECT_EQ(w.check_consistent(), w.tensors.size());
}

// Destroyed at once (a `loom run -n 1` that ends before the moves): the thread stops at a chunk,
// the moved tensors released their old bytes, the others still read theirs. (The moved
// ones point into the destroyed object's memory: it goes with the model.)
TEST_P(DeferredMovesWithBudget, DestroyedWhileCopying) {
    Weights w;
    {
        DeferredMoves moves(cpu_repack_buffer_type(), w.tensors, w.release(), GetParam());
        { const auto hold = moves.hold(); }  // the copying may start now
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    // Moved tensors released all their old bytes; the others still read them, and at most
    // one (a big one stopped mid-copy) released part of them.
    int partly_released = 0;
    for (size_t i = 0; i < w.tensors.size(); ++i) {
        const Tensor *t = w.tensors[i];
        const int64_t released = w.released_bytes(i);
        if (t->data != w.old_data[i]) {
            EXPECT_EQ(released, int64_t(t->nbytes())) << i;
            continue;
        }
        EXPECT_EQ(std::memcmp(t->data, w.bytes[i].data(), t->nbytes()), 0) << i;
        EXPECT_GE(released, 0) << i;
        partly_released += released > 0;
    }
    EXPECT_LE(partly_released, 1);
}

INSTANTIATE_TEST_SUITE_P(Budgets, DeferredMovesWithBudget,
                         testing::Values(uint64_t(0), uint64_t(4) << 20));

TEST(DeferredMoves, RefusesTensorsWithoutWholeGroups) {
    loom::Context ctx({.mem_size = 1u << 12, .no_alloc = true});
    Tensor *t = ctx.new_tensor(DType::F16, {64, 20});
    Tensor *const list[] = {t};
    const auto buffer = place_tensors(host_buffer_type(), list);
    EXPECT_THROW(DeferredMoves(cpu_repack_buffer_type(), {t}, nullptr), Error);
}

class BackgroundRepack : public ::testing::TestWithParam<DType> {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("loom-deferred-moves-" + std::to_string(getpid()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }
    fs::path dir_;
};

// Logits of single-token decodes: the first computed from the mapping alone, the next while the
// matrices move (the 72 MB of moved weights pass the 64 MiB budget of copies not in use), the
// last after every one has moved.
std::vector<std::vector<float>> token_logits(const Model &model, int n_before_finish) {
    Context ctx(model, {.n_ctx = 64, .n_threads = 2});
    std::vector<std::vector<float>> out;
    for (int i = 0; i < n_before_finish + 2; ++i) {
        if (i == n_before_finish) model.finish_moving_weights();
        Batch batch;
        batch.add(int32_t(3 + 17 * i), Pos(i), 0, true);
        ctx.decode(batch);
        const auto row = ctx.logits(0);
        out.emplace_back(row.begin(), row.end());
    }
    return out;
}

TEST_P(BackgroundRepack, SameLogitsAsMovingFirst) {
    const std::string path = (dir_ / "model.gguf").string();
    write_synthetic_llama(path,
                          {.n_vocab = 8000,
                           .n_embd = 512,
                           .n_layer = 10,
                           .n_head = 8,
                           .n_head_kv = 4,
                           .n_ff = 1536,  // whole super-blocks of 256
                           .n_ctx = 64},
                          GetParam());
    const auto first = Model::load(path, {.repack_in_background = false, .progress = false});
    const auto later = Model::load(path, {.progress = false});
    const auto want = token_logits(*first, 12);
    const auto got = token_logits(*later, 12);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_TRUE(got[i] == want[i]) << "token " << i << ": other logits";
    }
    // Every matrix moved in the end, as in the model loaded the other way.
    const LayerWeights &l0 = later->weights().layers.at(0);
    for (const Tensor *t : {l0.wq, l0.ffn_down, later->weights().output}) {
        ASSERT_NE(t, nullptr);
        EXPECT_EQ(&t->buffer->type(), &cpu_repack_buffer_type()) << t->name;
        EXPECT_FALSE(t->flags & kFlagRepackPending) << t->name;
    }
}

// The float layouts, and block formats of both kinds (legacy, K-quant: the one that reads its
// group in pieces).
INSTANTIATE_TEST_SUITE_P(Types, BackgroundRepack,
                         ::testing::Values(DType::F16, DType::BF16, DType::Q4_0, DType::Q8_0,
                                           DType::Q6_K),
                         [](const auto &info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace loom::engine
