// Input a tokenizer must survive: invalid UTF-8, empty text, a megabyte of text, bad ids, and
// vocabularies with missing or malformed keys.
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "engine/vocab/vocab.h"
#include "loom/error.h"

namespace loom::engine {
namespace {

Vocab load(const std::string &name) {
    const gguf::File file(std::string(LOOM_SOURCE_DIR) + "/../shared/models/vocab/ggml-vocab-" +
                          name + ".gguf");
    return Vocab::from_gguf(file);
}

class HostileInput : public testing::TestWithParam<std::string> {};

TEST_P(HostileInput, InvalidUtf8) {
    const Vocab vocab = load(GetParam());
    const std::string bad[] = {"\xFF",
                               "a\x80z",
                               "\xE2\x96",
                               "\xC0\xAF",
                               "\xED\xA0\x80 x",
                               std::string("nul\0inside", 10),
                               "\xF4\x90\x80\x80"};
    for (const std::string &text : bad) {
        const std::vector<int32_t> ids = vocab.tokenize(text, true, true);
        EXPECT_FALSE(ids.empty());
        for (const int32_t id : ids) EXPECT_TRUE(id >= 0 && id < vocab.n_tokens());
        vocab.detokenize(ids, true);
    }
}

TEST_P(HostileInput, EmptyText) {
    const Vocab vocab = load(GetParam());
    EXPECT_TRUE(vocab.tokenize("", false, false).empty());
    const std::vector<int32_t> with_special = vocab.tokenize("", true, true);
    EXPECT_EQ(with_special.size(), vocab.add_bos() && vocab.bos() >= 0 ? 1u : 0u);
    EXPECT_EQ(vocab.detokenize({}, true), "");
}

// Not a timed assertion: a quadratic merge would take minutes here instead of well under a second.
TEST_P(HostileInput, OneMegabyte) {
    const Vocab vocab = load(GetParam());
    std::string text;
    while (text.size() < (1 << 20))
        text += "The quick brown fox, 123 jumps;\tüber ünïcödé 🦙!\n";
    const std::string unbroken(1 << 20, 'a');
    const auto start = std::chrono::steady_clock::now();
    const std::vector<int32_t> ids = vocab.tokenize(text, true, false);
    const std::vector<int32_t> run_ids = vocab.tokenize(unbroken, false, false);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%s: 2 MiB tokenized in %.3f s\n", GetParam().c_str(), seconds);
    EXPECT_GT(ids.size(), text.size() / 20);
    EXPECT_FALSE(run_ids.empty());
    EXPECT_EQ(vocab.detokenize(run_ids, false), unbroken);
}

TEST_P(HostileInput, IdOutOfRange) {
    const Vocab vocab = load(GetParam());
    const int32_t n = vocab.n_tokens();
    EXPECT_THROW(vocab.token_to_piece(n, false), Error);
    EXPECT_THROW(vocab.token_to_piece(-1, true), Error);
    EXPECT_THROW(vocab.token_text(n), Error);
    const std::vector<int32_t> ids = {0, n};
    EXPECT_THROW(vocab.detokenize(ids, false), Error);
    EXPECT_FALSE(vocab.is_eog(n));
    EXPECT_FALSE(vocab.is_control(-5));
}

INSTANTIATE_TEST_SUITE_P(Vocab, HostileInput, testing::Values("llama-spm", "gpt-2", "falcon"),
                         [](const auto &info) {
                             std::string name = info.param;
                             for (char &c : name) c = std::isalnum(uint8_t(c)) ? c : '_';
                             return name;
                         });

std::string error_of(const gguf::Metadata &metadata) {
    try {
        Vocab::from_metadata(metadata);
    } catch (const Error &e) {
        return e.what();
    }
    return "no error";
}

TEST(VocabMetadata, ErrorsNameTheKey) {
    gguf::Metadata metadata;
    EXPECT_EQ(error_of(metadata), "[vocab] missing key 'tokenizer.ggml.model'");
    metadata.set("tokenizer.ggml.model", std::string("bert"));
    EXPECT_NE(error_of(metadata).find("'tokenizer.ggml.model' is 'bert'"), std::string::npos);
    metadata.set("tokenizer.ggml.model", std::string("gpt2"));
    EXPECT_EQ(error_of(metadata), "[vocab] missing key 'tokenizer.ggml.tokens'");
    metadata.set("tokenizer.ggml.tokens", gguf::Array{std::vector<std::string>{"a", "b", "ab"}});
    EXPECT_EQ(error_of(metadata), "[vocab] missing key 'tokenizer.ggml.merges'");
    metadata.set("tokenizer.ggml.merges", gguf::Array{std::vector<std::string>{"a b"}});
    metadata.set("tokenizer.ggml.token_type", gguf::Array{std::vector<int32_t>{1, 1}});
    EXPECT_NE(error_of(metadata).find("'tokenizer.ggml.token_type' has 2 entries for 3"),
              std::string::npos);
    metadata.set("tokenizer.ggml.token_type", gguf::Array{std::vector<int32_t>{1, 1, 1}});
    metadata.set("tokenizer.ggml.pre", std::string("no-such-pre"));
    EXPECT_NE(error_of(metadata).find("unknown pre-tokenizer 'no-such-pre'"), std::string::npos);
    metadata.set("tokenizer.ggml.pre", std::string("gpt-2"));
    metadata.set("tokenizer.ggml.bos_token_id", uint32_t(4294967295));
    const Vocab vocab = Vocab::from_metadata(metadata);
    EXPECT_EQ(vocab.bos(), -1);
    EXPECT_EQ(vocab.tokenize("ab", true, false), std::vector<int32_t>{2});
}

}  // namespace
}  // namespace loom::engine
