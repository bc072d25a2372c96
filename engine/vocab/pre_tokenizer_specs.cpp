// llama.cpp's pre-tokenizer regexes and flags by tokenizer.ggml.pre name (llama-vocab.cpp: the
// name-to-type mapping in load() and the regexes of llm_tokenizer_bpe), in llama.cpp's syntax;
// pre_tokenizer.cpp runs them as llama.cpp does. The Hugging Face originals' case-insensitive
// contractions (?i:'s|...) are spelled out, as llama.cpp does.
#include <string>
#include <string_view>
#include <vector>

#include "engine/vocab/pre_tokenizer.h"

namespace loom::engine {

namespace {

constexpr const char *kLlama3 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kJais2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|"
    "\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{"
    "1}";
constexpr const char *kCrOrLf = "[\r\n]";
// clang-format off: a long line of letters, cut where no escape is
constexpr const char *kDeepseekLlmLetters =
    "\\s?"
    "[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌ"
    "Ύ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ"
    "-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ"
    "-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ"
    "-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-"
    "𐑏"
    "𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+";
// clang-format on
constexpr const char *kDeepseekLlmPunctuation = "\\s?[!-/:-~！-／：-～‘-‟　-。]+";
constexpr const char *kTrailingSpaces = "\\s+$";
constexpr const char *kCjkHangul = "[一-龥ࠀ-一가-퟿]+";
constexpr const char *kNumbers = "\\p{N}+";
constexpr const char *kUpTo3Numbers = "\\p{N}{1,3}";
constexpr const char *kCjkKana = "[一-龥぀-ゟ゠-ヿ]+";
constexpr const char *kDeepseekV3 =
    "[!\"#$%&'()*+,\\-./"
    ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
    "?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kSpark =
    "[!\"#$%&'()*+,\\-./"
    ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
    "?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+";
constexpr const char *kNumber = "\\p{N}";
constexpr const char *kYoutuCjk =
    "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-"
    "ゟ゠-"
    "ヿ]"
    "+";
constexpr const char *kYoutu =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'["
    "sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}"
    "\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'"
    "[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kSpaceLetters = "\\s?\\p{L}+";
constexpr const char *kSpacePunctuation = "\\s?\\p{P}+";
constexpr const char *kFalconPunctuation = "[\\p{P}\\$\\+<=>\\^~\\|`]+";
constexpr const char *kGpt2 =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
constexpr const char *kThreeDigits = "[0-9][0-9][0-9]";
constexpr const char *kQwen2 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kQwen35 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]"
    "+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kBloom = " ?[^(\\s|.,!?…。，、।۔،)]+";
constexpr const char *kTekken =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?"
    "=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kChameleonSentinel = "<sentinel:[0-9]+>";
constexpr const char *kChameleonImage = "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z";
constexpr const char *kChameleonSpaces = "([\\t\\n]|    |  )";
constexpr const char *kChameleonPunctuation = "[\\p{P}!-/:-@\\[-`{-~]";
constexpr const char *kGpt4o =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'"
    "[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^"
    "A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kGraniteEmbedMulti =
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]"
    "|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z])"
    ")+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{"
    "N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kTinyAya =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'["
    "sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}"
    "\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'"
    "[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kThousandsLookahead = "(?=(\\d{3})+(?!\\d))";
constexpr const char *kBailingMoe =
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
constexpr const char *kSeedCoder =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kUfakzeka =
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kAfmoeScripts =
    "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-"
    "꧿가-"
    "힯ᄀ-"
    "ᇿ]"
    "+";
constexpr const char *kAfmoe =
    "[!\"#$%&'()*+,\\-./"
    ":;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| "
    "?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kLines = "[^\\n]+|[\\n]+";
constexpr const char *kExaoneMoe =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{"
    "M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
constexpr const char *kMiniCpm5 =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
    "+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
constexpr const char *kNonSpace = "\\S+";
constexpr const char *kDefaultPunctuation = "[\\p{P}\\$\\+<=>\\^~\\|]+";

// Kimi K2's regex ([\p{Han}]+ first, then Llama 3's alternatives over the other letters), written
// for the collapsed text: \p{L} there is a letter outside the \p{Han} blocks, \x{D6} a letter
// inside them. llama.cpp runs the same alternatives in hand-written code.
constexpr const char *kKimiK2 =
    "\\p{Han}+|[^\\r\\n\\p{L}\\p{N}\\x{D6}]?\\p{L}+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL]["
    "lL]|'[dD])?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}\\x{D6}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

struct NamedSpec {
    std::vector<std::string_view> names;
    PreTokenizerSpec spec;
};

// One row per llama.cpp pre-tokenizer type (LLAMA_VOCAB_PRE_TYPE_*, named in the comment) with
// the tokenizer.ggml.pre names that select it and the flags those names set.
const std::vector<NamedSpec> &named_specs() {
    static const std::vector<NamedSpec> specs = {
        // DEFAULT
        {{"", "default"}, {.regexes = {kDefaultPunctuation, kGpt2, kNumbers, kThreeDigits}}},
        // LLAMA3
        {{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2",
          "jina-v5-nano"},
         {.regexes = {kLlama3}, .ignore_merges = true, .add_bos = true}},
        // DEEPSEEK_LLM
        {{"deepseek-llm"},
         {.regexes = {kCrOrLf, kDeepseekLlmLetters, kDeepseekLlmPunctuation, kTrailingSpaces,
                      kCjkHangul, kNumbers},
          .clean_spaces = false}},
        // DEEPSEEK_CODER
        {{"deepseek-coder"},
         {.regexes = {kCrOrLf, kSpaceLetters, kSpacePunctuation, kCjkHangul, kNumber},
          .clean_spaces = false}},
        // DEEPSEEK3_LLM
        {{"deepseek-v3"},
         {.regexes = {kUpTo3Numbers, kCjkKana, kDeepseekV3}, .clean_spaces = false}},
        // SPARK2_5
        {{"spark2_5"},
         {.regexes = {kUpTo3Numbers, kCjkKana, kSpark, kNumber}, .clean_spaces = false}},
        // YOUTU
        {{"youtu"}, {.regexes = {kYoutuCjk, kYoutu}, .ignore_merges = true, .clean_spaces = false}},
        // FALCON
        {{"falcon"}, {.regexes = {kFalconPunctuation, kGpt2, kThreeDigits}}},
        // MPT, STARCODER
        {{"mpt"}, {.regexes = {kGpt2}}},
        {{"starcoder"}, {.regexes = {kNumber, kGpt2}}},
        // GPT2
        {{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de", "a.x-4.0",
          "mellum", "modern-bert", "jina-v1-en", "jina-v2-code", "roberta-bpe", "exaone4"},
         {.regexes = {kGpt2}}},
        // JAIS2
        {{"jais-2"}, {.regexes = {kJais2}}},
        // GEMMA4, SARVAM_MOE: SentencePiece-style BPE over raw UTF-8, spaces as U+2581.
        {{"gemma4", "granite-embed-multi-311m"},
         {.regexes = {kLines},
          .byte_encode = false,
          .escape_whitespaces = true,
          .whole_newline_runs = true,
          .force_bos = true}},
        {{"sarvam-moe"},
         {.regexes = {kLines},
          .clean_spaces = false,
          .byte_encode = false,
          .escape_whitespaces = true}},
        // WHITESPACE
        {{"whitespace"}, {.regexes = {kNonSpace}, .byte_encode = false}},
        // REFACT, COMMAND_R
        {{"refact"}, {.regexes = {kNumber, kGpt2}}},
        {{"command-r"}, {.regexes = {kNumber, kGpt2}, .clean_spaces = false}},
        // QWEN2 (megrez keeps clean_spaces), QWEN35, STABLELM2
        {{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2"},
         {.regexes = {kQwen2}, .clean_spaces = false}},
        {{"megrez"}, {.regexes = {kQwen2}}},
        {{"qwen35"}, {.regexes = {kQwen35}, .clean_spaces = false}},
        {{"stablelm2"}, {.regexes = {kQwen2}}},
        // OLMO, DBRX, SMAUG
        {{"olmo"}, {.regexes = {kGpt2}}},
        {{"dbrx", "smaug-bpe"}, {.regexes = {kLlama3}}},
        // PORO, CHATGLM4, VIKING, JAIS
        {{"poro-chat"}, {.regexes = {kBloom}, .clean_spaces = false}},
        {{"glm4", "chatglm-bpe"}, {.regexes = {kLlama3}, .no_default_bos = true}},
        {{"viking"}, {.regexes = {kBloom, kNumber}, .clean_spaces = false}},
        {{"jais"}, {.regexes = {kGpt2}}},
        // TEKKEN
        {{"tekken"},
         {.regexes = {kTekken}, .ignore_merges = true, .add_bos = true, .clean_spaces = false}},
        // SMOLLM, CODESHELL, BLOOM, GPT3_FINNISH, EXAONE, EXAONE_MOE
        {{"smollm"}, {.regexes = {kNumber, kGpt2}, .clean_spaces = false}},
        {{"codeshell", "exaone", "minerva-7b", "mellum2"}, {.regexes = {kNumber, kGpt2}}},
        {{"bloom", "gpt3-finnish"}, {.regexes = {kBloom}}},
        {{"exaone-moe"}, {.regexes = {kExaoneMoe}}},
        // CHAMELEON
        {{"chameleon"},
         {.regexes = {kChameleonSentinel, kChameleonImage, kChameleonSpaces, kNumber,
                      kChameleonPunctuation, kGpt2},
          .add_bos = true,
          .clean_spaces = false}},
        // GPT4O, MINIMAX_M2, GRANITE_EMB_MULTI, TINY_AYA
        {{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"},
         {.regexes = {kGpt4o}, .clean_spaces = false}},
        {{"granite-embed-multi-97m"},
         {.regexes = {kGraniteEmbedMulti}, .ignore_merges = true, .clean_spaces = false}},
        {{"tiny_aya", "cohere2moe"},
         {.regexes = {std::string(kDigitGroupsTinyAya), kTinyAya}, .clean_spaces = false}},
        // SUPERBPE, TRILLION, GRANITE_DOCLING, BAILINGMOE, SEED_CODER
        {{"superbpe"}, {.regexes = {kNumbers, kThousandsLookahead}, .clean_spaces = false}},
        {{"trillion", "granite-docling"}, {.regexes = {kGpt2}, .clean_spaces = false}},
        {{"bailingmoe", "bailingmoe2", "llada-moe"},
         {.regexes = {kBailingMoe}, .clean_spaces = false}},
        {{"seed-coder"}, {.regexes = {kSeedCoder}, .clean_spaces = false}},
        // HUNYUAN, HUNYUAN_DENSE, HY_V4, JOYAI_LLM, SOLAR_OPEN, GROK_2
        {{"hunyuan", "solar-open", "grok-2"}, {.regexes = {kQwen2}, .clean_spaces = false}},
        {{"hunyuan-dense", "hy_v4", "joyai-llm"},
         {.regexes = {kUpTo3Numbers, kCjkKana, kDeepseekV3}, .clean_spaces = false}},
        // KIMI_K2, UFAKZEKA, AFMOE, LAGUNA, MINICPM5
        {{"kimi-k2"}, {.regexes = {kKimiK2}, .clean_spaces = false}},
        {{"ufakzeka"}, {.regexes = {kUfakzeka}, .clean_spaces = false}},
        {{"afmoe"},
         {.regexes = {std::string(kDigitGroups), kAfmoeScripts, kAfmoe}, .clean_spaces = false}},
        {{"laguna"}, {.regexes = {kLines, kQwen2}, .clean_spaces = false}},
        {{"minicpm5"}, {.regexes = {kUpTo3Numbers, kMiniCpm5}, .ignore_merges = true}},
    };
    return specs;
}

}  // namespace

const PreTokenizerSpec *find_pre_tokenizer(std::string_view name) {
    for (const NamedSpec &named : named_specs()) {
        for (const std::string_view candidate : named.names) {
            if (name == candidate) return &named.spec;
        }
    }
    return nullptr;
}

std::string pre_tokenizer_names() {
    std::string out;
    for (const NamedSpec &named : named_specs()) {
        for (const std::string_view name : named.names) {
            if (name.empty()) continue;
            if (!out.empty()) out += ", ";
            out += name;
        }
    }
    return out;
}

}  // namespace loom::engine
