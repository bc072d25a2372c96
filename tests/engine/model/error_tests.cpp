// Bad input to the model loader and to decode(): each throws loom::Error with a message naming
// what is wrong, and a context that refused a batch still decodes the next one.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "engine/context/context.h"
#include "loom/error.h"
#include "loom/gguf.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

using test::load_fixture;
using test::nmse;

// The message of the loom::Error that `f` throws ("" and a test failure when it throws none).
std::string error_of(const std::function<void()> &f) {
    try {
        f();
    } catch (const Error &e) {
        return e.what();
    }
    ADD_FAILURE() << "no loom::Error thrown";
    return "";
}

std::filesystem::path temp_dir() {
    return std::filesystem::temp_directory_path() /
           ("loom-error-tests-" + std::to_string(::getpid()));
}

std::filesystem::path temp_path(const std::string &name) {
    std::filesystem::create_directories(temp_dir());
    return temp_dir() / name;
}

std::string stories_path() {
    return load_fixture("stories260K").model_path;
}

// Writes stories260K again with `edit` applied to the writer after its keys are copied, and
// every tensor that `keep` accepts (with the shape `reshape` gives it).
using TensorEdit = std::function<bool(const gguf::TensorInfo &, std::vector<int64_t> &ne)>;
std::string rewrite_stories(const std::string &name, const TensorEdit &edit,
                            const std::function<void(gguf::Writer &)> &edit_keys = {}) {
    const gguf::File source(stories_path());
    gguf::Writer w;
    for (const auto &entry : source.metadata().entries()) w.set(entry.key, entry.value);
    if (edit_keys) edit_keys(w);
    for (const gguf::TensorInfo &t : source.tensors()) {
        std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
        if (!edit(t, ne)) continue;
        w.add_tensor(t.name, t.type, ne, source.tensor_data(t).data());
    }
    const std::string path = temp_path(name).string();
    w.write(path);
    return path;
}

// Each test writes its files into temp_dir(), removed afterwards.
class ModelErrors : public ::testing::Test {
  protected:
    void TearDown() override { std::filesystem::remove_all(temp_dir()); }
};

TEST_F(ModelErrors, MissingFileNamesThePath) {
    const std::string path = temp_path("no-such-model.gguf").string();
    const std::string msg = error_of([&] { Model::load(path); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

TEST_F(ModelErrors, TextFileIsNotAGguf) {
    const std::string path = temp_path("notes.gguf").string();
    std::ofstream(path) << "These are notes, not a model. They are long enough to be parsed.\n";
    const std::string msg = error_of([&] { Model::load(path); });
    EXPECT_NE(msg.find("[gguf]"), std::string::npos) << msg;
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
}

TEST_F(ModelErrors, UnsupportedArchitectureIsNamedWithTheSupportedOnes) {
    gguf::Writer w;
    w.set("general.architecture", std::string("mamba42"));
    const std::vector<float> data(16, 0.5f);
    w.add_tensor("token_embd.weight", DType::F32, {4, 4}, data.data());
    const std::string path = temp_path("mamba42.gguf").string();
    w.write(path);
    const std::string msg = error_of([&] { Model::load(path); });
    EXPECT_NE(msg.find("[model]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("mamba42"), std::string::npos) << msg;
    EXPECT_NE(msg.find("llama"), std::string::npos) << msg;
}

TEST_F(ModelErrors, MissingTensorIsNamed) {
    const std::string path = rewrite_stories(
        "missing.gguf", [](const auto &t, auto &) { return t.name != "blk.1.ffn_down.weight"; });
    const std::string msg = error_of([&] { Model::load(path); });
    EXPECT_NE(msg.find("blk.1.ffn_down.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("missing"), std::string::npos) << msg;
}

TEST_F(ModelErrors, MisshapenTensorIsNamedWithBothShapes) {
    // ffn_up [n_embd, n_ff] stored as [n_ff, n_embd]: the same bytes, the wrong shape.
    const std::string path = rewrite_stories("misshapen.gguf", [](const auto &t, auto &ne) {
        if (t.name == "blk.0.ffn_up.weight") std::swap(ne[0], ne[1]);
        return true;
    });
    const std::string msg = error_of([&] { Model::load(path); });
    EXPECT_NE(msg.find("blk.0.ffn_up.weight"), std::string::npos) << msg;
    EXPECT_NE(msg.find("shape"), std::string::npos) << msg;
}

TEST_F(ModelErrors, RewrittenModelLoads) {
    // The writer round trip itself is sound: with nothing removed the model loads.
    const std::string path =
        rewrite_stories("same.gguf", [](const auto &, auto &) { return true; });
    EXPECT_NO_THROW(Model::load(path));
}

TEST_F(ModelErrors, BlockCountBelowTheLayersOfTheFileIsRefused) {
    // stories260K has 5 layers; a block_count of 4 would leave blk.4.* unused.
    const std::string path = rewrite_stories(
        "short-count.gguf", [](const auto &, auto &) { return true; },
        [](gguf::Writer &w) { w.set("llama.block_count", uint32_t(4)); });
    const std::string msg = error_of([&] { Model::load(path); });
    EXPECT_NE(msg.find("llama.block_count = 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("blk.4."), std::string::npos) << msg;
}

TEST_F(ModelErrors, ExpertCountWithoutExpertTensorsIsRefused) {
    const std::string path = rewrite_stories(
        "no-experts.gguf", [](const auto &, auto &) { return true; },
        [](gguf::Writer &w) {
            w.set("llama.expert_count", uint32_t(4));
            w.set("llama.expert_used_count", uint32_t(2));
        });
    const std::string msg = error_of([&] { Model::load(path); });
    EXPECT_NE(msg.find("llama.expert_count = 4"), std::string::npos) << msg;
    EXPECT_NE(msg.find("ffn_gate_inp"), std::string::npos) << msg;
}

TEST_F(ModelErrors, TensorTheArchitectureDoesNotReadIsRefused) {
    // An FFN bias the llama graph has no place for: run without it, the output would be wrong.
    const std::vector<float> bias(172, 0.25f);
    const std::string path = rewrite_stories(
        "extra.gguf", [](const auto &, auto &) { return true; },
        [&](gguf::Writer &w) {
            w.add_tensor("blk.1.ffn_down.bias", DType::F32, {64}, bias.data());
        });
    const std::string msg = error_of([&] { Model::load(path); });
    EXPECT_NE(msg.find("blk.1.ffn_down.bias"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not part of a llama model"), std::string::npos) << msg;
}

class DecodeErrors : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto f = load_fixture("stories260K");
        ASSERT_FALSE(f.tokens.empty());
        prompt_ = f.tokens;
        model_ = Model::load(f.model_path);
    }
    Batch prompt_batch(size_t n, SeqId seq = 0) const {
        Batch b;
        for (size_t i = 0; i < n; ++i) b.add(prompt_[i % prompt_.size()], Pos(i), seq, true);
        return b;
    }
    std::vector<int32_t> prompt_;
    std::unique_ptr<Model> model_;
};

// Decodes the first 10 prompt tokens and checks the logits against a fresh context's.
void expect_still_works(Context &ctx, const Batch &valid, const Model &model) {
    ASSERT_NO_THROW(ctx.decode(valid));
    Context fresh(model, ctx.options());
    fresh.decode(valid);
    ASSERT_EQ(ctx.n_outputs(), fresh.n_outputs());
    for (int64_t i = 0; i < ctx.n_outputs(); ++i) {
        EXPECT_LT(nmse(ctx.logits(i), fresh.logits(i)), 1e-12) << "output " << i;
    }
}

// Memory is checked before it is taken: a context or buffer the machine cannot hold is an error
// that says how much it needs and how much there is, not a process killed mid-way.
TEST_F(DecodeErrors, ContextTooLargeForTheMachine) {
    const std::string msg = error_of([&] { Context ctx(*model_, {.n_ctx = int64_t(1) << 40}); });
    EXPECT_NE(msg.find("[kv] a KV cache of 1099511627776 cells needs"), std::string::npos) << msg;
    EXPECT_NE(msg.find("GiB is available (lower --ctx-size)"), std::string::npos) << msg;
}

TEST(HostMemory, AllocationPastWhatIsAvailableIsRefused) {
    if (available_memory() == std::numeric_limits<size_t>::max()) GTEST_SKIP() << "unknown";
    const size_t too_much = available_memory() + (size_t(1) << 30);
    const std::string msg = error_of([&] { host_buffer_type().allocate(too_much); });
    EXPECT_NE(msg.find("[buffer]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("GiB of memory needed"), std::string::npos) << msg;
    EXPECT_NE(msg.find("GiB available"), std::string::npos) << msg;
}

TEST_F(DecodeErrors, TokenOutOfRange) {
    Context ctx(*model_, {.n_ctx = 64, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32});
    Batch bad = prompt_batch(5);
    bad.tokens[3] = 512;  // n_vocab = 512
    const std::string msg = error_of([&] { ctx.decode(bad); });
    EXPECT_NE(msg.find("[decode]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("512"), std::string::npos) << msg;
    EXPECT_NE(msg.find("511"), std::string::npos) << msg;  // the largest valid id
    EXPECT_EQ(ctx.memory().used(), 0);
    expect_still_works(ctx, prompt_batch(10), *model_);
}

TEST_F(DecodeErrors, SequenceIdPastNSeqMax) {
    Context ctx(
        *model_,
        {.n_ctx = 64, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32, .n_seq_max = 2});
    Batch bad = prompt_batch(5);
    bad.seq_id[4] = 2;
    const std::string msg = error_of([&] { ctx.decode(bad); });
    EXPECT_NE(msg.find("sequence id 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("0..1"), std::string::npos) << msg;
    bad.seq_id[4] = -1;
    error_of([&] { ctx.decode(bad); });
    EXPECT_EQ(ctx.memory().used(), 0);
    expect_still_works(ctx, prompt_batch(10, 1), *model_);
}

TEST_F(DecodeErrors, PromptLongerThanTheContext) {
    Context ctx(*model_, {.n_ctx = 16, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32});
    const std::string msg = error_of([&] { ctx.decode(prompt_batch(20)); });
    EXPECT_NE(msg.find("20 more tokens"), std::string::npos) << msg;
    EXPECT_NE(msg.find("16"), std::string::npos) << msg;
    EXPECT_EQ(ctx.memory().used(), 0);
    expect_still_works(ctx, prompt_batch(10), *model_);
}

TEST_F(DecodeErrors, FullContextRefusesTheNextTokenAndKeepsItsCells) {
    Context ctx(*model_, {.n_ctx = 16, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32});
    ctx.decode(prompt_batch(16));
    Batch next;
    next.add(prompt_[16], 16, 0, true);
    const std::string msg = error_of([&] { ctx.decode(next); });
    EXPECT_NE(msg.find("16 of its 16 cells"), std::string::npos) << msg;
    EXPECT_EQ(ctx.memory().used(), 16);
    EXPECT_EQ(ctx.memory().seq_pos_max(0), 15);
    ctx.memory().seq_rm(0, 10, -1);
    Batch rest;
    for (Pos p = 10; p < 16; ++p) rest.add(prompt_[size_t(p)], p, 0, p == 15);
    ctx.decode(rest);
    Context fresh(*model_, ctx.options());
    fresh.decode(prompt_batch(16));
    EXPECT_LT(nmse(ctx.logits(0), fresh.logits(15)), 1e-12);
}

TEST_F(DecodeErrors, MalformedBatches) {
    Context ctx(
        *model_,
        {.n_ctx = 64, .n_batch = 8, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32});
    EXPECT_NE(error_of([&] { ctx.decode(Batch{}); }).find("empty"), std::string::npos);
    const std::string too_big = error_of([&] { ctx.decode(prompt_batch(9)); });
    EXPECT_NE(too_big.find("n_batch = 8"), std::string::npos) << too_big;
    Batch short_logits = prompt_batch(4);
    short_logits.logits.pop_back();
    error_of([&] { ctx.decode(short_logits); });
    Batch negative = prompt_batch(4);
    negative.pos[2] = -3;
    EXPECT_NE(error_of([&] { ctx.decode(negative); }).find("-3"), std::string::npos);
    EXPECT_THROW(ctx.logits(0), Error);  // no batch decoded yet
    expect_still_works(ctx, prompt_batch(8), *model_);
}

// KV operations name a sequence the context does not have.
TEST_F(DecodeErrors, KvOperationsCheckSequenceIds) {
    Context ctx(
        *model_,
        {.n_ctx = 64, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32, .n_seq_max = 2});
    const std::string msg = error_of([&] { ctx.memory().seq_cp(0, 2, 0, -1); });
    EXPECT_NE(msg.find("sequence id 2 is outside 0..1"), std::string::npos) << msg;
    EXPECT_THROW(ctx.memory().seq_add(-1, 0, -1, 3), Error);
    EXPECT_THROW(ctx.memory().seq_keep(7), Error);
    EXPECT_NO_THROW(ctx.memory().seq_rm(-1, 0, -1));  // -1: every sequence
    EXPECT_THROW(Context(*model_, {.n_ctx = 64, .n_seq_max = 0}), Error);
}

// Positions must follow on from the cache (and within the batch) one at a time.
TEST_F(DecodeErrors, PositionsThatSkipOrRepeat) {
    Context ctx(*model_, {.n_ctx = 64, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32});
    ctx.decode(prompt_batch(4));
    Batch gap;
    gap.add(prompt_[4], 6, 0, true);
    const std::string msg = error_of([&] { ctx.decode(gap); });
    EXPECT_NE(msg.find("position 6"), std::string::npos) << msg;
    EXPECT_NE(msg.find("4 comes next"), std::string::npos) << msg;
    Batch repeat;
    repeat.add(prompt_[4], 4, 0, false);
    repeat.add(prompt_[5], 4, 0, true);
    EXPECT_NE(error_of([&] { ctx.decode(repeat); }).find("5 comes next"), std::string::npos);
    EXPECT_EQ(ctx.memory().seq_pos_max(0), 3);  // neither changed the cache
}

}  // namespace
}  // namespace loom::engine
