// Every file of tests/fuzz/corpus/<target> through that target's body (fuzz/targets.h): the
// seeds, and the inputs that once crashed a target, which must now be refused cleanly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz/targets.h"

namespace loom::fuzz {
namespace {

std::vector<std::vector<uint8_t>> corpus(const char *target) {
    const std::filesystem::path dir =
        std::filesystem::path(LOOM_SOURCE_DIR) / "tests/fuzz/corpus" / target;
    std::vector<std::vector<uint8_t>> inputs;
    for (const auto &entry : std::filesystem::directory_iterator(dir)) {
        std::ifstream in(entry.path(), std::ios::binary);
        inputs.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return inputs;
}

TEST(FuzzCorpus, Tokenizer) {
    const auto vocabs = load_vocabularies(LOOM_SOURCE_DIR);
    const auto inputs = corpus("tokenizer");
    ASSERT_FALSE(inputs.empty());
    for (const auto &input : inputs) tokenizer_one_input(vocabs, input.data(), input.size());
}

TEST(FuzzCorpus, Request) {
    const auto inputs = corpus("request");
    ASSERT_FALSE(inputs.empty());
    for (const auto &input : inputs) request_one_input(input.data(), input.size());
}

TEST(FuzzCorpus, ChatTemplate) {
    const auto inputs = corpus("chat_template");
    ASSERT_FALSE(inputs.empty());
    for (const auto &input : inputs) chat_template_one_input(input.data(), input.size());
}

TEST(FuzzCorpus, Jinja) {
    const auto inputs = corpus("jinja");
    ASSERT_FALSE(inputs.empty());
    for (const auto &input : inputs) jinja_one_input(input.data(), input.size());
}

TEST(FuzzCorpus, Grammar) {
    const auto inputs = corpus("grammar");
    ASSERT_FALSE(inputs.empty());
    for (const auto &input : inputs) grammar_one_input(input.data(), input.size());
}

TEST(FuzzCorpus, JsonSchema) {
    const auto inputs = corpus("json_schema");
    ASSERT_FALSE(inputs.empty());
    for (const auto &input : inputs) json_schema_one_input(input.data(), input.size());
}

TEST(FuzzCorpus, ModelLoad) {
    const auto base = load_base_model(LOOM_SOURCE_DIR);
    const auto inputs = corpus("model_load");
    ASSERT_FALSE(inputs.empty());
    for (const auto &input : inputs) model_load_one_input(*base, input.data(), input.size());
}

TEST(FuzzCorpus, SequenceState) {
    const auto base = load_state_base(LOOM_SOURCE_DIR);
    const auto inputs = corpus("sequence_state");
    ASSERT_FALSE(inputs.empty());
    for (const auto &input : inputs) sequence_state_one_input(*base, input.data(), input.size());
}

}  // namespace
}  // namespace loom::fuzz
