// The tokenizer test vectors of llama.cpp (models/ggml-vocab-*.gguf.inp/.out, as test-tokenizer-0
// reads them: add_special and parse_special off), and detokenize(tokenize(s)) == s on them.
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

std::string vocab_path(const std::string &name) {
    return std::string(LOOM_SOURCE_DIR) + "/../shared/models/vocab/ggml-vocab-" + name + ".gguf";
}

std::string read_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) ADD_FAILURE() << "cannot open " << path << " (../shared beside the repository)";
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Case {
    std::string text;
    std::vector<int32_t> ids;
};

// .inp: the texts, each followed by "\n__ggml_vocab_test__\n"; .out: one line of ids per text.
std::vector<Case> read_cases(const std::string &gguf_path) {
    const std::string inputs = read_file(gguf_path + ".inp");
    const std::string separator = "\n__ggml_vocab_test__\n";
    std::vector<Case> cases;
    for (size_t start = 0; start < inputs.size();) {
        const size_t end = inputs.find(separator, start);
        cases.push_back({inputs.substr(start, end - start), {}});
        if (end == std::string::npos) break;
        start = end + separator.size();
    }
    std::istringstream outputs(read_file(gguf_path + ".out"));
    std::string line;
    size_t i = 0;
    for (; std::getline(outputs, line); ++i) {
        if (i >= cases.size()) break;
        std::istringstream ids(line);
        for (int32_t id; ids >> id;) cases[i].ids.push_back(id);
    }
    EXPECT_EQ(i, cases.size()) << gguf_path << ": .inp and .out disagree on the number of texts";
    return cases;
}

class LlamaCppVectors : public testing::TestWithParam<std::string> {};

TEST_P(LlamaCppVectors, TokenizesLikeLlamaCpp) {
    const std::string path = vocab_path(GetParam());
    const gguf::File file(path);
    const Vocab vocab = Vocab::from_gguf(file);
    const std::vector<Case> cases = read_cases(path);
    ASSERT_EQ(cases.size(), 46u);
    int passed = 0;
    for (const Case &c : cases) {
        const std::vector<int32_t> ids = vocab.tokenize(c.text, false, false);
        EXPECT_EQ(ids, c.ids) << GetParam() << ": text '" << c.text << "'";
        passed += ids == c.ids;
    }
    std::printf("%s: %d of %zu texts tokenized as llama.cpp does\n", GetParam().c_str(), passed,
                cases.size());
}

// bert-bge (WordPiece) is not supported, so it is left out.
INSTANTIATE_TEST_SUITE_P(Vocab, LlamaCppVectors,
                         testing::Values("llama-spm", "phi-3", "gpt-2", "deepseek-coder", "falcon",
                                         "starcoder"),
                         [](const auto &info) {
                             std::string name = info.param;
                             for (char &c : name) c = std::isalnum(uint8_t(c)) ? c : '_';
                             return name;
                         });

// Byte-level BPE loses nothing; SentencePiece gives back the text exactly as well, because the
// space tokenize puts in front is dropped from the first piece again.
class RoundTrip : public testing::TestWithParam<std::string> {};

TEST_P(RoundTrip, DetokenizeGivesBackTheText) {
    const std::string path = vocab_path(GetParam());
    const gguf::File file(path);
    const Vocab vocab = Vocab::from_gguf(file);
    for (const Case &c : read_cases(path)) {
        EXPECT_EQ(vocab.detokenize(vocab.tokenize(c.text, false, false), false), c.text);
    }
}

INSTANTIATE_TEST_SUITE_P(Vocab, RoundTrip, testing::Values("llama-spm", "gpt-2"),
                         [](const auto &info) {
                             return info.param == "gpt-2" ? std::string("gpt_2")
                                                          : std::string("llama_spm");
                         });

}  // namespace
}  // namespace loom::engine
