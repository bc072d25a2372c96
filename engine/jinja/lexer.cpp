#include "engine/jinja/lexer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "engine/jinja/text.h"

namespace loom::engine::jinja {
namespace {

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
    return is_name_start(c) || is_digit(c);
}

// "\r\n" and "\r" as "\n", without the source's last newline (keep_trailing_newline off).
std::string normalize_newlines(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        if (source[i] == '\r') {
            out += '\n';
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out += source[i];
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

class Lexer {
  public:
    explicit Lexer(std::string_view source) : src_(normalize_newlines(source)) {
        line_starts_.push_back(0);
        for (size_t i = 0; i < src_.size(); ++i) {
            if (src_[i] == '\n') line_starts_.push_back(i + 1);
        }
    }

    std::vector<Token> run() {
        // Whether the last match ended a line: lstrip_blocks strips the indentation of a tag
        // at the very start of the text only then (Jinja2's line_starting).
        bool line_starting = true;
        while (pos_ < src_.size()) {
            const size_t hit = find_tag_start(pos_);
            if (hit == std::string::npos) {
                emit_data(src_.substr(pos_), pos_);
                break;
            }
            const char kind = src_[hit + 1];  // '{', '%' or '#'
            const char sign = hit + 2 < src_.size() ? src_[hit + 2] : '\0';
            const size_t raw_end = kind == '%' ? match_raw_begin(hit) : std::string::npos;
            std::string text = src_.substr(pos_, hit - pos_);
            apply_strip(text, sign, kind != '{', line_starting);
            emit_data(std::move(text), pos_);
            const size_t after = hit + 2 + (sign == '-' || sign == '+' ? 1 : 0);
            if (raw_end != std::string::npos) {
                line_starting = src_[raw_end - 1] == '\n';
                pos_ = raw_end;
                line_starting = lex_raw(line_starting);
            } else if (kind == '#') {
                line_starting = lex_comment(hit, after);
            } else {
                push(kind == '{' ? TokenType::variable_begin : TokenType::block_begin,
                     src_.substr(hit, after - hit), hit);
                pos_ = after;
                line_starting = lex_tag(kind == '{', hit);
            }
        }
        push(TokenType::eof, "", src_.size());
        return std::move(tokens_);
    }

  private:
    SourceLocation location(size_t at) const {
        const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), at);
        const size_t line = size_t(it - line_starts_.begin());
        return {int(line), int(at - line_starts_[line - 1]) + 1};
    }

    [[noreturn]] void fail(const std::string &message, size_t at) const {
        syntax_error(message, location(at));
    }

    void push(TokenType type, std::string text, size_t at) {
        tokens_.push_back({type, std::move(text), 0, 0, location(at)});
    }

    void emit_data(std::string text, size_t at) {
        if (!text.empty()) push(TokenType::data, std::move(text), at);
    }

    size_t find_tag_start(size_t from) const {
        for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
            if (i + 1 < src_.size() &&
                (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
                return i;
        }
        return std::string::npos;
    }

    // Whitespace inside tags: ASCII only (a byte >= 0x80 belongs to a UTF-8 sequence).
    bool is_space_at(size_t i) const {
        const auto c = static_cast<unsigned char>(src_[i]);
        return c < 0x80 && is_space(c);
    }

    // Whitespace control of the text before a tag whose begin carries `sign`.
    static void apply_strip(std::string &text, char sign, bool lstrip_applies, bool line_starting) {
        if (sign == '-') {
            text = strip(text, nullptr, false, true);
        } else if (sign != '+' && lstrip_applies) {
            const size_t line_start = text.rfind('\n') + 1;  // npos + 1 == 0
            if (line_start > 0 || line_starting) {
                const std::string_view tail = std::string_view(text).substr(line_start);
                if (!tail.empty() && strip(tail, nullptr, true, false).empty()) {
                    text.resize(line_start);
                }
            }
        }
    }

    // `{%[-+]? raw [-]?%}` at `at`: the end of the match (after "-%}"'s whitespace), or npos.
    size_t match_raw_begin(size_t at) const {
        size_t i = at + 2;
        if (i < src_.size() && (src_[i] == '-' || src_[i] == '+')) ++i;
        while (i < src_.size() && is_space_at(i)) ++i;
        if (src_.compare(i, 3, "raw") != 0) return std::string::npos;
        i += 3;
        while (i < src_.size() && is_space_at(i)) ++i;
        if (src_.compare(i, 3, "-%}") == 0) {
            i += 3;
            while (i < src_.size() && is_space_at(i)) ++i;
            return i;
        }
        if (src_.compare(i, 2, "%}") == 0) return i + 2;
        return std::string::npos;
    }

    // The end of a tag at `i`: "+X}" keeps what follows, "-X}" strips the whitespace after it,
    // "X}" drops one newline when trim_blocks applies. Returns the end of the match, or npos.
    size_t match_tag_end(size_t i, char mark, bool trim_newline) const {
        const char close[] = {mark, '}', '\0'};
        if ((src_[i] == '+' || src_[i] == '-') && src_.compare(i + 1, 2, close) == 0) {
            size_t end = i + 3;
            if (src_[i] == '-') {
                while (end < src_.size() && is_space_at(end)) ++end;
            }
            return end;
        }
        if (src_.compare(i, 2, close) == 0) {
            size_t end = i + 2;
            if (trim_newline && end < src_.size() && src_[end] == '\n') ++end;
            return end;
        }
        return std::string::npos;
    }

    bool lex_comment(size_t begin, size_t from) {
        for (size_t i = from; i < src_.size(); ++i) {
            const size_t end = match_tag_end(i, '#', true);
            if (end != std::string::npos) {
                pos_ = end;
                return src_[end - 1] == '\n';
            }
        }
        fail("missing end of comment tag", begin);
    }

    // The text up to {% endraw %}, whitespace control applied as for any tag.
    bool lex_raw(bool line_starting) {
        const size_t begin = pos_;
        for (size_t i = src_.find("{%", pos_); i != std::string::npos; i = src_.find("{%", i + 1)) {
            size_t j = i + 2;
            const char sign = j < src_.size() ? src_[j] : '\0';
            if (sign == '-' || sign == '+') ++j;
            while (j < src_.size() && is_space_at(j)) ++j;
            if (src_.compare(j, 6, "endraw") != 0) continue;
            j += 6;
            while (j < src_.size() && is_space_at(j)) ++j;
            const size_t end = j < src_.size() ? match_tag_end(j, '%', true) : std::string::npos;
            if (end == std::string::npos) continue;
            std::string text = src_.substr(begin, i - begin);
            apply_strip(text, sign, true, line_starting);
            emit_data(std::move(text), begin);
            pos_ = end;
            return src_[end - 1] == '\n';
        }
        fail("missing end of raw directive", begin);
    }

    // Tokens up to the tag's end; returns whether the end's match ended a line.
    bool lex_tag(bool variable, size_t begin) {
        std::vector<char> brackets;  // the closing brackets expected, innermost last
        while (pos_ < src_.size()) {
            const size_t at = pos_;
            if (brackets.empty()) {
                const size_t end = match_tag_end(at, variable ? '}' : '%', !variable);
                // "+}}" is no end of a variable tag: only "-}}" and "}}" are.
                if (end != std::string::npos && !(variable && src_[at] == '+')) {
                    push(variable ? TokenType::variable_end : TokenType::block_end,
                         src_.substr(at, end - at), at);
                    pos_ = end;
                    return src_[end - 1] == '\n';
                }
            }
            const char c = src_[at];
            if (is_space_at(at)) {
                ++pos_;
            } else if (is_digit(c)) {
                lex_number(at);
            } else if (is_name_start(c)) {
                while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
                push(TokenType::name, src_.substr(at, pos_ - at), at);
            } else if (c == '\'' || c == '"') {
                lex_string(at);
            } else {
                lex_operator(at, brackets);
            }
        }
        fail(variable ? "unexpected end of template: the '{{' is never closed by '}}'"
                      : "unexpected end of template: the '{%' is never closed by '%}'",
             begin);
    }

    // Digits separated by single underscores ("1_000"), from `i`; returns the end, or i.
    size_t digit_run(size_t i) const {
        size_t j = i;
        while (j < src_.size() && is_digit(src_[j])) {
            ++j;
            if (j + 1 < src_.size() && src_[j] == '_' && is_digit(src_[j + 1])) ++j;
        }
        return j;
    }

    void lex_number(size_t at) {
        // A float needs a fraction or an exponent and must not follow a '.' ("x.0.1" indexes).
        const size_t int_end = digit_run(at);
        size_t end = int_end;
        bool is_float = false;
        if (at == 0 || src_[at - 1] != '.') {
            if (end + 1 < src_.size() && src_[end] == '.' && is_digit(src_[end + 1])) {
                end = digit_run(end + 1);
                is_float = true;
            }
            if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
                size_t k = end + 1;
                if (k < src_.size() && (src_[k] == '+' || src_[k] == '-')) ++k;
                if (k < src_.size() && is_digit(src_[k])) {
                    end = digit_run(k);
                    is_float = true;
                }
            }
        }
        std::string digits;
        if (is_float) {
            for (size_t k = at; k < end; ++k) {
                if (src_[k] != '_') digits += src_[k];
            }
            push(TokenType::floating, digits, at);
            tokens_.back().number = std::strtod(digits.c_str(), nullptr);
            pos_ = end;
            return;
        }
        lex_integer(at);
    }

    void lex_integer(size_t at) {
        int base = 10;
        size_t i = at;
        if (src_[at] == '0' && at + 1 < src_.size()) {
            const char p = char(src_[at + 1] | 0x20);
            base = p == 'b' ? 2 : p == 'o' ? 8 : p == 'x' ? 16 : 10;
        }
        const auto digit_value = [](char c) {
            if (is_digit(c)) return c - '0';
            const char l = char(c | 0x20);
            return l >= 'a' && l <= 'f' ? l - 'a' + 10 : 99;
        };
        uint64_t value = 0;
        bool overflow = false;
        const auto take = [&](char c) {
            const uint64_t d = uint64_t(digit_value(c));
            if (value > (uint64_t(INT64_MAX) - d) / uint64_t(base)) overflow = true;
            value = value * uint64_t(base) + d;
        };
        if (base != 10) {
            i += 2;
            const size_t digits_start = i;
            while (i < src_.size()) {
                if (src_[i] == '_' && i + 1 < src_.size() && digit_value(src_[i + 1]) < base) ++i;
                if (digit_value(src_[i]) >= base) break;
                take(src_[i++]);
            }
            if (i == digits_start) {
                base = 10;  // "0x" without digits: the 0, then the name "x"
                i = at;
            }
        }
        if (base == 10) {
            if (src_[at] == '0') {
                // "0", "00", "0_0": a zero; "01" is a zero followed by another number.
                i = at + 1;
                while (i < src_.size() &&
                       (src_[i] == '0' ||
                        (src_[i] == '_' && i + 1 < src_.size() && src_[i + 1] == '0'))) {
                    ++i;
                }
            } else {
                const size_t end = digit_run(at);
                for (i = at; i < end; ++i) {
                    if (src_[i] != '_') take(src_[i]);
                }
            }
        }
        if (overflow) fail("integer literal too large", at);
        push(TokenType::integer, src_.substr(at, i - at), at);
        tokens_.back().integer = int64_t(value);
        pos_ = i;
    }

    void lex_string(size_t at) {
        const char quote = src_[at];
        std::string value;
        size_t i = at + 1;
        while (i < src_.size() && src_[i] != quote) {
            if (src_[i] != '\\') {
                value += src_[i++];
                continue;
            }
            if (i + 1 >= src_.size()) break;
            i = decode_escape(i, value);
        }
        if (i >= src_.size()) fail("unexpected char: a string is never closed", at);
        push(TokenType::string, std::move(value), at);
        pos_ = i + 1;
    }

    // Python's escapes (the decoding of "unicode-escape"): \n \t \\ \' \xhh \uhhhh \Uhhhhhhhh
    // \ooo...; an unknown escape stays as written. Returns the index after the escape.
    size_t decode_escape(size_t i, std::string &out) const {
        const char c = src_[i + 1];
        static constexpr std::string_view kSimple = "\\'\"abfnrtv";
        static constexpr std::string_view kDecoded = "\\'\"\a\b\f\n\r\t\v";
        if (const size_t k = kSimple.find(c); k != std::string_view::npos) {
            out += kDecoded[k];
            return i + 2;
        }
        if (c == '\n') return i + 2;  // a backslash-newline continues the line
        if (c >= '0' && c <= '7') {
            uint32_t cp = 0;
            size_t j = i + 1;
            for (; j < src_.size() && j < i + 4 && src_[j] >= '0' && src_[j] <= '7'; ++j) {
                cp = cp * 8 + uint32_t(src_[j] - '0');
            }
            append_utf8(out, cp);
            return j;
        }
        const size_t width = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
        if (width == 0) {
            out += '\\';
            return i + 1;  // the next character is read as it is
        }
        uint32_t cp = 0;
        for (size_t j = i + 2; j < i + 2 + width; ++j) {
            const char h = j < src_.size() ? src_[j] : '\0';
            const char l = char(h | 0x20);
            const int d = is_digit(h) ? h - '0' : (l >= 'a' && l <= 'f') ? l - 'a' + 10 : -1;
            if (d < 0) fail(fmt::format("truncated \\{} escape in a string", c), i);
            cp = cp * 16 + uint32_t(d);
        }
        if (cp > 0x10FFFF) fail("illegal Unicode character in a \\U escape", i);
        append_utf8(out, cp);
        return i + 2 + width;
    }

    void lex_operator(size_t at, std::vector<char> &brackets) {
        static constexpr std::string_view kTwo[] = {"**", "//", "==", "!=", ">=", "<="};
        for (const std::string_view op : kTwo) {
            if (src_.compare(at, 2, op) == 0) {
                push(TokenType::op, std::string(op), at);
                pos_ = at + 2;
                return;
            }
        }
        const char c = src_[at];
        if (std::string_view("+-/*%~[](){}<>=.:|,;").find(c) == std::string_view::npos) {
            fail(fmt::format("unexpected char '{}'", std::string(1, c)), at);
        }
        if (c == '(' || c == '[' || c == '{') {
            brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
        } else if (c == ')' || c == ']' || c == '}') {
            if (brackets.empty()) fail(fmt::format("unexpected '{}'", c), at);
            if (brackets.back() != c) {
                fail(fmt::format("unexpected '{}', expected '{}'", c, brackets.back()), at);
            }
            brackets.pop_back();
        }
        push(TokenType::op, std::string(1, c), at);
        pos_ = at + 1;
    }

    std::string src_;
    std::vector<size_t> line_starts_;
    std::vector<Token> tokens_;
    size_t pos_ = 0;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
    return Lexer(source).run();
}

}  // namespace loom::engine::jinja
