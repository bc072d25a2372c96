// A quantized KV cache (llama.cpp's -ctk / -ctv): llama.cpp's logits for the same setting
// (kv_types/generate.sh), the memory a cell takes, sequences saved and restored, and the settings
// a cache cannot take refused with a message.
#include <gtest/gtest.h>

#include <fstream>

#include "engine/context/context.h"
#include "engine/context/sequence_state.h"
#include "loom/error.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

using test::Fixture;
using test::load_fixture;
using test::nmse;

constexpr int64_t kKeptRows = 8;  // the last positions generate.sh keeps

struct KvCase {
    const char *fixture;
    const char *type;
    double tolerance;  // NMSE of the kept rows against llama.cpp's
};

std::string case_name(const ::testing::TestParamInfo<KvCase> &info) {
    std::string name = std::string(info.param.fixture) + "_" + info.param.type;
    for (char &c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return name;
}

ContextOptions quantized(const Fixture &f, DType type) {
    return {.n_ctx = f.json["settings"]["n_ctx"].get<int64_t>(),
            .n_threads = 2,
            .flash_attn = true,
            .type_k = type,
            .type_v = type};
}

class KvTypeParity : public ::testing::TestWithParam<KvCase> {};

TEST_P(KvTypeParity, MatchesLlamaCpp) {
    const KvCase &c = GetParam();
    const Fixture f = load_fixture(c.fixture);
    const auto path = std::filesystem::path(LOOM_SOURCE_DIR) / "tests/engine/model/kv_types" /
                      (std::string(c.fixture) + "." + c.type + ".f32");
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in) << "missing " << path;
    std::vector<float> want(size_t(kKeptRows * f.n_vocab));
    in.read(reinterpret_cast<char *>(want.data()), std::streamsize(want.size() * sizeof(float)));
    ASSERT_TRUE(in) << path << " is short";

    const auto model = Model::load(f.model_path);
    Context ctx(*model, quantized(f, *dtype_from_name(c.type)));
    const std::vector<float> all = test::all_logits(ctx, f.tokens);
    const std::span<const float> got = std::span(all).last(want.size());
    EXPECT_LT(nmse(got, std::span<const float>(want)), c.tolerance);
    for (int64_t r = 0; r < kKeptRows; ++r) {
        const auto row = [&](std::span<const float> v) {
            return v.subspan(size_t(r * f.n_vocab), size_t(f.n_vocab));
        };
        EXPECT_EQ(test::argmax(row(got)), test::argmax(row(want))) << "row " << r;
    }
}

// Flash attention sums in blocks of positions where llama.cpp goes one at a time: 1e-5, as for
// stories260K-fa in parity_tests.cpp.
INSTANTIATE_TEST_SUITE_P(Fixtures, KvTypeParity,
                         ::testing::Values(KvCase{"llama-q-q8_0", "q8_0", 1e-5},
                                           KvCase{"llama-q-q8_0", "q4_1", 1e-5},
                                           KvCase{"llama-q-q8_0", "q5_0", 1e-5},
                                           KvCase{"gemma2", "q8_0", 1e-5}),
                         case_name);

// Not yet at llama.cpp's logits: 1e-4 .. 2e-5 away where the formats' own quantization moves them
// by 1e-2 (measured: q4_0 1.2e-4, q5_1 2.0e-5, gemma2 q4_0 1.6e-5). Held to that until the cause
// is found (docs/ARCHITECTURES.md, "Quantized KV cache"); IQ4_NL is further off (1.4e-2): llama.cpp
// writes a cache row without the scale search its file quantizer does, and Loom has only the
// latter.
INSTANTIATE_TEST_SUITE_P(OpenGaps, KvTypeParity,
                         ::testing::Values(KvCase{"llama-q-q8_0", "q4_0", 3e-4},
                                           KvCase{"llama-q-q8_0", "q5_1", 6e-5},
                                           KvCase{"gemma2", "q4_0", 5e-5}),
                         case_name);

TEST(KvTypes, ACellTakesItsTypesBytes) {
    const Fixture f = load_fixture("llama-q-q8_0");
    const auto model = Model::load(f.model_path);
    ContextOptions o = quantized(f, DType::F16);
    const size_t f16 = Context(*model, o).memory().memory_bytes();
    o.type_k = o.type_v = DType::Q8_0;
    const size_t q8 = Context(*model, o).memory().memory_bytes();
    o.type_v = DType::Q4_0;
    const size_t mixed = Context(*model, o).memory().memory_bytes();
    // 32 values: 64 bytes in F16, 34 in Q8_0, 18 in Q4_0.
    EXPECT_EQ(q8 * 64, f16 * 34);
    EXPECT_EQ(mixed * 64, f16 * (34 + 18) / 2);
}

TEST(KvTypes, SavedSequencesComeBackBitForBit) {
    const Fixture f = load_fixture("llama-q-q8_0");
    const auto model = Model::load(f.model_path);
    ContextOptions o = quantized(f, DType::Q4_1);
    o.type_v = DType::Q8_0;
    Context ctx(*model, o);
    const std::vector<int32_t> prompt(f.tokens.begin(), f.tokens.end() - 1);
    test::all_logits(ctx, prompt);
    const std::vector<std::byte> saved = ctx.save_seq(0);
    Batch last;
    last.add(f.tokens.back(), Pos(prompt.size()), 0, true);
    ctx.decode(last);
    const std::vector<float> want(ctx.logits(0).begin(), ctx.logits(0).end());

    Context restored(*model, o);
    restored.place_seq(0, restored.read_seq(saved, "the state"), "the state");
    restored.decode(last);
    EXPECT_TRUE(test::bit_identical(restored.logits(0), want));
    // Another V type cannot read them.
    o.type_v = DType::Q4_0;
    Context other(*model, o);
    EXPECT_THROW(other.read_seq(saved, "the state"), Error);
}

void expect_refused(const std::string &fixture, ContextOptions o, const std::string &words) {
    const auto model = Model::load(load_fixture(fixture).model_path);
    try {
        Context ctx(*model, o);
        ADD_FAILURE() << "accepted: " << words;
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
}

TEST(KvTypes, SettingsACacheCannotTakeAreRefused) {
    const ContextOptions fa{.n_ctx = 64, .n_threads = 1, .flash_attn = true};
    ContextOptions o = fa;
    o.type_v = DType::Q8_0;
    o.flash_attn = false;
    expect_refused("llama-q-q8_0", o, "needs flash attention");
    o = fa;
    o.type_k = DType::Q2_K;
    expect_refused("llama-q-q8_0", o, "K cache type Q2_K is not supported");
    o = fa;
    o.type_k = DType::Q8_0;  // stories260K's heads are 8 values: not a whole block
    expect_refused("stories260K", o, "head size 8 is not a multiple of its block of 32");
}

}  // namespace
}  // namespace loom::engine
