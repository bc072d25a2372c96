// The /v1/embeddings request and answer: every input shape OpenAI's API takes read as token
// lists, the fields' errors naming them, base64 as RFC 4648 has it.
#include "tools/loom/serve/embeddings.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "loom/gguf.h"
#include "tests/serve/refused_param.h"
#include "tools/loom/serve/request.h"

namespace loom::serve {
namespace {

const engine::Vocab &stories_vocab() {
    static const engine::Vocab vocab = [] {
        const auto path = std::filesystem::path(LOOM_SOURCE_DIR).parent_path() / "shared" /
                          "models" / "stories260K.gguf";
        if (!std::filesystem::exists(path)) ADD_FAILURE() << "missing " << path;
        return engine::Vocab::from_gguf(gguf::File(path.string()));
    }();
    return vocab;
}

EmbeddingRequest parse(const char *body) {
    return parse_embedding_request(nlohmann::json::parse(body), stories_vocab(), 64, 100);
}

std::string param_of(const char *body) {
    return refused_param(body, [](const char *b) { parse(b); });
}

TEST(Embeddings, EveryInputShape) {
    const std::vector<int32_t> cat = stories_vocab().tokenize("The cat", true, false);
    EXPECT_EQ(parse(R"({"input": "The cat"})").inputs, std::vector<std::vector<int32_t>>{cat});
    EXPECT_EQ(parse(R"({"input": ["The cat", "The cat"]})").inputs.size(), 2u);
    EXPECT_EQ(parse(R"({"input": [5, 6, 7]})").inputs,
              (std::vector<std::vector<int32_t>>{{5, 6, 7}}));
    EXPECT_EQ(parse(R"({"input": [[5], "The cat"]})").inputs,
              (std::vector<std::vector<int32_t>>{{5}, cat}));
    EXPECT_FALSE(parse(R"({"input": "x"})").base64);
    EXPECT_TRUE(parse(R"({"input": "x", "encoding_format": "base64"})").base64);
    EXPECT_NO_THROW(parse(R"({"input": "x", "dimensions": 64})"));
}

TEST(Embeddings, BadFieldsNameThemselves) {
    EXPECT_EQ(param_of(R"({})"), "input");
    EXPECT_EQ(param_of(R"({"input": []})"), "input");
    EXPECT_EQ(param_of(R"({"input": 3})"), "input");
    EXPECT_EQ(param_of(R"({"input": [1, 99999]})"), "input");
    EXPECT_EQ(param_of(R"({"input": ["a", {"b": 1}]})"), "input[1]");
    EXPECT_EQ(param_of(R"({"input": ["a", [1, -2]]})"), "input[1]");
    EXPECT_EQ(param_of(R"({"input": "x", "encoding_format": "int8"})"), "encoding_format");
    EXPECT_EQ(param_of(R"({"input": "x", "dimensions": 32})"), "dimensions");
    std::string long_text(400, 'a');
    for (size_t i = 1; i < long_text.size(); i += 2) long_text[i] = ' ';
    EXPECT_EQ(param_of(("{\"input\": \"" + long_text + "\"}").c_str()), "input");
}

TEST(Embeddings, Base64AsRfc4648) {
    EXPECT_EQ(base64_encode(""), "");
    EXPECT_EQ(base64_encode("f"), "Zg==");
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_EQ(base64_encode("foo"), "Zm9v");
    EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
    EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
    EXPECT_EQ(base64_encode(std::string("\xff\xfe\x00", 3)), "//4A");
    const nlohmann::json j = embeddings_json({{1.0f, -2.0f}}, true, "m", 3);
    EXPECT_EQ(j["data"][0]["embedding"],
              base64_encode(std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8)));
    EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
}

}  // namespace
}  // namespace loom::serve
