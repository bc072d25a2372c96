// llama.cpp's pre-tokenizer regexes by tokenizer.ggml.pre name (llama-vocab.cpp,
// llm_tokenizer_bpe). Patterns are PCRE2 syntax; the Hugging Face originals' case-insensitive
// contractions (?i:'s|...) are spelled out as llama.cpp does.
#include <array>
#include <initializer_list>

#include "engine/vocab/pre_tokenizer.h"

namespace loom::engine {

namespace {

constexpr const char *kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr const char *kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// As Llama 3, with single digits.
constexpr const char *kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// CJK ideographs, U+0800..U+4E00 and Hangul: llama.cpp's ranges, kept as written there.
constexpr const char *kCjk = "[一-龥ࠀ-一가-퟿]+";

struct NamedSpec {
    std::initializer_list<const char *> names;
    PreTokenizerSpec spec;
};

const std::array<NamedSpec, 9> &named_specs() {
    static const std::array<NamedSpec, 9> specs = {{
        {{"", "default"},
         {.regexes = {"[\\p{P}\\$\\+<=>\\^~\\|]+", kGpt2, "\\p{N}+", "[0-9][0-9][0-9]"}}},
        {{"gpt-2", "phi-2", "mpt", "olmo", "jina-es", "jina-de", "jina-v2-es", "jina-v2-de"},
         {.regexes = {kGpt2}}},
        {{"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral"},
         {.regexes = {kLlama3}, .ignore_merges = true, .add_bos = true}},
        {{"dbrx", "smaug-bpe", "chatglm-bpe"}, {.regexes = {kLlama3}}},
        {{"qwen2", "qwen2.5", "deepseek-r1-qwen", "stablelm2", "megrez"}, {.regexes = {kQwen2}}},
        {{"deepseek-coder"},
         {.regexes = {"[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", kCjk, "\\p{N}"}}},
        {{"falcon"}, {.regexes = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", kGpt2, "[0-9][0-9][0-9]"}}},
        {{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone"},
         {.regexes = {"\\p{N}", kGpt2}}},
        {{"poro-chat", "bloom", "gpt3-finnish"}, {.regexes = {" ?[^(\\s|.,!?…。，、।۔،)]+"}}},
    }};
    return specs;
}

}  // namespace

const PreTokenizerSpec *find_pre_tokenizer(std::string_view name) {
    for (const NamedSpec &named : named_specs()) {
        for (const char *candidate : named.names) {
            if (name == candidate) return &named.spec;
        }
    }
    return nullptr;
}

}  // namespace loom::engine
