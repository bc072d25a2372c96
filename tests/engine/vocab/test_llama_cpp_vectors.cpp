// Token ids against llama.cpp: its own test vectors (models/ggml-vocab-*.gguf.inp/.out, as
// test-tokenizer-0 reads them: add_special and parse_special off), and for what those do not
// cover the ids and texts llama.cpp gives (reference/, made by reference/regenerate.sh): the
// vocabularies without vectors, add_special / parse_special, and detokenize.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/vocab/vocab.h"

namespace loom::engine {
namespace {

const std::string kSharedVocab = std::string(LOOM_SOURCE_DIR) + "/../shared/models/vocab/";
const std::string kReference = std::string(LOOM_SOURCE_DIR) + "/tests/engine/vocab/reference/";
// The 46 texts every vector file shares and 4 more of Qwen 3.5's: the texts of reference/.
const std::string kTexts = kSharedVocab + "ggml-vocab-qwen35.gguf.inp";

// Every vocabulary of ../shared/models/vocab.
const std::vector<std::string> kAllVocabularies = {
    "aquila",       "baichuan",  "bert-bge", "command-r",      "deepseek-coder",
    "deepseek-llm", "falcon",    "gemma-4",  "gpt-2",          "gpt-neox",
    "llama-bpe",    "llama-spm", "mpt",      "nomic-bert-moe", "phi-3",
    "qwen2",        "qwen35",    "refact",   "starcoder",
};

std::string vocab_path(const std::string &name) {
    return kSharedVocab + "ggml-vocab-" + name + ".gguf";
}

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) ADD_FAILURE() << "cannot open " << path;
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Texts separated by "\n__ggml_vocab_test__\n", which normally follows the last one too (not in
// gemma-4's file).
std::vector<std::string> read_texts(const std::string &path) {
    const std::string inputs = read_file(path);
    const std::string separator = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t start = 0; start < inputs.size();) {
        const size_t end = inputs.find(separator, start);
        texts.push_back(inputs.substr(start, end - start));
        if (end == std::string::npos) break;
        start = end + separator.size();
    }
    return texts;
}

// One line of ids per text.
std::vector<std::vector<int32_t>> read_ids(const std::string &path) {
    std::istringstream lines(read_file(path));
    std::vector<std::vector<int32_t>> out;
    for (std::string line; std::getline(lines, line);) {
        std::istringstream ids(line);
        out.emplace_back();
        for (int32_t id; ids >> id;) out.back().push_back(id);
    }
    return out;
}

std::string test_name(const testing::TestParamInfo<std::string> &info) {
    std::string name = info.param;
    for (char &c : name) c = std::isalnum(uint8_t(c)) ? c : '_';
    return name;
}

Vocab load(const std::string &name) {
    const gguf::File file(vocab_path(name));
    return Vocab::from_gguf(file);
}

// Tokenizes each text as add_special / parse_special say and compares with `expected`.
void expect_ids(const std::string &name, const std::vector<std::string> &texts,
                const std::vector<std::vector<int32_t>> &expected, bool add_special,
                bool parse_special) {
    const Vocab vocab = load(name);
    ASSERT_EQ(texts.size(), expected.size()) << name << ": texts and lines of ids disagree";
    size_t passed = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        const std::vector<int32_t> ids = vocab.tokenize(texts[i], add_special, parse_special);
        EXPECT_EQ(ids, expected[i]) << name << ": text " << i << " '" << texts[i] << "'";
        passed += ids == expected[i];
    }
    std::printf("%s (add_special %d, parse_special %d): %zu of %zu texts as llama.cpp\n",
                name.c_str(), add_special, parse_special, passed, texts.size());
}

class LlamaCppVectors : public testing::TestWithParam<std::string> {};

TEST_P(LlamaCppVectors, TokenizesLikeLlamaCpp) {
    const std::string path = vocab_path(GetParam());
    const std::vector<std::string> texts = read_texts(path + ".inp");
    // 46 texts each, 50 for Qwen 3.5.
    EXPECT_EQ(texts.size(), GetParam() == "qwen35" ? 50u : 46u);
    expect_ids(GetParam(), texts, read_ids(path + ".out"), false, false);
}

INSTANTIATE_TEST_SUITE_P(Vocab, LlamaCppVectors,
                         testing::Values("llama-spm", "phi-3", "bert-bge", "gpt-2",
                                         "deepseek-coder", "falcon", "starcoder", "llama-bpe",
                                         "qwen2", "qwen35", "gemma-4", "command-r", "deepseek-llm",
                                         "mpt", "refact"),
                         test_name);

class ReferenceVectors : public testing::TestWithParam<std::string> {};

TEST_P(ReferenceVectors, TokenizesLikeLlamaCpp) {
    expect_ids(GetParam(), read_texts(kTexts), read_ids(kReference + GetParam() + ".out"), false,
               false);
}

INSTANTIATE_TEST_SUITE_P(Vocab, ReferenceVectors,
                         testing::Values("aquila", "baichuan", "gpt-neox", "nomic-bert-moe"),
                         test_name);

// Special token texts with white space around them (Phi-3's rstrip, nomic's <mask> lstrip,
// BERT's [CLS] ... [SEP], Unigram's EOS), in the three modes besides the plain one.
class SpecialTokens : public testing::TestWithParam<std::string> {};

TEST_P(SpecialTokens, AsLlamaCppWithAddSpecialAndParseSpecial) {
    const std::vector<std::string> texts = read_texts(kReference + "special.inp");
    for (const auto &[add_special, parse_special] :
         {std::pair{false, true}, {true, true}, {true, false}}) {
        const std::string mode =
            std::to_string(int(add_special)) + std::to_string(int(parse_special));
        expect_ids(GetParam(), texts,
                   read_ids(kReference + GetParam() + ".special-" + mode + ".out"), add_special,
                   parse_special);
    }
}

INSTANTIATE_TEST_SUITE_P(Vocab, SpecialTokens, testing::ValuesIn(kAllVocabularies), test_name);

std::string from_hex(const std::string &hex) {
    std::string out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
        out += char(std::stoi(hex.substr(i, 2), nullptr, 16));
    return out;
}

// detokenize(tokenize(text)) is llama_detokenize's text: the text itself where llama.cpp gives
// it back (SentencePiece, most BPE), else what its clean-up of spaces, WordPiece's lowercasing
// and splitting or Unigram's normalization made of it.
class Detokenize : public testing::TestWithParam<std::string> {};

TEST_P(Detokenize, GivesLlamaCppsText) {
    const Vocab vocab = load(GetParam());
    const std::vector<std::string> texts = read_texts(kTexts);
    std::istringstream lines(read_file(kReference + GetParam() + ".detokenized"));
    size_t round_trips = 0;
    for (const std::string &text : texts) {
        std::string hex;
        std::getline(lines, hex);
        const std::string expected = from_hex(hex);
        const std::string got = vocab.detokenize(vocab.tokenize(text, false, false), true);
        EXPECT_EQ(got, expected) << GetParam() << ": text '" << text << "'";
        round_trips += got == text;
    }
    std::printf("%s: %zu of %zu texts given back unchanged\n", GetParam().c_str(), round_trips,
                texts.size());
}

INSTANTIATE_TEST_SUITE_P(Vocab, Detokenize, testing::ValuesIn(kAllVocabularies), test_name);

}  // namespace
}  // namespace loom::engine
