// Vocab: tokenizing (special tokens first, then SentencePiece or pre-tokenizer + BPE per piece of
// text between them) and turning tokens back into bytes.
#include "engine/vocab/vocab.h"

#include <algorithm>
#include <charconv>

#include "engine/vocab/byte_encoding.h"
#include "engine/vocab/pre_tokenizer.h"
#include "engine/vocab/spm_tokenizer.h"
#include "engine/vocab/utf8.h"
#include "loom/error.h"

namespace loom::engine {

namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string replace_all(std::string_view text, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(text.size());
    size_t start = 0;
    for (size_t at = text.find(from); at != std::string_view::npos; at = text.find(from, start)) {
        out.append(text.substr(start, at - start));
        out.append(to);
        start = at + from.size();
    }
    out.append(text.substr(start));
    return out;
}

// "<0x0A>" -> "\n"; a byte token of another form stands for its own text.
std::string spm_byte_piece(const std::string &text) {
    unsigned value = 0;
    const bool hex_form = text.size() == 6 && text.starts_with("<0x") && text.ends_with(">");
    if (hex_form) {
        const auto [end, error] = std::from_chars(text.data() + 3, text.data() + 5, value, 16);
        if (error == std::errc() && end == text.data() + 5) return std::string(1, char(value));
    }
    return text;
}

}  // namespace

void Vocab::check_id(int32_t id) const {
    if (id < 0 || id >= n_tokens()) {
        fail("vocab", "token id {} is out of range (vocabulary of {} tokens)", id, n_tokens());
    }
}

bool Vocab::is_eog(int32_t id) const {
    return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

bool Vocab::is_control(int32_t id) const {
    return id >= 0 && id < n_tokens() && table_.types[id] == TokenType::control;
}

TokenType Vocab::token_type(int32_t id) const {
    check_id(id);
    return table_.types[id];
}

const std::string &Vocab::token_text(int32_t id) const {
    check_id(id);
    return table_.texts[id];
}

// Cuts the text at every occurrence of a special token's text, longest tokens first. Control
// and unknown tokens only count with parse_special; user-defined ones always do.
std::vector<Vocab::Fragment> Vocab::split_special(std::string_view text, bool parse_special) const {
    std::vector<Fragment> fragments;
    if (!text.empty()) fragments.push_back({-1, text});
    std::vector<Fragment> next;
    for (const int32_t id : special_ids_) {
        if (!parse_special && table_.types[id] != TokenType::user_defined) continue;
        const std::string_view special = table_.texts[id];
        next.clear();
        for (const Fragment &fragment : fragments) {
            if (fragment.token >= 0) {
                next.push_back(fragment);
                continue;
            }
            std::string_view rest = fragment.text;
            for (size_t at = rest.find(special); at != std::string_view::npos;
                 at = rest.find(special)) {
                if (at > 0) next.push_back({-1, rest.substr(0, at)});
                next.push_back({id, {}});
                rest.remove_prefix(at + special.size());
            }
            if (!rest.empty()) next.push_back({-1, rest});
        }
        fragments.swap(next);
    }
    return fragments;
}

void Vocab::tokenize_text(std::string_view text, bool after_special,
                          std::vector<int32_t> &out) const {
    if (type_ == VocabType::spm) {
        // The space prefix goes at the start and after every special token, as llama.cpp does.
        const std::string prefixed =
            add_space_prefix_ && after_special ? " " + std::string(text) : std::string(text);
        spm_tokenize(table_, replace_all(prefixed, " ", kSpmSpace), unk_, out);
        return;
    }
    const std::string valid = utf8::replace_invalid(text);
    for (const std::string_view word : pre_tokenizer_->split(valid)) {
        bpe_tokenize_word(table_, ranks_, byte_encode(word), ignore_merges_, out);
    }
}

std::vector<int32_t> Vocab::tokenize(std::string_view text, bool add_special,
                                     bool parse_special) const {
    std::vector<int32_t> out;
    if (add_special && add_bos_ && bos_ >= 0) out.push_back(bos_);
    bool after_special = true;
    for (const Fragment &fragment : split_special(text, parse_special)) {
        if (fragment.token >= 0) {
            out.push_back(fragment.token);
            after_special = true;
        } else {
            tokenize_text(fragment.text, after_special, out);
            after_special = false;
        }
    }
    if (add_special && add_eos_ && eos_ >= 0) out.push_back(eos_);
    return out;
}

std::string Vocab::token_to_piece(int32_t id, bool render_special) const {
    check_id(id);
    const std::string &text = table_.texts[id];
    switch (table_.types[id]) {
        case TokenType::normal:
            return type_ == VocabType::spm ? replace_all(text, kSpmSpace, " ") : byte_decode(text);
        case TokenType::user_defined:
            return type_ == VocabType::spm ? replace_all(text, kSpmSpace, " ") : text;
        case TokenType::control:
            return render_special ? text : std::string();
        case TokenType::unknown:
            // SentencePiece shows an unknown token as U+2585 (a lower block).
            if (!render_special) return {};
            return type_ == VocabType::spm ? "\xE2\x96\x85" : text;
        case TokenType::byte:
            if (type_ == VocabType::spm) return spm_byte_piece(text);
            return byte_decode(text);
        case TokenType::undefined:
        case TokenType::unused:
            return {};
    }
    return {};
}

std::string Vocab::detokenize(std::span<const int32_t> ids, bool render_special) const {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        std::string piece = token_to_piece(ids[i], render_special);
        if (i == 0 && add_space_prefix_ && piece.starts_with(' ')) piece.erase(0, 1);
        out += piece;
    }
    return out;
}

}  // namespace loom::engine
