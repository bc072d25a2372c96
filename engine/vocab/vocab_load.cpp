// Vocab::from_gguf: the tokenizer.ggml.* keys, with llama.cpp's defaults where a key is absent.
#include <fmt/format.h>

#include <algorithm>

#include "engine/vocab/pre_tokenizer.h"
#include "engine/vocab/vocab.h"
#include "loom/error.h"

namespace loom::engine {

namespace {

// Texts of tokens that end a generation even when the file does not name them
// (llama.cpp's list for models whose converters left the EOT/EOM keys out).
constexpr const char *kEndOfTurnTexts[] = {
    "<|eot_id|>",    "<|im_end|>", "<|end|>", "<end_of_turn>",
    "<|endoftext|>", "<EOT>",      "_<EOT>",  "<｜end▁of▁sentence｜>",
};
constexpr const char *kEndOfMessageText = "<|eom_id|>";

template <typename T>
const std::vector<T> &required_array(const gguf::Metadata &metadata, std::string_view key) {
    if (!metadata.has(key)) fail("vocab", "missing key '{}'", key);
    return metadata.get_array<T>(key);
}

// A token id key; absent, or out of range as in files that store 4294967295 for "none": -1.
int32_t token_id(const gguf::Metadata &metadata, std::string_view key, int32_t n_tokens) {
    const std::optional<int64_t> id = metadata.get_integer_optional<int64_t>(key);
    return id && *id >= 0 && *id < n_tokens ? int32_t(*id) : -1;
}

TokenTable read_tokens(const gguf::Metadata &metadata) {
    TokenTable table;
    table.texts = required_array<std::string>(metadata, "tokenizer.ggml.tokens");
    const size_t n = table.texts.size();
    if (n == 0 || n > size_t(INT32_MAX))
        fail("vocab", "key 'tokenizer.ggml.tokens' has {} tokens", n);

    table.scores.assign(n, 0.0f);
    if (metadata.has("tokenizer.ggml.scores")) {
        table.scores = metadata.get_array<float>("tokenizer.ggml.scores");
    }
    table.types.assign(n, TokenType::normal);
    if (metadata.has("tokenizer.ggml.token_type")) {
        const std::vector<int32_t> types =
            metadata.get_integer_array<int32_t>("tokenizer.ggml.token_type");
        if (types.size() != n) {
            fail("vocab", "key 'tokenizer.ggml.token_type' has {} entries for {} tokens",
                 types.size(), n);
        }
        for (size_t i = 0; i < n; ++i) {
            const bool known = types[i] >= 0 && types[i] <= int32_t(TokenType::byte);
            table.types[i] = known ? TokenType(types[i]) : TokenType::undefined;
        }
    }
    if (table.scores.size() != n) {
        fail("vocab", "key 'tokenizer.ggml.scores' has {} entries for {} tokens",
             table.scores.size(), n);
    }
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

bool is_special_type(TokenType type) {
    return type == TokenType::control || type == TokenType::user_defined ||
           type == TokenType::unknown;
}

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

Vocab Vocab::from_metadata(const gguf::Metadata &metadata) {
    Vocab vocab;
    if (!metadata.has("tokenizer.ggml.model")) fail("vocab", "missing key 'tokenizer.ggml.model'");
    const std::string &model_name = metadata.get<std::string>("tokenizer.ggml.model");
    if (model_name == "llama") {
        vocab.type_ = VocabType::spm;
    } else if (model_name == "gpt2") {
        vocab.type_ = VocabType::bpe;
    } else {
        fail("vocab", "key 'tokenizer.ggml.model' is '{}'; supported: 'llama', 'gpt2'", model_name);
    }
    vocab.table_ = read_tokens(metadata);
    const int32_t n = vocab.table_.size();

    if (vocab.type_ == VocabType::spm) {
        find_byte_tokens(vocab.table_);
        vocab.add_bos_ = true;
        vocab.add_space_prefix_ =
            metadata.get_optional<bool>("tokenizer.ggml.add_space_prefix").value_or(true);
    } else {
        vocab.ranks_ = BpeRanks(required_array<std::string>(metadata, "tokenizer.ggml.merges"));
        const std::string pre =
            metadata.get_optional<std::string>("tokenizer.ggml.pre").value_or("default");
        const PreTokenizerSpec *spec = find_pre_tokenizer(pre);
        if (spec == nullptr)
            fail("vocab", "key 'tokenizer.ggml.pre': unknown pre-tokenizer '{}'", pre);
        vocab.pre_tokenizer_ = std::make_shared<const PreTokenizer>(*spec);
        vocab.ignore_merges_ = spec->ignore_merges;
        vocab.add_bos_ = spec->add_bos;
    }
    vocab.add_bos_ =
        metadata.get_optional<bool>("tokenizer.ggml.add_bos_token").value_or(vocab.add_bos_);
    vocab.add_eos_ = metadata.get_optional<bool>("tokenizer.ggml.add_eos_token").value_or(false);

    vocab.bos_ = token_id(metadata, "tokenizer.ggml.bos_token_id", n);
    vocab.eos_ = token_id(metadata, "tokenizer.ggml.eos_token_id", n);
    vocab.eot_ = token_id(metadata, "tokenizer.ggml.eot_token_id", n);
    vocab.eom_ = token_id(metadata, "tokenizer.ggml.eom_token_id", n);
    vocab.unk_ = token_id(metadata, "tokenizer.ggml.unknown_token_id", n);
    for (const char *text : kEndOfTurnTexts) {
        const int32_t id = vocab.table_.find(text);
        if (id < 0) continue;
        if (vocab.eot_ < 0) vocab.eot_ = id;
        vocab.eog_ids_.push_back(id);
    }
    if (vocab.eom_ < 0) vocab.eom_ = vocab.table_.find(kEndOfMessageText);
    for (const int32_t id : {vocab.eos_, vocab.eot_, vocab.eom_}) {
        if (id >= 0) vocab.eog_ids_.push_back(id);
    }
    std::sort(vocab.eog_ids_.begin(), vocab.eog_ids_.end());
    vocab.eog_ids_.erase(std::unique(vocab.eog_ids_.begin(), vocab.eog_ids_.end()),
                         vocab.eog_ids_.end());

    for (int32_t id = 0; id < n; ++id) {
        if (is_special_type(vocab.table_.types[id]) && !vocab.table_.texts[id].empty()) {
            vocab.special_ids_.push_back(id);
        }
    }
    // Longest first, so that "<|im_start|>" is found before a shorter token inside it.
    std::stable_sort(vocab.special_ids_.begin(), vocab.special_ids_.end(),
                     [&](int32_t a, int32_t b) {
                         return vocab.table_.texts[a].size() > vocab.table_.texts[b].size();
                     });
    return vocab;
}

}  // namespace loom::engine
