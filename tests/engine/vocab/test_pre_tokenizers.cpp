// The pre-tokenizers of every llama.cpp name, and the places where llama.cpp's way of running a
// regex gives other words than the regex would under full Unicode semantics.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/vocab/pre_tokenizer.h"
#include "engine/vocab/unicode.h"

namespace loom::engine {
namespace {

// Every tokenizer.ggml.pre name of llama.cpp's llama_vocab::impl::load (snapshot de3ff815).
const std::vector<std::string> kLlamaCppNames = {
    "default",
    "minicpm5",
    "llama3",
    "llama-v3",
    "llama-bpe",
    "falcon3",
    "falcon-h1",
    "pixtral",
    "midm-2.0",
    "lfm2",
    "jina-v5-nano",
    "deepseek-llm",
    "deepseek-coder",
    "deepseek-v3",
    "spark2_5",
    "youtu",
    "falcon",
    "mpt",
    "starcoder",
    "gpt-2",
    "phi-2",
    "jina-es",
    "jina-de",
    "gigachat",
    "jina-v2-es",
    "jina-v2-de",
    "a.x-4.0",
    "mellum",
    "modern-bert",
    "jais-2",
    "gemma4",
    "granite-embed-multi-311m",
    "sarvam-moe",
    "jina-v1-en",
    "jina-v2-code",
    "roberta-bpe",
    "whitespace",
    "refact",
    "command-r",
    "qwen2",
    "deepseek-r1-qwen",
    "kormo",
    "f2llmv2",
    "qwen35",
    "stablelm2",
    "olmo",
    "dbrx",
    "smaug-bpe",
    "poro-chat",
    "glm4",
    "chatglm-bpe",
    "viking",
    "jais",
    "tekken",
    "smollm",
    "codeshell",
    "bloom",
    "gpt3-finnish",
    "exaone",
    "exaone4",
    "exaone-moe",
    "chameleon",
    "minerva-7b",
    "megrez",
    "gpt-4o",
    "llama4",
    "kanana2",
    "talkie",
    "granite-embed-multi-97m",
    "tiny_aya",
    "cohere2moe",
    "superbpe",
    "trillion",
    "granite-docling",
    "bailingmoe",
    "bailingmoe2",
    "llada-moe",
    "seed-coder",
    "hunyuan",
    "hunyuan-dense",
    "hy_v4",
    "joyai-llm",
    "kimi-k2",
    "ufakzeka",
    "grok-2",
    "afmoe",
    "laguna",
    "minimax-m2",
    "solar-open",
    "mellum2",
};

std::vector<std::string> words(std::string_view name, std::string_view text) {
    const PreTokenizerSpec *spec = find_pre_tokenizer(name);
    EXPECT_NE(spec, nullptr) << name;
    if (spec == nullptr) return {};
    const PreTokenizer pre_tokenizer(*spec);
    const PreTokenizer::Words split = pre_tokenizer.split(text);
    std::vector<std::string> out;
    for (size_t i = 0; i < split.size(); ++i) out.emplace_back(split[i]);
    return out;
}

using Words = std::vector<std::string>;

TEST(PreTokenizers, EveryLlamaCppNameCompilesAndKeepsEveryByte) {
    const std::string text = "Hello World's 1234567 \u4E2D\u6587 caf\u00E9\u0301  \t\n\n x\xFF!";
    for (const std::string &name : kLlamaCppNames) {
        std::string joined;
        for (const std::string &word : words(name, text)) joined += word;
        // The malformed byte comes back as U+FFFD, as llama.cpp decodes it.
        EXPECT_EQ(joined, "Hello World's 1234567 \u4E2D\u6587 caf\u00E9\u0301  \t\n\n x\uFFFD!")
            << name;
    }
    EXPECT_EQ(find_pre_tokenizer("no-such"), nullptr);
    EXPECT_NE(pre_tokenizer_names().find("kimi-k2"), std::string::npos);
}

TEST(PreTokenizers, Gpt2) {
    EXPECT_EQ(words("gpt-2", "Hello world's  end"), (Words{"Hello", " world", "'s", " ", " end"}));
}

// SuperBPE's lookahead matches are empty: like std::regex_iterator, they still cut the digits
// into thousands.
TEST(PreTokenizers, EmptyMatchesCut) {
    EXPECT_EQ(words("superbpe", "1234567"), (Words{"1", "234", "567"}));
}

// Digits in thousands from the right, by llama.cpp's hand-written code (Tiny Aya's regex runs as
// the same code there), which leaves the text before a run with its first group: "ab  123" is
// one piece there, so its two spaces are two words, not one run of spaces at a piece's end.
TEST(PreTokenizers, DigitGroups) {
    EXPECT_EQ(words("afmoe", "ab1234"), (Words{"ab", "1", "234"}));
    EXPECT_EQ(words("afmoe", "ab  123"), (Words{"ab", " ", " ", "123"}));
    EXPECT_EQ(words("tiny_aya", "x 12345678"), (Words{"x", " ", "12", "345", "678"}));
}

// llama.cpp reads \p{Lu}, \p{Ll}, ... as \p{L}, so Tiny Aya does not cut "HelloWorld" at the
// capital the way Hugging Face's regex does.
TEST(PreTokenizers, LetterSubcategoriesAreLetters) {
    EXPECT_EQ(words("tiny_aya", "HelloWorld"), (Words{"HelloWorld"}));
    EXPECT_EQ(words("gpt-4o", "HelloWorld"), (Words{"Hello", "World"}));
}

TEST(PreTokenizers, KimiK2KeepsHanApart) {
    EXPECT_EQ(words("kimi-k2", "\u4E2D\u6587abc's \u4E2Dx"),
              (Words{"\u4E2D\u6587", "abc's", " ", "\u4E2D", "x"}));
}

// White space is Unicode's White_Space: U+3000 is, U+180E (no longer a space) is not.
TEST(PreTokenizers, WhiteSpaceAsLlamaCpp) {
    EXPECT_EQ(words("gpt-2", "a\u3000\u3000b"), (Words{"a", "\u3000", "\u3000", "b"}));
    EXPECT_EQ(words("gpt-2", "a \u180Eb"), (Words{"a", " \u180E", "b"}));
}

// GPT-4o's and EXAONE MoE's letter groups keep a backtracking frame per letter: a run of 300,000
// outgrows PCRE2's default JIT stack (llama.cpp's std::regex overflows the thread's stack on it).
TEST(PreTokenizers, LongRunsOfLetters) {
    const std::string letters(300000, 'A');
    EXPECT_EQ(words("gpt-4o", letters), (Words{letters}));
    std::string spaced;
    for (int i = 0; i < 100000; ++i) spaced += "a ";
    EXPECT_EQ(words("exaone-moe", spaced).size(), 2u);  // the letters and spaces, then " "
}

TEST(Unicode, TablesAsLlamaCpp) {
    EXPECT_EQ(unicode::category('A'), unicode::kLetter);
    EXPECT_EQ(unicode::category(0x00BD), unicode::kNumber);  // ½
    EXPECT_EQ(unicode::category(0x0301), unicode::kMark);
    EXPECT_EQ(unicode::category(0x2581), unicode::kSymbol);
    EXPECT_EQ(unicode::category(0x200B), unicode::kControl);  // zero width space, Cf
    EXPECT_EQ(unicode::category(0x110000), unicode::kUndefined);
    EXPECT_TRUE(unicode::is_whitespace(0x85));
    EXPECT_FALSE(unicode::is_whitespace(0x1C));
    EXPECT_EQ(unicode::to_lower(0x00C4), 0x00E4u);  // Ä
    EXPECT_EQ(unicode::to_lower('a'), uint32_t('a'));
    EXPECT_EQ(unicode::decomposition_base(0x00E9), uint32_t('e'));
    EXPECT_EQ(unicode::decomposition_base('z'), uint32_t('z'));
    EXPECT_TRUE(unicode::is_han(0x4E2D));
    EXPECT_FALSE(unicode::is_han(0x3042));  // hiragana
}

}  // namespace
}  // namespace loom::engine
