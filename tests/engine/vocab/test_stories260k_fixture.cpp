// ../shared/fixtures/stories260K-tokenize: llama-tokenize's ids for 10 texts on stories260K
// (SentencePiece, 512 tokens), with BOS, without, and with special-token text parsed.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/vocab/vocab.h"

namespace loom::engine {
namespace {

const std::string kShared = std::string(LOOM_SOURCE_DIR) + "/../shared";

TEST(Stories260kTokenize, MatchesLlamaTokenize) {
    std::ifstream in(kShared + "/fixtures/stories260K-tokenize/case.json");
    ASSERT_TRUE(in) << "missing " << kShared << "/fixtures/stories260K-tokenize/case.json";
    const nlohmann::json fixture = nlohmann::json::parse(in);
    const gguf::File file(kShared + "/models/stories260K.gguf");
    const Vocab vocab = Vocab::from_gguf(file);
    EXPECT_EQ(vocab.n_tokens(), 512);
    EXPECT_EQ(vocab.bos(), 1);
    EXPECT_EQ(vocab.eos(), 2);
    EXPECT_TRUE(vocab.add_bos());
    EXPECT_FALSE(vocab.add_eos());
    EXPECT_TRUE(vocab.is_eog(2));
    EXPECT_TRUE(vocab.is_control(1));

    ASSERT_FALSE(fixture.at("items").empty());
    for (const nlohmann::json &item : fixture.at("items")) {
        const std::string text = item.at("text");
        SCOPED_TRACE("text '" + text + "'");
        EXPECT_EQ(vocab.tokenize(text, true, false), item.at("tokens").get<std::vector<int32_t>>());
        EXPECT_EQ(vocab.tokenize(text, false, false),
                  item.at("tokens_no_bos").get<std::vector<int32_t>>());
        EXPECT_EQ(vocab.tokenize(text, true, true),
                  item.at("tokens_parse_special").get<std::vector<int32_t>>());
    }
}

TEST(Stories260kTokenize, PiecesAndText) {
    const gguf::File file(kShared + "/models/stories260K.gguf");
    const Vocab vocab = Vocab::from_gguf(file);
    EXPECT_EQ(vocab.token_to_piece(403, false), " Once");
    EXPECT_EQ(vocab.token_to_piece(1, false), "");
    EXPECT_EQ(vocab.token_to_piece(1, true), "<s>");
    EXPECT_EQ(vocab.token_to_piece(13, false), "\n");  // <0x0A>
    const std::vector<int32_t> ids = vocab.tokenize("Once upon a time", true, false);
    EXPECT_EQ(ids, (std::vector<int32_t>{1, 403, 407, 261, 378}));
    // As llama.cpp: only the first piece loses its leading space, and here that is BOS.
    EXPECT_EQ(vocab.detokenize(ids, false), " Once upon a time");
    EXPECT_EQ(vocab.detokenize(ids, true), "<s> Once upon a time");
}

}  // namespace
}  // namespace loom::engine
