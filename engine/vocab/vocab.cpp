// Vocab: tokenizing (special tokens first, then the model's tokenizer on each piece of text
// between them) and turning tokens back into bytes, as llama.cpp's llama_vocab does.
#include "engine/vocab/vocab.h"

#include <algorithm>
#include <charconv>

#include "engine/vocab/byte_encoding.h"
#include "engine/vocab/pre_tokenizer.h"
#include "engine/vocab/spm_tokenizer.h"
#include "engine/vocab/ugm_tokenizer.h"
#include "engine/vocab/unicode.h"
#include "engine/vocab/utf8.h"
#include "engine/vocab/wpm_tokenizer.h"
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
std::string byte_piece(const std::string &text) {
    unsigned value = 0;
    const bool hex_form = text.size() == 6 && text.starts_with("<0x") && text.ends_with(">");
    if (hex_form) {
        const auto [end, error] = std::from_chars(text.data() + 3, text.data() + 5, value, 16);
        if (error == std::errc() && end == text.data() + 5) return std::string(1, char(value));
    }
    return text;
}

// The white space llama.cpp's lstrip / rstrip remove: C's isspace in the "C" locale.
bool is_c_space(char c) {
    return c == ' ' || (c >= '\t' && c <= '\r');
}

// llama.cpp's clean-up of tokenization spaces, three passes over the text in place: no space
// before ? ! . , ; " ' " loses both spaces; no space before 's 'm 're 've.
void clean_up_spaces(std::string &text) {
    size_t total = text.empty() ? 0 : 1;
    for (size_t i = 1; i < text.size(); ++i) {
        const char x = text[i];
        if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
        text[total++] = x;
    }
    text.resize(total);

    total = text.empty() ? 0 : 1;
    for (size_t i = 1; i < text.size(); ++i) {
        const char x = text[i];
        if (x == '\'' && i + 1 < text.size() && text[i - 1] == ' ' && text[i + 1] == ' ') {
            --total;
            text[++i] = '\0';  // the space after is skipped; the next pass must not see it
        }
        text[total++] = x;
    }
    text.resize(total);

    total = text.empty() ? 0 : 1;
    for (size_t i = 1; i < text.size(); ++i) {
        const char x = text[i];
        if (text[i - 1] == ' ' && x == '\'' && i + 1 < text.size()) {
            const char x1 = text[i + 1];
            const char x2 = i + 2 < text.size() ? text[i + 2] : '\0';
            if (x1 == 's' || x1 == 'm' || (x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) {
                --total;
            }
        }
        text[total++] = x;
    }
    text.resize(total);
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
    return id >= 0 && id < n_tokens() && (table_.attrs[id] & kAttrControl);
}

TokenType Vocab::token_type(int32_t id) const {
    check_id(id);
    return table_.types[id];
}

uint32_t Vocab::token_attr(int32_t id) const {
    check_id(id);
    return table_.attrs[id];
}

const std::string &Vocab::token_text(int32_t id) const {
    check_id(id);
    return table_.texts[id];
}

// Cuts the text at every occurrence of a special token's text, longest tokens first. Control
// and unknown tokens only count with parse_special; user-defined ones always do. A token with
// lstrip / rstrip takes the white space next to it along.
std::vector<Vocab::Fragment> Vocab::split_special(std::string_view text, bool parse_special) const {
    std::vector<Fragment> fragments;
    if (!text.empty()) fragments.push_back({-1, text});
    std::vector<Fragment> next;
    for (const int32_t id : special_ids_) {
        const uint32_t attr = table_.attrs[id];
        if (!parse_special && (attr & (kAttrControl | kAttrUnknown))) continue;
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
                std::string_view left = rest.substr(0, at);
                if (attr & kAttrLstrip) {
                    while (!left.empty() && is_c_space(left.back())) left.remove_suffix(1);
                }
                if (!left.empty()) next.push_back({-1, left});
                next.push_back({id, {}});
                rest.remove_prefix(at + special.size());
                if (attr & kAttrRstrip) {
                    while (!rest.empty() && is_c_space(rest.front())) rest.remove_prefix(1);
                }
            }
            if (!rest.empty()) next.push_back({-1, rest});
        }
        fragments.swap(next);
    }
    return fragments;
}

void Vocab::tokenize_bpe(std::string_view text, std::vector<int32_t> &out) const {
    const std::string escaped = escape_whitespaces_ ? replace_all(text, " ", kSpmSpace) : "";
    const PreTokenizer::Words words = pre_tokenizer_->split(escape_whitespaces_ ? escaped : text);
    for (size_t i = 0; i < words.size(); ++i) {
        const std::string_view word = words[i];
        const bool newlines = word.find_first_not_of('\n') == std::string_view::npos;
        const BpeWordOptions options = {
            .whole_word = ignore_merges_ || (whole_newline_runs_ && newlines),
            .hex_bytes = !byte_encode_};
        if (byte_encode_) {
            bpe_tokenize_word(table_, ranks_, byte_encode(word), options, out);
        } else {
            bpe_tokenize_word(table_, ranks_, word, options, out);
        }
    }
}

// hybriddna: the text between <dna> and </dna> (or the end) is DNA, cut into k-mers of 6 bases,
// uppercased, the last one padded with A; a k-mer without a token is <oov>. The rest is BPE.
void Vocab::tokenize_dna(std::string_view text, std::vector<int32_t> &out) const {
    constexpr std::string_view kOpen = "<dna>", kClose = "</dna>";
    constexpr size_t kBases = 6;
    while (!text.empty()) {
        const size_t open = text.find(kOpen);
        if (open > 0) tokenize_bpe(text.substr(0, open), out);
        if (open == std::string_view::npos) return;
        out.push_back(dna_begin_);
        text.remove_prefix(open + kOpen.size());
        const size_t close = text.find(kClose);
        std::string bases(text.substr(0, close));
        for (char &c : bases) c = c >= 'a' && c <= 'z' ? char(c - 'a' + 'A') : c;
        for (size_t i = 0; i < bases.size(); i += kBases) {
            std::string kmer = bases.substr(i, kBases);
            kmer.resize(kBases, 'A');
            const int32_t id = table_.find(kmer + std::string(kDnaMarker));
            out.push_back(id >= 0 ? id : dna_unknown_);
        }
        if (close == std::string_view::npos) return;
        out.push_back(dna_end_);
        text.remove_prefix(close + kClose.size());
    }
}

void Vocab::tokenize_text(std::string_view text, bool after_special,
                          std::vector<int32_t> &out) const {
    switch (type_) {
        case VocabType::spm: {
            // The space prefix goes at the start and after every special token, as llama.cpp does.
            std::string prefixed = add_space_prefix_ && after_special ? " " : "";
            prefixed += text;
            spm_tokenize(table_, replace_all(prefixed, " ", kSpmSpace), unk_, out);
            return;
        }
        case VocabType::wpm:
            wpm_->tokenize(text, unk_, out);
            return;
        case VocabType::ugm:
            ugm_->tokenize(table_, text, unk_, out);
            return;
        case VocabType::bpe:
            break;
    }
    if (dna_begin_ >= 0) {
        tokenize_dna(text, out);
        return;
    }
    if (model_ != "whitespace") {
        tokenize_bpe(text, out);
        return;
    }
    // The "whitespace" model: each run between white space (dropped), optionally lowercased, is
    // tokenized on its own.
    std::string segment;
    for (const uint32_t cpt : utf8::decode(text)) {
        if (unicode::is_whitespace(cpt)) {
            if (!segment.empty()) tokenize_bpe(segment, out);
            segment.clear();
        } else {
            utf8::append_codepoint(segment, lowercase_ ? unicode::to_lower(cpt) : cpt);
        }
    }
    if (!segment.empty()) tokenize_bpe(segment, out);
}

std::vector<int32_t> Vocab::tokenize(std::string_view text, bool add_special,
                                     bool parse_special) const {
    std::vector<int32_t> out;
    // WordPiece adds [CLS] ... [SEP] whatever add_bos says.
    const bool wpm = type_ == VocabType::wpm;
    if (add_special && (add_bos_ || wpm) && bos_ >= 0) out.push_back(bos_);
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
    if (add_special && wpm && sep_ >= 0) out.push_back(sep_);
    if (add_special && !wpm && add_eos_ && eos_ >= 0) out.push_back(eos_);
    return out;
}

std::string Vocab::token_to_piece(int32_t id, bool render_special) const {
    check_id(id);
    const std::string &text = table_.texts[id];
    const uint32_t attr = table_.attrs[id];
    if (attr & (kAttrUnknown | kAttrControl)) return render_special ? text : std::string();
    if (attr & kAttrUserDefined) return text;
    if (attr & kAttrNormal) {
        if (type_ != VocabType::bpe || escape_whitespaces_)
            return replace_all(text, kSpmSpace, " ");
        return byte_decode(text);
    }
    if ((attr & kAttrByte) && type_ != VocabType::wpm) return byte_piece(text);
    return {};  // unused and undefined tokens
}

std::string Vocab::detokenize(std::span<const int32_t> ids, bool render_special) const {
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
        std::string piece = token_to_piece(ids[i], render_special);
        if (i == 0 && add_space_prefix_ && piece.starts_with(' ')) piece.erase(0, 1);
        out += piece;
    }
    if (clean_spaces_) clean_up_spaces(out);
    return out;
}

}  // namespace loom::engine
