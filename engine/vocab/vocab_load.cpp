// Vocab::from_gguf: the tokenizer.ggml.* keys, with llama.cpp's defaults where a key is absent.
#include <fmt/format.h>

#include <algorithm>

#include "engine/vocab/pre_tokenizer.h"
#include "engine/vocab/ugm_tokenizer.h"
#include "engine/vocab/vocab.h"
#include "engine/vocab/wpm_tokenizer.h"
#include "loom/error.h"

namespace loom::engine {

namespace {

template <typename T>
const std::vector<T> &required_array(const gguf::Metadata &metadata, std::string_view key) {
    if (!metadata.has(key)) fail("vocab", "missing key '{}'", key);
    return metadata.get_array<T>(key);
}

uint32_t attr_of_type(TokenType type) {
    switch (type) {
        case TokenType::normal:
            return kAttrNormal;
        case TokenType::unknown:
            return kAttrUnknown;
        case TokenType::control:
            return kAttrControl;
        case TokenType::user_defined:
            return kAttrUserDefined;
        case TokenType::unused:
            return kAttrUnused;
        case TokenType::byte:
            return kAttrByte;
        case TokenType::undefined:
            return 0;
    }
    return 0;
}

std::vector<float> read_scores(const gguf::Metadata &metadata, size_t n) {
    constexpr std::string_view key = "tokenizer.ggml.scores";
    if (!metadata.has(key)) return std::vector<float>(n, 0.0f);
    std::vector<float> scores;
    const gguf::Array *array = std::get_if<gguf::Array>(metadata.find(key));
    if (array != nullptr && array->element_type() == gguf::ValueType::i32) {
        for (const int32_t score : metadata.get_array<int32_t>(key)) scores.push_back(float(score));
    } else {
        scores = metadata.get_array<float>(key);
    }
    // llama.cpp reads the first n; fewer is an error.
    if (scores.size() < n)
        fail("vocab", "key '{}' has {} entries for {} tokens", key, scores.size(), n);
    scores.resize(n);
    return scores;
}

TokenTable read_tokens(const gguf::Metadata &metadata) {
    TokenTable table;
    table.texts = required_array<std::string>(metadata, "tokenizer.ggml.tokens");
    const size_t n = table.texts.size();
    if (n == 0 || n > size_t(INT32_MAX))
        fail("vocab", "key 'tokenizer.ggml.tokens' has {} tokens", n);
    // llama.cpp names an empty token so that it stays distinct and never matches text.
    for (size_t i = 0; i < n; ++i) {
        if (table.texts[i].empty()) table.texts[i] = fmt::format("[EMPTY_{}]", i);
    }
    table.scores = read_scores(metadata, n);

    table.types.assign(n, TokenType::normal);
    if (metadata.has("tokenizer.ggml.token_type")) {
        const std::vector<int32_t> types =
            metadata.get_integer_array<int32_t>("tokenizer.ggml.token_type");
        if (types.size() < n) {
            fail("vocab", "key 'tokenizer.ggml.token_type' has {} entries for {} tokens",
                 types.size(), n);
        }
        for (size_t i = 0; i < n; ++i) {
            const bool known = types[i] >= 0 && types[i] <= int32_t(TokenType::byte);
            table.types[i] = known ? TokenType(types[i]) : TokenType::undefined;
        }
    }
    table.attrs.resize(n);
    for (size_t i = 0; i < n; ++i) table.attrs[i] = attr_of_type(table.types[i]);
    table.ids.reserve(n);
    for (size_t i = 0; i < n; ++i) table.ids[table.texts[i]] = int32_t(i);
    return table;
}

// SentencePiece byte fallback tokens "<0x00>".."<0xFF>", else a token of the bare byte.
void find_byte_tokens(TokenTable &table) {
    for (int byte = 0; byte < 256; ++byte) {
        const int32_t id = table.find(fmt::format("<0x{:02X}>", byte));
        const char bare = char(byte);
        table.byte_ids[byte] = id >= 0 ? id : table.find(std::string_view(&bare, 1));
    }
}

std::vector<uint8_t> read_charsmap(const gguf::Metadata &metadata) {
    constexpr std::string_view key = "tokenizer.ggml.precompiled_charsmap";
    if (!metadata.has(key)) return {};
    const gguf::Array *array = std::get_if<gguf::Array>(metadata.find(key));
    if (array != nullptr && array->element_type() == gguf::ValueType::i8) {
        const std::vector<int8_t> &bytes = metadata.get_array<int8_t>(key);
        return std::vector<uint8_t>(bytes.begin(), bytes.end());
    }
    return metadata.get_array<uint8_t>(key);
}

// The tokenizer.ggml.model values llama.cpp knows and Loom does not run, with the reason.
constexpr std::pair<std::string_view, std::string_view> kUnsupportedModels[] = {
    {"rwkv", "RWKV's trie tokenizer over escaped byte strings"},
    {"plamo2", "PLaMo 2's suffix-table Viterbi tokenizer"},
    {"no_vocab", "a model without a vocabulary"},
    {"none", "a model without a vocabulary"},
    {"test", "llama.cpp's hashing test tokenizer"},
};

}  // namespace

Vocab Vocab::from_gguf(const gguf::File &file) {
    try {
        return from_metadata(file.metadata());
    } catch (const Error &e) {
        const std::string_view message = e.what();
        if (message.starts_with("[vocab]")) throw;
        fail("vocab", "{}: {}", file.path(), message);
    }
}

// tokenizer.ggml.model and what it implies: the tokenizer kind, its defaults (overridden by
// the keys later) and, for BPE, the merges and the pre-tokenizer.
void Vocab::read_model(const gguf::Metadata &metadata) {
    if (!metadata.has("tokenizer.ggml.model")) fail("vocab", "missing key 'tokenizer.ggml.model'");
    model_ = metadata.get<std::string>("tokenizer.ggml.model");
    std::string pre = metadata.get_optional<std::string>("tokenizer.ggml.pre").value_or("");
    if (model_ == "llama") {
        type_ = VocabType::spm;
        bos_ = 1, eos_ = 2, unk_ = 0;
        add_space_prefix_ = true;
        add_bos_ = true;
    } else if (model_ == "bert") {
        type_ = VocabType::wpm;
        bos_ = 101, unk_ = 100, sep_ = 102;
        add_bos_ = true;
        add_sep_ = true;
        clean_spaces_ = true;
    } else if (model_ == "t5") {
        type_ = VocabType::ugm;
        eos_ = 1, unk_ = 2;
        add_eos_ = true;
    } else if (model_ == "gpt2" || model_ == "whitespace" || model_ == "gemma4" ||
               model_ == "hybriddna") {
        type_ = VocabType::bpe;
        if (model_ == "gemma4") pre = "gemma4";  // the model fixes its pre-tokenizer
        if (model_ != "gemma4") bos_ = 11, eos_ = 11;
        const PreTokenizerSpec *spec = find_pre_tokenizer(pre);
        if (spec == nullptr) {
            fail("vocab", "key 'tokenizer.ggml.pre': unknown pre-tokenizer '{}'; supported: {}",
                 pre, pre_tokenizer_names());
        }
        pre_tokenizer_ = std::make_shared<const PreTokenizer>(*spec);
        ignore_merges_ = spec->ignore_merges;
        whole_newline_runs_ = spec->whole_newline_runs;
        byte_encode_ = spec->byte_encode;
        escape_whitespaces_ = spec->escape_whitespaces;
        clean_spaces_ = spec->clean_spaces;
        add_bos_ = spec->add_bos;
        if (spec->no_default_bos) bos_ = -1;
        lowercase_ = pre != "whitespace";
        kimi_k2_ = pre == "kimi-k2";
        force_bos_ = spec->force_bos;
    } else {
        for (const auto &[name, what] : kUnsupportedModels) {
            if (model_ == name) {
                fail("vocab",
                     "key 'tokenizer.ggml.model' is '{}' ({}), which Loom does not support", model_,
                     what);
            }
        }
        fail("vocab",
             "key 'tokenizer.ggml.model' is '{}'; supported: 'llama', 'gpt2', 'gemma4', "
             "'whitespace', 'hybriddna', 'bert', 't5'",
             model_);
    }
    add_space_prefix_ =
        metadata.get_optional<bool>("tokenizer.ggml.add_space_prefix").value_or(add_space_prefix_);
}

// The special token ids: llama.cpp's defaults unless a key names one in range.
void Vocab::read_special_ids(const gguf::Metadata &metadata) {
    const int32_t n = n_tokens();
    const auto read = [&](std::string_view key, int32_t &id) {
        if (id >= n) id = -1;  // a default outside this vocabulary
        const std::optional<int64_t> value = metadata.get_integer_optional<int64_t>(key);
        if (value && *value >= 0 && *value < n) id = int32_t(*value);
    };
    read("tokenizer.ggml.bos_token_id", bos_);
    read("tokenizer.ggml.eos_token_id", eos_);
    read("tokenizer.ggml.eot_token_id", eot_);
    read("tokenizer.ggml.eom_token_id", eom_);
    read("tokenizer.ggml.unknown_token_id", unk_);
    read("tokenizer.ggml.seperator_token_id", sep_);  // sic, llama.cpp's key
    add_bos_ = metadata.get_optional<bool>("tokenizer.ggml.add_bos_token").value_or(add_bos_);
    add_eos_ = metadata.get_optional<bool>("tokenizer.ggml.add_eos_token").value_or(add_eos_);
    add_sep_ = metadata.get_optional<bool>("tokenizer.ggml.add_sep_token").value_or(add_sep_);
    if (force_bos_) add_bos_ = true;
}

Vocab Vocab::from_metadata(const gguf::Metadata &metadata) {
    Vocab vocab;
    vocab.read_model(metadata);
    vocab.table_ = read_tokens(metadata);
    if (vocab.model_ == "hybriddna") vocab.find_dna_tokens();
    // Kimi K2 is the one pre-tokenizer llama.cpp runs without merges.
    if (vocab.type_ == VocabType::bpe &&
        (!vocab.kimi_k2_ || metadata.has("tokenizer.ggml.merges"))) {
        vocab.ranks_ = BpeRanks(required_array<std::string>(metadata, "tokenizer.ggml.merges"));
    }
    vocab.read_special_ids(metadata);

    // The tokenizers see the types from the file, before the attribute rules below.
    const bool lowercase =
        metadata.get_optional<bool>("tokenizer.ggml.normalizer.lowercase").value_or(true);
    const bool strip_accents =
        metadata.get_optional<bool>("tokenizer.ggml.normalizer.strip_accents").value_or(lowercase);
    switch (vocab.type_) {
        case VocabType::spm:
            find_byte_tokens(vocab.table_);
            break;
        case VocabType::wpm:
            vocab.wpm_ = std::make_shared<const WpmTokenizer>(
                vocab.table_, WpmOptions{.lowercase = lowercase, .strip_accents = strip_accents});
            break;
        case VocabType::ugm: {
            const UgmOptions options = {
                .add_space_prefix = vocab.add_space_prefix_,
                .remove_extra_whitespaces =
                    metadata.get_optional<bool>("tokenizer.ggml.remove_extra_whitespaces")
                        .value_or(false)};
            vocab.ugm_ = std::make_shared<const UgmTokenizer>(vocab.table_, read_charsmap(metadata),
                                                              options);
            break;
        }
        case VocabType::bpe:
            if (metadata.has("tokenizer.ggml.normalizer.lowercase")) vocab.lowercase_ = lowercase;
            break;
    }
    vocab.find_special_tokens(metadata);
    vocab.set_model_attributes(metadata);
    return vocab;
}

}  // namespace loom::engine
