// Saved sequences (engine/context/sequence_state.h): a restored context goes on exactly as the
// one that saved it, whatever layout its V takes; files of another model, another KV type, cut
// short, with a lying count or trailing bytes are refused and leave the sequence as it was; one
// the context has no room for leaves it empty.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "engine/context/sequence_state.h"
#include "engine/sampling/sampler.h"
#include "loom/error.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

using test::argmax;
using test::bit_identical;
using test::load_fixture;

std::vector<int32_t> prompt_of(const test::Fixture &f) {
    return {f.tokens.begin(), f.tokens.begin() + std::min<size_t>(f.tokens.size(), 20)};
}

void decode_prompt(Context &ctx, const std::vector<int32_t> &prompt, SeqId seq = 0) {
    Batch batch;
    for (size_t i = 0; i < prompt.size(); ++i) {
        batch.add(prompt[i], Pos(i), seq, i + 1 == prompt.size());
    }
    ctx.decode(batch);
}

// n greedy steps from the logits at hand, sequence 0 at position `pos`: each step's logits.
std::vector<std::vector<float>> greedy(Context &ctx, std::vector<float> logits, Pos pos, int n) {
    std::vector<std::vector<float>> out;
    for (int i = 0; i < n; ++i) {
        Batch batch;
        batch.add(argmax(logits), pos++, 0, true);
        ctx.decode(batch);
        const auto row = ctx.logits(0);
        logits.assign(row.begin(), row.end());
        out.push_back(logits);
    }
    return out;
}

std::vector<std::byte> read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto bytes = std::as_bytes(std::span(chars));
    return {bytes.begin(), bytes.end()};
}

std::string temp_path(const std::string &name) {
    return (std::filesystem::temp_directory_path() /
            (name + "-" + std::to_string(::getpid()) + ".loomseq"))
        .string();
}

class SequenceStateRoundTrip : public ::testing::TestWithParam<const char *> {};

TEST_P(SequenceStateRoundTrip, RestoredContextGoesOnBitForBit) {
    const auto f = load_fixture(GetParam());
    const auto model = Model::load(f.model_path);
    const std::vector<int32_t> prompt = prompt_of(f);
    const std::string path = temp_path(std::string("roundtrip-") + GetParam());

    Context saver(*model, {.n_ctx = 256, .n_threads = 2});
    decode_prompt(saver, prompt);
    const auto row = saver.logits(0);
    Sampler sampler({.seed = 7});
    save_sequence(
        path, saver, 0,
        {.tokens = prompt, .logits = {row.begin(), row.end()}, .rng = sampler.rng_state()});
    const std::vector<float> last(row.begin(), row.end());
    const auto expected = greedy(saver, last, Pos(prompt.size()), 8);

    for (const bool flash : {false, true}) {  // V stored transposed, or not
        Context restored(*model, {.n_ctx = 256, .n_threads = 2, .flash_attn = flash});
        const SequenceState state = load_sequence(path, restored, 0);
        EXPECT_EQ(state.tokens, prompt);
        EXPECT_TRUE(bit_identical(state.logits, last));
        Sampler resumed({.seed = 1});
        resumed.set_rng_state(state.rng);
        EXPECT_EQ(resumed.rng_state(), sampler.rng_state());
        EXPECT_EQ(restored.memory().seq_pos_max(0), Pos(prompt.size()) - 1);
        // Saved again, the cells make the same bytes: K and V came back as they were.
        const std::string again = path + ".again";
        save_sequence(again, restored, 0, state);
        EXPECT_EQ(read_file(again), read_file(path)) << "flash " << flash;
        std::filesystem::remove(again);
        if (flash) continue;  // flash attention computes other logits than the saver's path
        const auto got = greedy(restored, state.logits, Pos(prompt.size()), 8);
        for (size_t i = 0; i < got.size(); ++i)
            EXPECT_TRUE(bit_identical(got[i], expected[i])) << i;
    }
    std::filesystem::remove(path);
}

// Plain, sliding-window (two caches), latent attention (K only).
INSTANTIATE_TEST_SUITE_P(Fixtures, SequenceStateRoundTrip,
                         ::testing::Values("stories260K", "gemma2", "deepseek2"));

class SequenceStateRefusals : public ::testing::Test {
  protected:
    void SetUp() override {
        const auto f = load_fixture("stories260K");
        model_ = Model::load(f.model_path);
        prompt_ = prompt_of(f);
        path_ = temp_path("refusals");
        Context ctx(*model_, {.n_ctx = 256, .n_threads = 2});
        decode_prompt(ctx, prompt_);
        save_sequence(path_, ctx, 0, {.tokens = prompt_});
        bytes_ = read_file(path_);
    }
    void TearDown() override { std::filesystem::remove(path_); }

    // Loads `bytes` into a context holding 5 tokens of a prompt in sequence 0, expects
    // loom::Error("[state] ...") containing `words`, and the sequence left with `kept` tokens.
    void expect_refused(std::span<const std::byte> bytes, const std::string &words,
                        ContextOptions options = {.n_ctx = 256, .n_threads = 2}, Pos kept = 5) {
        Context ctx(*model_, options);
        decode_prompt(ctx, {prompt_.begin(), prompt_.begin() + 5});
        try {
            load_sequence(bytes, "the file", ctx, 0);
            ADD_FAILURE() << "no error for " << words;
        } catch (const Error &e) {
            const std::string msg = e.what();
            EXPECT_NE(msg.find("[state]"), std::string::npos) << msg;
            EXPECT_NE(msg.find(words), std::string::npos) << msg;
        }
        EXPECT_EQ(ctx.memory().seq_pos_max(0), kept - 1) << words;
    }

    std::unique_ptr<Model> model_;
    std::vector<int32_t> prompt_;
    std::string path_;
    std::vector<std::byte> bytes_;
};

TEST_F(SequenceStateRefusals, AnotherModel) {
    const auto other = Model::load(load_fixture("llama-moe").model_path);
    Context ctx(*other, {.n_ctx = 256, .n_threads = 2});
    try {
        load_sequence(path_, ctx, 0);
        FAIL() << "no error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("saved with another model"), std::string::npos)
            << e.what();
    }
    EXPECT_NE(model_identity(*other), model_identity(*model_));
}

TEST_F(SequenceStateRefusals, AnotherKvType) {
    expect_refused(bytes_, "another KV type",
                   {.n_ctx = 256, .n_threads = 2, .type_k = DType::F32, .type_v = DType::F32});
}

TEST_F(SequenceStateRefusals, NoRoomInASmallerContext) {
    expect_refused(bytes_, "no room", {.n_ctx = 16, .n_threads = 2}, 0);
}

TEST_F(SequenceStateRefusals, TruncatedAnywhere) {
    for (size_t n : {size_t(0), size_t(4), size_t(8), size_t(12), size_t(44), size_t(60),
                     bytes_.size() / 3, bytes_.size() / 2, bytes_.size() - 1}) {
        expect_refused(std::span(bytes_).first(n),
                       n < 8 ? "not a Loom sequence file" : "truncated");
    }
}

TEST_F(SequenceStateRefusals, LyingCountsAndTrailingBytes) {
    std::vector<std::byte> lying = bytes_;
    const uint64_t huge = uint64_t(1) << 60;
    std::memcpy(lying.data() + 44, &huge, sizeof huge);  // the token count
    expect_refused(lying, "truncated or corrupt");
    std::vector<std::byte> longer = bytes_;
    longer.push_back(std::byte{0});
    expect_refused(longer, "bytes after its end");
    std::vector<std::byte> magic = bytes_;
    magic[0] = std::byte{'X'};
    expect_refused(magic, "not a Loom sequence file");
}

TEST_F(SequenceStateRefusals, TokensThatDoNotMatchTheCellsLeaveTheSequenceAsItWas) {
    Context ctx(*model_, {.n_ctx = 256, .n_threads = 2});
    decode_prompt(ctx, prompt_);
    const std::vector<int32_t> fewer(prompt_.begin(), prompt_.end() - 1);
    save_sequence(path_, ctx, 0, {.tokens = fewer});
    expect_refused(read_file(path_), "tokens, but its cells end at position");
}

}  // namespace
}  // namespace loom::engine
