// JSON Schema patterns as GBNF (regex_gbnf.h): a recursive-descent reader of the ECMA-262 subset
// that writes each construct as the GBNF construct of the same strings.
#include "engine/grammar/regex_gbnf.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <utility>
#include <vector>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/utf8_char.h"
#include "loom/error.h"

namespace loom::engine::grammar {
namespace {

// As the GBNF parser's repetition limit; and how deep groups may nest (the reader recurses).
constexpr int64_t kMaxCount = 10000;
constexpr int kMaxDepth = 128;
constexpr uint32_t kLastCodePoint = 0x10FFFF;

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;  // inclusive code point ranges

Ranges merged(Ranges r) {
    std::sort(r.begin(), r.end());
    Ranges out;
    for (const auto &[lo, hi] : r) {
        if (!out.empty() && lo <= out.back().second + 1) {
            out.back().second = std::max(out.back().second, hi);
        } else {
            out.emplace_back(lo, hi);
        }
    }
    return out;
}

Ranges complement(const Ranges &r) {
    Ranges out;
    uint32_t next = 0;
    for (const auto &[lo, hi] : merged(r)) {
        if (lo > next) out.emplace_back(next, lo - 1);
        next = hi + 1;
    }
    if (next <= kLastCodePoint) out.emplace_back(next, kLastCodePoint);
    return out;
}

std::string utf8(uint32_t c) {
    std::string out;
    if (c < 0x80) {
        out += char(c);
    } else if (c < 0x800) {
        out += char(0xC0 | c >> 6);
        out += char(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += char(0xE0 | c >> 12);
        out += char(0x80 | (c >> 6 & 0x3F));
        out += char(0x80 | (c & 0x3F));
    } else {
        out += char(0xF0 | c >> 18);
        out += char(0x80 | (c >> 12 & 0x3F));
        out += char(0x80 | (c >> 6 & 0x3F));
        out += char(0x80 | (c & 0x3F));
    }
    return out;
}

// How JSON writes code point c inside a string.
std::string json_written(uint32_t c) {
    switch (c) {
        case '"':
            return "\\\"";
        case '\\':
            return "\\\\";
        case '\n':
            return "\\n";
        case '\r':
            return "\\r";
        case '\t':
            return "\\t";
        case '\b':
            return "\\b";
        case '\f':
            return "\\f";
        default:
            break;
    }
    if (c < 0x20) return fmt::format("\\u{:04x}", c);
    return utf8(c);
}

std::string class_range(uint32_t lo, uint32_t hi) {
    return lo == hi ? fmt::format("\\U{:08X}", lo) : fmt::format("\\U{:08X}-\\U{:08X}", lo, hi);
}

// Characters JSON must escape: never written by a negated set, written escaped by others.
const Ranges kEscaped = {{0x00, 0x1F}, {'"', '"'}, {'\\', '\\'}};

// The GBNF of one character of `set`: those JSON writes as themselves in one class, the others
// as their escapes. Negated: any character outside the set that JSON writes as itself.
std::string set_gbnf(const Ranges &set, bool negated) {
    if (negated) {
        std::string out = "[^";
        for (const auto &[lo, hi] : merged([&] {
                 Ranges all = set;
                 all.insert(all.end(), kEscaped.begin(), kEscaped.end());
                 return all;
             }())) {
            out += class_range(lo, hi);
        }
        return out + "]";
    }
    std::vector<std::string> alternatives;
    std::string plain;
    for (const auto &[lo, hi] : merged(set)) {
        // Split out the characters JSON escapes.
        uint32_t from = lo;
        for (const auto &[elo, ehi] : kEscaped) {
            if (ehi < from || elo > hi) continue;
            if (elo > from) plain += class_range(from, elo - 1);
            for (uint32_t c = std::max(elo, from); c <= std::min(ehi, hi); ++c) {
                alternatives.push_back(gbnf_literal(json_written(c)));
            }
            from = ehi + 1;
        }
        if (from <= hi) plain += class_range(from, hi);
    }
    if (!plain.empty()) alternatives.insert(alternatives.begin(), "[" + plain + "]");
    if (alternatives.empty()) return "[^\\U00000000-\\U0010FFFF]";  // an empty set: nothing
    if (alternatives.size() == 1) return alternatives[0];
    return "( " + fmt::format("{}", fmt::join(alternatives, " | ")) + " )";
}

const Ranges kDigits = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\r'},     {' ', ' '},       {0xA0, 0xA0},     {0x1680, 0x1680},
                       {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                       {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
// `.`: any character but line terminators.
const Ranges kLineEnds = {{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}};

class Reader {
  public:
    explicit Reader(std::string_view pattern) : p_(pattern) {}

    std::string read() {
        // Each top-level alternative has its own anchors ("^a|b$": begins with a, or ends with b);
        // an unanchored side may have any characters.
        std::vector<std::string> alternatives;
        do {
            const bool starts = eat('^');
            bool ends = false;
            std::string body = sequence(0, &ends);
            alternatives.push_back((starts ? "" : "char* ") + body + (ends ? "" : " char*"));
        } while (eat('|'));
        if (pos_ < p_.size()) error("an unmatched ')'");
        return alternatives.size() == 1
                   ? alternatives[0]
                   : "( " + fmt::format("{}", fmt::join(alternatives, " | ")) + " )";
    }

  private:
    [[noreturn]] void error(const std::string &what) const {
        fail("regex", "{} at offset {} of the pattern", what, pos_);
    }
    bool at_end() const { return pos_ >= p_.size(); }
    char peek(size_t ahead = 0) const { return pos_ + ahead < p_.size() ? p_[pos_ + ahead] : '\0'; }
    bool eat(char c) {
        if (peek() != c || at_end()) return false;
        ++pos_;
        return true;
    }

    std::string alternation(int depth) {
        std::vector<std::string> alternatives{sequence(depth, nullptr)};
        while (eat('|')) alternatives.push_back(sequence(depth, nullptr));
        return fmt::format("{}", fmt::join(alternatives, " | "));
    }

    // Atoms with their quantifiers up to '|', ')' or the end. `ends` (top level only): set by a
    // '$' that ends the alternative.
    std::string sequence(int depth, bool *ends) {
        std::string out;
        while (!at_end() && peek() != '|' && peek() != ')') {
            if (peek() == '$') {
                ++pos_;
                if (ends == nullptr || !(at_end() || peek() == '|')) {
                    error("'$' is supported only at the end of the pattern");
                }
                *ends = true;
                break;
            }
            if (peek() == '^') error("'^' is supported only at the start of the pattern");
            std::string atom = this->atom(depth);
            out += atom + quantifier() + " ";
        }
        if (out.empty()) return "( \"\" )";
        return "( " + out + ")";
    }

    std::string quantifier() {
        std::string q;
        if (eat('*')) {
            q = "*";
        } else if (eat('+')) {
            q = "+";
        } else if (eat('?')) {
            q = "?";
        } else if (peek() == '{' && std::isdigit(static_cast<unsigned char>(peek(1)))) {
            ++pos_;
            const int64_t min = number();
            int64_t max = min;
            if (eat(',')) max = std::isdigit(static_cast<unsigned char>(peek())) ? number() : -1;
            if (!eat('}')) error("a count not closed by '}'");
            if (max >= 0 && max < min) error("a count whose maximum is below its minimum");
            q = max < 0 ? fmt::format("{{{},}}", min) : fmt::format("{{{},{}}}", min, max);
        } else {
            return "";
        }
        eat('?');  // lazy: the same strings
        if (peek() == '*' || peek() == '+' || peek() == '?' ||
            (peek() == '{' && std::isdigit(static_cast<unsigned char>(peek(1))))) {
            error("a quantifier of a quantifier");
        }
        return q;
    }

    int64_t number() {
        int64_t n = 0;
        while (std::isdigit(static_cast<unsigned char>(peek()))) {
            n = n * 10 + (peek() - '0');
            if (n > kMaxCount) error(fmt::format("counts above {} are not supported", kMaxCount));
            ++pos_;
        }
        return n;
    }

    std::string atom(int depth) {
        const char c = peek();
        if (c == '(') {
            if (depth >= kMaxDepth) error("groups nested too deep");
            ++pos_;
            if (eat('?')) {
                if (eat(':')) {
                } else if (peek() == '<' && peek(1) != '=' && peek(1) != '!') {
                    while (!at_end() && peek() != '>') ++pos_;  // a named group's name
                    if (!eat('>')) error("a group name not closed by '>'");
                } else {
                    error("lookarounds ((?=, (?!, (?<=, (?<!) are not supported");
                }
            }
            std::string body = alternation(depth + 1);
            if (!eat(')')) error("a '(' not closed");
            return "( " + body + " )";
        }
        if (c == '[') return character_class();
        if (c == '.') {
            ++pos_;
            return set_gbnf(kLineEnds, true);
        }
        if (c == '*' || c == '+' || c == '?') error("a quantifier with nothing to repeat");
        if (c == '\\') {
            Ranges set;
            bool negated = false;
            const uint32_t cp = escape(false, set, negated);
            if (!set.empty()) return set_gbnf(set, negated);
            return gbnf_literal(json_written(cp));
        }
        return gbnf_literal(json_written(code_point()));
    }

    uint32_t code_point() {
        uint32_t lo = 0, hi = 0;
        size_t length = 0;
        if (decode_char(p_, pos_, lo, hi, length) != Utf8::whole) error("invalid UTF-8");
        pos_ += length;
        return lo;
    }

    uint32_t hex(int digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
            const char h = peek();
            if (!std::isxdigit(static_cast<unsigned char>(h))) {
                error(fmt::format("expected {} hexadecimal digits", digits));
            }
            v = v << 4 |
                uint32_t(std::isdigit(static_cast<unsigned char>(h)) ? h - '0'
                                                                     : (h | 0x20) - 'a' + 10);
            ++pos_;
        }
        return v;
    }

    // After a backslash: a class escape (\d, \w, \s and negations: `set` filled, `negated` for
    // the capitals) or one character, returned.
    uint32_t escape(bool in_class, Ranges &set, bool &negated) {
        ++pos_;  // the backslash
        if (at_end()) error("a pattern ending in '\\'");
        const char e = p_[pos_++];
        switch (e) {
            case 'd':
                set = kDigits;
                return 0;
            case 'w':
                set = kWord;
                return 0;
            case 's':
                set = kSpace;
                return 0;
            case 'D':
                set = kDigits, negated = true;
                return 0;
            case 'W':
                set = kWord, negated = true;
                return 0;
            case 'S':
                set = kSpace, negated = true;
                return 0;
            case 'n':
                return '\n';
            case 'r':
                return '\r';
            case 't':
                return '\t';
            case 'f':
                return '\f';
            case 'v':
                return '\v';
            case 'x':
                return hex(2);
            case 'u': {
                if (!eat('{')) return hex(4);
                uint32_t v = 0;
                while (std::isxdigit(static_cast<unsigned char>(peek()))) {
                    v = v << 4 | hex(1);
                    if (v > kLastCodePoint) error("a code point past U+10FFFF");
                }
                if (!eat('}')) error("a \\u{...} not closed");
                return v;
            }
            case '0':
                if (std::isdigit(static_cast<unsigned char>(peek()))) {
                    error("octal escapes are not supported");
                }
                return 0;
            case 'b':
                if (in_class) return '\b';
                error("word boundaries (\\b) are not supported");
            case 'B':
                error("word boundaries (\\B) are not supported");
            case 'p':
            case 'P':
                error("Unicode property classes (\\p, \\P) are not supported");
            case 'k':
                error("back-references are not supported");
            default:
                break;
        }
        if (e >= '1' && e <= '9') error("back-references are not supported");
        if (std::isalnum(static_cast<unsigned char>(e))) {
            error(fmt::format("the escape '\\{}' is not supported", e));
        }
        --pos_;  // "\." and its kind: the character itself, which may be UTF-8
        return code_point();
    }

    std::string character_class() {
        ++pos_;  // '['
        const bool negated = eat('^');
        Ranges set;
        const auto add_set = [&](const Ranges &s, bool s_negated) {
            const Ranges r = s_negated ? complement(s) : s;
            set.insert(set.end(), r.begin(), r.end());
        };
        while (!at_end() && peek() != ']') {
            Ranges escaped;
            bool escaped_negated = false;
            const uint32_t lo =
                peek() == '\\' ? escape(true, escaped, escaped_negated) : code_point();
            if (!escaped.empty()) {
                add_set(escaped, escaped_negated);
                continue;
            }
            if (peek() == '-' && peek(1) != ']' && pos_ + 1 < p_.size()) {
                ++pos_;
                Ranges end_set;
                bool end_negated = false;
                const uint32_t hi =
                    peek() == '\\' ? escape(true, end_set, end_negated) : code_point();
                if (!end_set.empty()) {  // [a-\d]: a, '-', and the digits
                    set.emplace_back(lo, lo);
                    set.emplace_back('-', '-');
                    add_set(end_set, end_negated);
                    continue;
                }
                if (hi < lo) error("a class range out of order");
                set.emplace_back(lo, hi);
                continue;
            }
            set.emplace_back(lo, lo);
        }
        if (!eat(']')) error("a '[' not closed");
        if (set.empty()) {  // []: nothing; [^]: any character
            return negated ? set_gbnf({}, true) : set_gbnf({}, false);
        }
        return set_gbnf(set, negated);
    }

    std::string_view p_;
    size_t pos_ = 0;
};

}  // namespace

std::string regex_to_gbnf(std::string_view pattern) {
    return Reader(pattern).read();
}

}  // namespace loom::engine::grammar
