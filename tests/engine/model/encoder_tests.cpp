// The BERT family against llama.cpp on encoders the shared fixture lacks: bert, nomic-bert
// (rotary, fused QKV, SwiGLU) and jina-bert-v2 (ALiBi, Q/K norms, merged GEGLU) of other widths,
// head counts and seeds, written by write_synthetic_encoder from the arguments in
// tests/engine/model/encoders/<case>.json, whose embeddings llama-embedding computed
// (generate.sh there): every pooling (none, mean, cls, last) within NMSE 1e-6, and a reranker's
// scores (rank, one and three outputs) for query / document pairs.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "engine/context/pooling.h"
#include "engine/models/synthetic_encoders.h"
#include "loom/error.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine::test {
namespace {

const std::filesystem::path kCases =
    std::filesystem::path(LOOM_SOURCE_DIR) / "tests" / "engine" / "model" / "encoders";

std::filesystem::path vocab_path() {
    return std::filesystem::path(LOOM_SOURCE_DIR).parent_path() / "shared" / "models" / "vocab" /
           "ggml-vocab-bert-bge.gguf";
}

std::vector<std::string> lines_of(const std::filesystem::path &path) {
    std::ifstream in(path);
    std::vector<std::string> out;
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) out.push_back(line);
    }
    return out;
}

// `loom gguf synth`'s arguments (as generate.sh gave them) as the writer's shape.
EncoderShape shape_of(const std::vector<std::string> &args, uint32_t &seed) {
    EncoderShape s;
    for (size_t i = 0; i + 1 < args.size(); i += 2) {
        const std::string &key = args[i], &value = args[i + 1];
        if (key == "--arch")
            s.arch = value;
        else if (key == "--n-embd")
            s.n_embd = std::stoll(value);
        else if (key == "--n-layer")
            s.n_layer = std::stoll(value);
        else if (key == "--n-head")
            s.n_head = std::stoll(value);
        else if (key == "--n-ff")
            s.n_ff = std::stoll(value);
        else if (key == "--n-ctx")
            s.n_ctx = std::stoll(value);
        else if (key == "--std")
            s.stddev = std::stof(value);
        else if (key == "--seed")
            seed = uint32_t(std::stoul(value));
        else if (key == "--n-cls-out")
            s.n_cls_out = std::stoll(value);
        else if (key == "--pooling")
            s.pooling = pooling_from_name(value).value();
        else
            ADD_FAILURE() << "unknown synth argument " << key;
    }
    return s;
}

class EncoderParity : public testing::TestWithParam<std::string> {};

TEST_P(EncoderParity, MatchesLlamaCpp) {
    if (!std::filesystem::exists(vocab_path())) {
        FAIL() << "missing " << vocab_path() << ": the tests need ../shared beside the repository";
    }
    std::ifstream in(kCases / (GetParam() + ".json"));
    ASSERT_TRUE(in) << "missing case " << GetParam();
    const auto c = nlohmann::json::parse(in);
    uint32_t seed = 1;
    const EncoderShape shape = shape_of(c["synth"].get<std::vector<std::string>>(), seed);
    const auto path = std::filesystem::path(testing::TempDir()) / (GetParam() + ".gguf");
    write_synthetic_encoder(path.string(), shape, DType::F32, vocab_path().string(), seed);
    const auto model = Model::load(path.string());
    const Pooling pooling = pooling_from_name(c["pooling"].get<std::string>()).value();

    std::vector<std::vector<int32_t>> texts;
    for (const std::string &line : lines_of(kCases / c["texts"].get<std::string>())) {
        const size_t tab = line.find('\t');
        texts.push_back(pooling == Pooling::rank
                            ? rerank_pair_tokens(model->vocab(), rerank_prompt(*model),
                                                 line.substr(0, tab), line.substr(tab + 1))
                            : model->vocab().tokenize(line, true, false));
    }
    Context ctx(*model, {.n_ctx = 128, .n_batch = 128, .n_threads = 2, .n_seq_max = 4});
    EXPECT_TRUE(ctx.memory().cache(0).layers().empty()) << "an encoder keeps no K and V";
    EXPECT_EQ(ctx.memory().memory_bytes(), 0u);
    const auto got = embed_sequences(ctx, texts, pooling, false);

    std::vector<float> got_all, want_all;
    for (const auto &text : got) {
        for (const auto &e : text) got_all.insert(got_all.end(), e.begin(), e.end());
    }
    for (const auto &e : c["embeddings"]) {
        const auto v = e.get<std::vector<float>>();
        want_all.insert(want_all.end(), v.begin(), v.end());
    }
    ASSERT_EQ(got_all.size(), want_all.size());
    const double error = nmse(std::span<const float>(got_all), std::span<const float>(want_all));
    EXPECT_LT(error, 1e-6);
    RecordProperty("nmse", fmt::format("{:.3g}", error));
    // And no value far off where the others hide it: values are O(1), llama.cpp's softmax
    // rounds differently (jina's ALiBi: NMSE 8e-10, one value in 4,000 off by 2.5e-4).
    for (size_t i = 0; i < got_all.size(); ++i) {
        ASSERT_NEAR(got_all[i], want_all[i], 1e-3) << "value " << i;
    }
}

INSTANTIATE_TEST_SUITE_P(Cases, EncoderParity,
                         testing::Values("bert-none", "bert-mean", "bert-cls", "bert-last",
                                         "nomic-bert-none", "nomic-bert-mean", "jina-bert-v2-none",
                                         "jina-bert-v2-mean", "bert-rank", "bert-rank3"),
                         [](const auto &info) {
                             std::string name = info.param;
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

// The pair as llama-embedding joins it for a WordPiece vocabulary: [CLS] q [SEP] d [SEP].
TEST(Rerank, PairTokensAsLlamaEmbedding) {
    if (!std::filesystem::exists(vocab_path())) FAIL() << "missing " << vocab_path();
    const auto path = std::filesystem::path(testing::TempDir()) / "rerank-pair.gguf";
    write_synthetic_encoder(path.string(),
                            {.n_embd = 32,
                             .n_layer = 1,
                             .n_head = 2,
                             .n_ff = 32,
                             .n_ctx = 64,
                             .pooling = Pooling::rank,
                             .n_cls_out = 1},
                            DType::F32, vocab_path().string());
    const auto model = Model::load(path.string());
    // llama-embedding --verbose-prompt for "what is a cat?\tA cat purrs.".
    EXPECT_EQ(rerank_pair_tokens(model->vocab(), "", "what is a cat?", "A cat purrs."),
              (std::vector<int32_t>{101, 2054, 2003, 1037, 4937, 1029, 102, 1037, 4937, 16405,
                                    12171, 2015, 1012, 102}));
}

// Rank pooling needs a head; a plain encoder refuses it with a message.
TEST(Rerank, RefusedWithoutAHead) {
    if (!std::filesystem::exists(vocab_path())) FAIL() << "missing " << vocab_path();
    const auto path = std::filesystem::path(testing::TempDir()) / "no-head.gguf";
    write_synthetic_encoder(path.string(),
                            {.n_embd = 32, .n_layer = 1, .n_head = 2, .n_ff = 32, .n_ctx = 64},
                            DType::F32, vocab_path().string());
    const auto model = Model::load(path.string());
    Context ctx(*model, {.n_ctx = 64, .n_batch = 64, .n_threads = 1});
    EXPECT_EQ(ctx.n_scores(), 0);
    const std::vector<std::vector<int32_t>> texts = {{101, 2054, 102}};
    try {
        embed_sequences(ctx, texts, Pooling::rank, false);
        FAIL() << "rank pooling without a head";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("no classifier head"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace loom::engine::test
