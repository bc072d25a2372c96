#include "engine/vocab/ugm_tokenizer.h"

#include <algorithm>
#include <cfloat>

#include "engine/vocab/utf8.h"
#include "loom/error.h"

namespace loom::engine {

namespace {

constexpr std::string_view kCharsmapKey = "tokenizer.ggml.precompiled_charsmap";
constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";  // U+2581
// A character no token covers costs this much below the least likely token (SentencePiece's
// penalty).
constexpr float kUnknownPenalty = 10.0f;

uint32_t read_le32(const uint8_t *p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}

// A double-array entry packs BASE in bits 10-30 (shifted left by 8 more when bit 9 is set),
// LEAF in bit 8, LCHECK in bits 0-7 (with bit 31, which marks a value entry); a value entry
// holds a replacement offset in bits 0-30.
uint32_t xcda_base(uint32_t node) {
    return (node >> 10) << ((node & (1u << 9)) >> 6);
}
uint32_t xcda_lcheck(uint32_t node) {
    return node & ((1u << 31) | 0xFF);
}
bool xcda_leaf(uint32_t node) {
    return (node >> 8) & 1;
}
uint32_t xcda_value(uint32_t node) {
    return node & ((1u << 31) - 1);
}

struct Best {
    int32_t token;
    size_t from;  // where the last token starts
    double score;
};

}  // namespace

UgmTokenizer::UgmTokenizer(const TokenTable &table, const std::vector<uint8_t> &charsmap,
                           const UgmOptions &options)
    : options_(options) {
    if (!charsmap.empty()) {
        if (charsmap.size() < 4)
            fail("vocab", "key '{}' has {} bytes", kCharsmapKey, charsmap.size());
        const uint64_t xcda_bytes = read_le32(charsmap.data());
        if (xcda_bytes + 4 >= charsmap.size()) {
            fail("vocab", "key '{}': its double array of {} bytes does not fit in {}", kCharsmapKey,
                 xcda_bytes, charsmap.size());
        }
        xcda_.resize(xcda_bytes / 4);
        for (size_t i = 0; i < xcda_.size(); ++i) xcda_[i] = read_le32(&charsmap[4 + 4 * i]);
        replacements_.assign(charsmap.begin() + 4 + xcda_bytes, charsmap.end());
    }

    float min_score = FLT_MAX;
    std::vector<std::pair<std::string_view, int32_t>> tokens, user_defined;
    for (int32_t id = 0; id < table.size(); ++id) {
        const TokenType type = table.types[id];
        if (type == TokenType::normal) min_score = std::min(min_score, table.scores[id]);
        if (type == TokenType::normal || type == TokenType::user_defined ||
            type == TokenType::unused) {
            tokens.emplace_back(table.texts[id], id);
        }
        if (type == TokenType::user_defined) user_defined.emplace_back(table.texts[id], id);
    }
    unknown_score_ = min_score - kUnknownPenalty;
    tokens_ = TokenTrie(std::move(tokens));
    user_defined_ = TokenTrie(std::move(user_defined));
}

uint32_t UgmTokenizer::xcda_node(size_t index) const {
    if (index >= xcda_.size()) {
        fail("vocab", "key '{}': double array index {} out of {}", kCharsmapKey, index,
             xcda_.size());
    }
    return xcda_[index];
}

// The normalization of the input at `offset`: a user-defined token as it is, else the longest
// prefix the charsmap replaces, else one character unchanged (a malformed byte becomes U+FFFD).
UgmTokenizer::Replacement UgmTokenizer::normalize_prefix(std::string_view input,
                                                         size_t offset) const {
    const std::string_view rest = input.substr(offset);
    const size_t user_defined = user_defined_.longest_prefix(rest).first;
    if (user_defined > 0) return {rest.substr(0, user_defined), user_defined};

    size_t longest = 0, replacement = 0;
    if (!xcda_.empty()) {
        uint32_t node = xcda_base(xcda_node(0));
        for (size_t i = 0; i < rest.size() && rest[i] != '\0'; ++i) {
            const uint8_t c = uint8_t(rest[i]);
            node ^= c;
            const uint32_t entry = xcda_node(node);
            if (xcda_lcheck(entry) != c) break;
            node ^= xcda_base(entry);
            if (xcda_leaf(entry)) {
                longest = i + 1;
                replacement = xcda_value(xcda_node(node));
            }
        }
    }
    if (longest > 0) {
        if (replacement >= replacements_.size()) {
            fail("vocab", "key '{}': replacement offset {} out of {}", kCharsmapKey, replacement,
                 replacements_.size());
        }
        const size_t end = replacements_.find('\0', replacement);
        if (end == std::string::npos) {
            fail("vocab", "key '{}': replacement at {} is not terminated", kCharsmapKey,
                 replacement);
        }
        return {std::string_view(replacements_).substr(replacement, end - replacement), longest};
    }
    size_t length = 0;
    if (utf8::decode_at(input, offset, length) == utf8::kMalformed) return {"\xEF\xBF\xBD", 1};
    return {rest.substr(0, length), length};
}

std::string UgmTokenizer::normalize(std::string_view input) const {
    const std::string_view space = options_.escape_whitespaces ? kEscapedSpace : " ";
    std::string out;
    out.reserve(input.size() * 3);
    bool space_prepended = false, in_word = false;
    for (size_t offset = 0; offset < input.size();) {
        const Replacement r = normalize_prefix(input, offset);
        for (const char c : r.text) {
            if (c == ' ') {
                in_word = false;
                if (!options_.remove_extra_whitespaces) out += space;
                continue;
            }
            // One space before each word when merging spaces, else before the first one only.
            const bool prefix = options_.remove_extra_whitespaces ||
                                (options_.add_space_prefix && !space_prepended);
            if (!in_word && prefix) {
                out += space;
                space_prepended = true;
            }
            in_word = true;
            out += c;
        }
        offset += r.consumed;
    }
    return out;
}

void UgmTokenizer::tokenize(const TokenTable &table, std::string_view text, int32_t unknown_id,
                            std::vector<int32_t> &out) const {
    const std::string normalized = normalize(text);
    const size_t n = normalized.size();
    if (n == 0) return;
    // best[i]: the highest scoring way to tokenize the first i bytes.
    std::vector<Best> best(n + 1, {unknown_id, 0, -DBL_MAX});
    best[0].score = 0;
    for (size_t offset = 0; offset < n;) {
        const size_t char_length = utf8::char_length_at(normalized, offset);
        const double base = best[offset].score;
        bool whole_char = false;
        tokens_.for_each_prefix(std::string_view(normalized).substr(offset),
                                [&](size_t length, int32_t id) {
                                    whole_char = whole_char || length == char_length;
                                    // User-defined tokens score 0, above every log probability.
                                    const bool user = table.attrs[id] & kAttrUserDefined;
                                    const double score = base + (user ? 0.0 : table.scores[id]);
                                    if (score > best[offset + length].score) {
                                        best[offset + length] = {id, offset, score};
                                    }
                                });
        if (!whole_char) {
            const double score = base + unknown_score_;
            if (score > best[offset + char_length].score) {
                best[offset + char_length] = {unknown_id, offset, score};
            }
        }
        offset += char_length;
    }
    // Back from the end; a run of unknown characters gives one unknown token.
    const size_t start = out.size();
    bool previous_unknown = false;
    for (size_t end = n;;) {
        const Best &b = best[end];
        const bool unknown = b.token == unknown_id;
        if (!(unknown && previous_unknown) && b.token >= 0) out.push_back(b.token);
        previous_unknown = unknown;
        if (b.from == 0) break;
        end = b.from;
    }
    std::reverse(out.begin() + start, out.end());
}

}  // namespace loom::engine
