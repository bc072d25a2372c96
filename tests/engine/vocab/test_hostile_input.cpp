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
    // WordPiece always adds [CLS] and [SEP].
    const bool wpm = vocab.type() == VocabType::wpm;
    const size_t specials = size_t((vocab.add_bos() || wpm) && vocab.bos() >= 0) +
                            size_t(wpm ? vocab.sep() >= 0 : vocab.add_eos() && vocab.eos() >= 0);
    EXPECT_EQ(with_special.size(), specials);
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
    // WordPiece keeps the space it puts before a word.
    const std::string back = vocab.detokenize(run_ids, false);
    EXPECT_EQ(vocab.type() == VocabType::wpm ? back.substr(1) : back, unbroken);
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

INSTANTIATE_TEST_SUITE_P(Vocab, HostileInput,
                         testing::Values("llama-spm", "gpt-2", "falcon", "bert-bge",
                                         "nomic-bert-moe", "gemma-4", "qwen35", "deepseek-llm"),
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
    metadata.set("tokenizer.ggml.model", std::string("rwkv"));
    EXPECT_NE(error_of(metadata).find("'tokenizer.ggml.model' is 'rwkv' (RWKV"), std::string::npos);
    metadata.set("tokenizer.ggml.model", std::string("sentencepiece"));
    EXPECT_NE(error_of(metadata).find("is 'sentencepiece'; supported: 'llama', 'gpt2'"),
              std::string::npos);
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

// A Unigram vocabulary of five tokens with the given charsmap bytes.
gguf::Metadata unigram(const std::vector<uint8_t> &charsmap) {
    gguf::Metadata metadata;
    metadata.set("tokenizer.ggml.model", std::string("t5"));
    metadata.set("tokenizer.ggml.tokens",
                 gguf::Array{std::vector<std::string>{"<pad>", "</s>", "<unk>", "\u2581a", "b"}});
    metadata.set("tokenizer.ggml.scores",
                 gguf::Array{std::vector<float>{0.0f, 0.0f, 0.0f, -1.0f, -2.0f}});
    metadata.set("tokenizer.ggml.token_type", gguf::Array{std::vector<int32_t>{3, 3, 2, 1, 1}});
    metadata.set("tokenizer.ggml.add_space_prefix", true);
    metadata.set("tokenizer.ggml.precompiled_charsmap", gguf::Array{charsmap});
    return metadata;
}

TEST(VocabMetadata, BrokenCharsmapNamesTheKey) {
    EXPECT_NE(error_of(unigram({1, 2, 3})).find("'tokenizer.ggml.precompiled_charsmap' has 3"),
              std::string::npos);
    EXPECT_NE(error_of(unigram({0xF0, 0xFF, 0xFF, 0xFF, 0})).find("does not fit"),
              std::string::npos);
    // A root whose BASE points far outside the two entries of the array: loading works (llama.cpp
    // checks nothing more either), tokenizing names the key instead of reading out of bounds.
    const uint32_t root = 1000u << 10;
    const Vocab vocab = Vocab::from_metadata(unigram(
        {8, 0, 0, 0, uint8_t(root), uint8_t(root >> 8), uint8_t(root >> 16), 0, 0, 0, 0, 0, 0}));
    try {
        vocab.tokenize("ab", false, false);
        ADD_FAILURE() << "no error";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("[vocab] key 'tokenizer.ggml.precompiled_charsmap'"),
                  std::string::npos)
            << e.what();
    }
    // Without a charsmap the text is only split: "\u2581a" + "b", and EOS (default id 1).
    const Vocab plain = Vocab::from_metadata(unigram({}));
    EXPECT_EQ(plain.tokenize("ab", true, false), (std::vector<int32_t>{3, 4, 1}));
    // No token covers "\u2581x" nor the "\u2581" before "b": one unknown for each run.
    EXPECT_EQ(plain.tokenize("xa b", false, false), (std::vector<int32_t>{2, 4}));
    EXPECT_EQ(plain.tokenize("a b", false, false), (std::vector<int32_t>{3, 2, 4}));
}

// Ids out of range fall back to llama.cpp's defaults or to none; nothing emits a bad id.
TEST(VocabMetadata, SpecialIdsOutOfRange) {
    gguf::Metadata metadata = unigram({});
    metadata.set("tokenizer.ggml.unknown_token_id", uint32_t(77));
    metadata.set("tokenizer.ggml.eos_token_id", int32_t(-5));
    Vocab vocab = Vocab::from_metadata(metadata);
    EXPECT_EQ(vocab.unk(), 2);
    EXPECT_EQ(vocab.eos(), 1);

    gguf::Metadata bert;
    bert.set("tokenizer.ggml.model", std::string("bert"));
    bert.set("tokenizer.ggml.tokens",
             gguf::Array{std::vector<std::string>{"[PAD]", "\u2581hello", "", "##x"}});
    vocab = Vocab::from_metadata(bert);
    // No [UNK], [CLS] or [SEP] at BERT's default ids: an unknown word gives nothing.
    EXPECT_EQ(vocab.bos(), -1);
    EXPECT_EQ(vocab.unk(), -1);
    EXPECT_EQ(vocab.tokenize("hello world", true, true), std::vector<int32_t>{1});
    EXPECT_EQ(vocab.token_text(2), "[EMPTY_2]");  // as llama.cpp names an empty token
}

// hybriddna (checked against llama.cpp on a gpt-2 vocabulary with 4096 k-mers added): DNA between
// the tags becomes 6-base k-mers, uppercased and padded with A, <oov> where none is a token.
TEST(VocabMetadata, HybridDnaKmers) {
    gguf::Metadata metadata;
    metadata.set("tokenizer.ggml.model", std::string("hybriddna"));
    metadata.set("tokenizer.ggml.tokens",
                 gguf::Array{std::vector<std::string>{"x", "<dna>", "</dna>", "<oov>",
                                                      "ACGTAC\uE000", "GGAAAA\uE000"}});
    metadata.set("tokenizer.ggml.token_type", gguf::Array{std::vector<int32_t>{1, 3, 3, 3, 1, 1}});
    metadata.set("tokenizer.ggml.merges", gguf::Array{std::vector<std::string>{}});
    const Vocab vocab = Vocab::from_metadata(metadata);
    const std::vector<int32_t> ids = vocab.tokenize("x<dna>acgtACgg</dna>x<dna>TTT", false, false);
    EXPECT_EQ(ids, (std::vector<int32_t>{0, 1, 4, 5, 2, 0, 1, 3}));
    EXPECT_EQ(vocab.token_text(4), "ACGTAC");  // the marker only keeps the lookup apart
    EXPECT_EQ(vocab.detokenize(ids, false), "xACGTACGGAAAAx");
}

}  // namespace
}  // namespace loom::engine
