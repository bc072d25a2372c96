// The GBNF parser and the checks a grammar passes before the matcher walks it.
#include "engine/grammar/gbnf.h"

#include <algorithm>
#include <map>

#include "engine/grammar/utf8_char.h"
#include "loom/error.h"

namespace loom::engine::grammar {
namespace {

// Limits that keep a hostile grammar from taking the machine: a repetition count, the symbols
// of all rules together, and how deep parentheses nest (the parser recurses on them).
constexpr int64_t kMaxRepetition = 10000;
constexpr size_t kMaxSymbols = size_t(1) << 20;
constexpr int kMaxNesting = 256;

bool is_name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_';
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

Symbol char_symbol(uint32_t lo, uint32_t hi) {
    return {.rule = -1, .chars = {.ranges = {{lo, hi}}, .negated = false}};
}

Symbol rule_symbol(int32_t rule) {
    return {.rule = rule, .chars = {}};
}

class Parser {
  public:
    explicit Parser(std::string_view text) : text_(text) {}

    Grammar parse(std::string_view root) {
        skip_space(true);
        while (!at_end()) {
            parse_rule();
            skip_space(true);
        }
        for (size_t r = 0; r < grammar_.rules.size(); ++r) {
            if (!defined_[r])
                error_at(first_use_[r], "undefined rule '{}'", grammar_.rules[r].name);
        }
        const auto it = ids_.find(root);
        if (it == ids_.end()) fail("grammar", "the grammar has no rule '{}' to start from", root);
        grammar_.root = it->second;
        check_left_recursion();
        for (Rule &rule : grammar_.rules) {
            for (Sequence &sequence : rule.alternatives) {
                for (Symbol &symbol : sequence) {
                    if (symbol.rule < 0) symbol.chars.index();
                }
            }
        }
        return std::move(grammar_);
    }

  private:
    template <typename... Args>
    [[noreturn]] void error_at(size_t offset, fmt::format_string<Args...> format, Args &&...args) {
        int line = 1, column = 1;
        for (size_t i = 0; i < offset && i < text_.size(); ++i) {
            if (text_[i] == '\n') {
                ++line;
                column = 1;
            } else if ((uint8_t(text_[i]) & 0xC0) != 0x80) {  // one column per character
                ++column;
            }
        }
        fail("grammar", "line {}, column {}: {}", line, column,
             fmt::format(format, std::forward<Args>(args)...));
    }

    bool at_end() const { return pos_ >= text_.size(); }
    char peek(size_t ahead = 0) const {
        return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
    }

    // Spaces, tabs and comments; line breaks too where a rule may go on (`newlines`).
    void skip_space(bool newlines) {
        while (!at_end()) {
            const char c = peek();
            if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
                ++pos_;
            } else if (c == '#') {
                while (!at_end() && peek() != '\n' && peek() != '\r') ++pos_;
            } else {
                return;
            }
        }
    }

    std::string_view parse_name() {
        const size_t start = pos_;
        while (!at_end() && is_name_char(peek())) ++pos_;
        return text_.substr(start, pos_ - start);
    }

    int32_t add_rule(std::string name, bool defined, size_t offset) {
        grammar_.rules.push_back({std::move(name), {}});
        defined_.push_back(defined);
        first_use_.push_back(offset);
        return int32_t(grammar_.rules.size() - 1);
    }

    // The rule of this name, declared by its first reference until its definition is seen.
    int32_t rule_id(std::string_view name, size_t offset) {
        const auto it = ids_.find(name);
        if (it != ids_.end()) return it->second;
        const int32_t id = add_rule(std::string(name), false, offset);
        ids_.emplace(std::string(name), id);
        return id;
    }

    // A rule for a group or a repetition inside rule `owner`.
    int32_t synthesized_rule(const std::string &owner) {
        return add_rule(fmt::format("{}_{}", owner, grammar_.rules.size()), true, pos_);
    }

    void count_symbols(size_t n) {
        symbols_ += n;
        if (symbols_ > kMaxSymbols) {
            error_at(pos_, "the grammar grows past {} symbols (repetition counts multiply)",
                     kMaxSymbols);
        }
    }

    void parse_rule() {
        const size_t start = pos_;
        const std::string_view name = parse_name();
        if (name.empty()) error_at(pos_, "expected a rule name (letters, digits, '-', '_')");
        skip_space(false);
        if (text_.substr(pos_, 3) != "::=") error_at(pos_, "expected '::=' after '{}'", name);
        pos_ += 3;
        skip_space(true);
        const int32_t id = rule_id(name, start);
        if (defined_[size_t(id)]) error_at(start, "rule '{}' is defined twice", name);
        defined_[size_t(id)] = true;
        std::vector<Sequence> alternatives = parse_alternatives(std::string(name), 0);
        grammar_.rules[size_t(id)].alternatives = std::move(alternatives);
        if (!at_end() && peek() != '\n' && peek() != '\r') {
            error_at(pos_, "unexpected '{}' in rule '{}'", peek(), name);
        }
    }

    std::vector<Sequence> parse_alternatives(const std::string &owner, int depth) {
        std::vector<Sequence> alternatives;
        alternatives.push_back(parse_sequence(owner, depth));
        while (peek() == '|') {
            ++pos_;
            skip_space(true);
            alternatives.push_back(parse_sequence(owner, depth));
        }
        return alternatives;
    }

    // One character of a literal or a class, escapes decoded.
    uint32_t parse_char() {
        const size_t start = pos_;
        if (peek() == '\\') {
            const char e = peek(1);
            pos_ += 2;
            switch (e) {
                case 'n':
                    return '\n';
                case 'r':
                    return '\r';
                case 't':
                    return '\t';
                case '\\':
                case '"':
                case '[':
                case ']':
                case '-':
                case '^':
                    return uint32_t(uint8_t(e));
                case 'x':
                    return parse_hex(2, start);
                case 'u':
                    return parse_hex(4, start);
                case 'U':
                    return parse_hex(8, start);
                default:
                    error_at(start, "unknown escape '\\{}'", e == '\0' ? ' ' : e);
            }
        }
        uint32_t c = 0, unused = 0;
        size_t length = 0;
        if (decode_char(text_, pos_, c, unused, length) != Utf8::whole)
            error_at(start, "invalid UTF-8");
        pos_ += length;
        return c;
    }

    uint32_t parse_hex(int digits, size_t start) {
        uint32_t value = 0;
        for (int i = 0; i < digits; ++i) {
            const int d = hex_value(peek());
            if (d < 0) error_at(start, "expected {} hexadecimal digits after the escape", digits);
            value = value << 4 | uint32_t(d);
            ++pos_;
        }
        if (value > 0x10FFFF) error_at(start, "U+{:X} is past the last code point", value);
        return value;
    }

    CharSet parse_class() {
        const size_t start = pos_;
        ++pos_;  // '['
        CharSet set;
        if (peek() == '^') {
            set.negated = true;
            ++pos_;
        }
        while (peek() != ']') {
            if (at_end()) error_at(start, "unterminated character class");
            const size_t at = pos_;
            const uint32_t lo = parse_char();
            uint32_t hi = lo;
            if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
                ++pos_;
                hi = parse_char();
                if (hi < lo) error_at(at, "the range U+{:X}-U+{:X} is reversed", lo, hi);
            }
            set.ranges.emplace_back(lo, hi);
        }
        ++pos_;  // ']'
        return set;
    }

    int64_t parse_count() {
        const size_t start = pos_;
        int64_t n = 0;
        while (peek() >= '0' && peek() <= '9') {
            n = n * 10 + (peek() - '0');
            if (n > kMaxRepetition)
                error_at(start, "repetition counts go up to {}", kMaxRepetition);
            ++pos_;
        }
        if (pos_ == start) error_at(start, "expected a number in the repetition");
        return n;
    }

    // The symbols from `last` on (the last element) repeated min to max (-1: any number) times.
    void repeat(Sequence &sequence, size_t last, const std::string &owner, int64_t min,
                int64_t max) {
        const Sequence item(sequence.begin() + ptrdiff_t(last), sequence.end());
        sequence.resize(last);
        if (item.empty()) return;  // "" repeated is still ""
        count_symbols(item.size() * size_t(min));
        for (int64_t i = 0; i < min; ++i) sequence.insert(sequence.end(), item.begin(), item.end());
        if (max < 0) {  // star ::= item star | ""
            const int32_t star = synthesized_rule(owner);
            Sequence more = item;
            more.push_back(rule_symbol(star));
            grammar_.rules[size_t(star)].alternatives = {std::move(more), {}};
            count_symbols(item.size() + 1);
            sequence.push_back(rule_symbol(star));
            return;
        }
        // max - min optional items, nested: opt_1 ::= item opt_2 | "", ..., opt_k ::= item | ""
        int32_t tail = -1;
        count_symbols(size_t(max - min) * (item.size() + 1));
        for (int64_t i = min; i < max; ++i) {
            const int32_t optional = synthesized_rule(owner);
            Sequence some = item;
            if (tail >= 0) some.push_back(rule_symbol(tail));
            grammar_.rules[size_t(optional)].alternatives = {std::move(some), {}};
            tail = optional;
        }
        if (tail >= 0) sequence.push_back(rule_symbol(tail));
    }

    Sequence parse_sequence(const std::string &owner, int depth) {
        const bool nested = depth > 0;
        Sequence sequence;
        size_t last = SIZE_MAX;  // where the last element's symbols start
        while (!at_end()) {
            const char c = peek();
            const size_t here = pos_;
            if (c == '"') {
                last = sequence.size();
                ++pos_;
                while (peek() != '"') {
                    if (at_end() || peek() == '\n' || peek() == '\r')
                        error_at(here, "unterminated string");
                    const uint32_t ch = parse_char();
                    count_symbols(1);
                    sequence.push_back(char_symbol(ch, ch));
                }
                ++pos_;
            } else if (c == '[') {
                last = sequence.size();
                count_symbols(1);
                sequence.push_back({.rule = -1, .chars = parse_class()});
            } else if (c == '.') {
                last = sequence.size();
                ++pos_;
                count_symbols(1);
                sequence.push_back({.rule = -1, .chars = {.ranges = {}, .negated = true}});
            } else if (is_name_char(c)) {
                last = sequence.size();
                const std::string_view name = parse_name();
                count_symbols(1);
                sequence.push_back(rule_symbol(rule_id(name, here)));
            } else if (c == '(') {
                if (depth + 1 > kMaxNesting)
                    error_at(here, "groups nest deeper than {}", kMaxNesting);
                last = sequence.size();
                ++pos_;
                skip_space(true);
                const int32_t group = synthesized_rule(owner);
                std::vector<Sequence> alternatives = parse_alternatives(owner, depth + 1);
                grammar_.rules[size_t(group)].alternatives = std::move(alternatives);
                if (peek() != ')') error_at(here, "unclosed '('");
                ++pos_;
                count_symbols(1);
                sequence.push_back(rule_symbol(group));
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (last == SIZE_MAX) error_at(here, "'{}' has nothing before it to repeat", c);
                int64_t min = c == '+' ? 1 : 0, max = c == '?' ? 1 : -1;
                ++pos_;
                if (c == '{') {
                    skip_space(false);
                    min = parse_count();
                    skip_space(false);
                    max = min;
                    if (peek() == ',') {
                        ++pos_;
                        skip_space(false);
                        max = peek() == '}' ? -1 : parse_count();
                        skip_space(false);
                    }
                    if (peek() != '}') error_at(here, "expected '}}' to close the repetition");
                    ++pos_;
                    if (max >= 0 && max < min) {
                        error_at(here, "repetition {{{},{}}}: the most is less than the least", min,
                                 max);
                    }
                }
                repeat(sequence, last, owner, min, max);
            } else {
                break;
            }
            skip_space(nested);
        }
        return sequence;
    }

    // A rule that can reach itself without reading a character would make the matcher expand it
    // forever: found as a cycle in the graph of references that can come first in an
    // alternative (after only rules that can match nothing).
    void check_left_recursion() {
        const auto &rules = grammar_.rules;
        const size_t n = rules.size();
        std::vector<bool> nullable(n, false);
        for (bool changed = true; changed;) {
            changed = false;
            for (size_t r = 0; r < n; ++r) {
                if (nullable[r]) continue;
                for (const Sequence &alt : rules[r].alternatives) {
                    const bool empty = std::all_of(alt.begin(), alt.end(), [&](const Symbol &s) {
                        return s.rule >= 0 && nullable[size_t(s.rule)];
                    });
                    if (empty) {
                        nullable[r] = true;
                        changed = true;
                        break;
                    }
                }
            }
        }
        std::vector<std::vector<int32_t>> first(n);
        for (size_t r = 0; r < n; ++r) {
            for (const Sequence &alt : rules[r].alternatives) {
                for (const Symbol &s : alt) {
                    if (s.rule < 0) break;
                    first[r].push_back(s.rule);
                    if (!nullable[size_t(s.rule)]) break;
                }
            }
        }
        // Depth-first, iteratively (a chain of rules may be long): 0 unseen, 1 on the path, 2 done.
        std::vector<uint8_t> state(n, 0);
        for (size_t start = 0; start < n; ++start) {
            if (state[start] != 0) continue;
            std::vector<std::pair<size_t, size_t>> path{{start, 0}};
            state[start] = 1;
            while (!path.empty()) {
                auto &[r, next] = path.back();
                if (next == first[r].size()) {
                    state[r] = 2;
                    path.pop_back();
                    continue;
                }
                const auto to = size_t(first[r][next++]);
                if (state[to] == 1) {
                    fail("grammar",
                         "rule '{}' can reach itself without reading a character (left "
                         "recursion, or a repetition of something that can be empty)",
                         rules[to].name);
                }
                if (state[to] == 0) {
                    state[to] = 1;
                    path.emplace_back(to, 0);
                }
            }
        }
    }

    std::string_view text_;
    size_t pos_ = 0;
    Grammar grammar_;
    std::map<std::string, int32_t, std::less<>> ids_;
    std::vector<bool> defined_;
    std::vector<size_t> first_use_;
    size_t symbols_ = 0;
};

}  // namespace

void CharSet::index() {
    indexed = false;
    ascii[0] = ascii[1] = 0;
    for (uint32_t c = 0; c < 128; ++c) ascii[c / 64] |= uint64_t(intersects(c, c)) << (c % 64);
    indexed = true;
}

bool CharSet::intersects(uint32_t lo, uint32_t hi) const {
    if (!negated) {
        return std::any_of(ranges.begin(), ranges.end(),
                           [&](const auto &r) { return r.first <= hi && lo <= r.second; });
    }
    // Some code point of [lo, hi] outside every range: walk up from lo past the ranges covering it.
    uint32_t c = lo;
    for (bool moved = true; moved && c <= hi;) {
        moved = false;
        for (const auto &[first, last] : ranges) {
            if (first <= c && c <= last) {
                if (last >= hi) return false;
                c = last + 1;
                moved = true;
            }
        }
    }
    return c <= hi;
}

Grammar parse_gbnf(std::string_view text, std::string_view root) {
    return Parser(text).parse(root);
}

std::string gbnf_literal(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (byte < 0x20) {
            out += fmt::format("\\x{:02X}", byte);
        } else {
            out += c;
        }
    }
    return out + "\"";
}

void embed_grammar(Grammar &outer, std::string_view rule, const Grammar &inner) {
    const auto placeholder = std::find_if(outer.rules.begin(), outer.rules.end(),
                                          [&](const Rule &r) { return r.name == rule; });
    if (placeholder == outer.rules.end()) fail("grammar", "no rule '{}' to embed into", rule);
    const auto at = size_t(placeholder - outer.rules.begin());
    const auto offset = int32_t(outer.rules.size());
    // Inner reaches no rule of outer, so no rule of inner reaches itself before reading a
    // character (checked when inner was parsed); outer's placeholders sit where outer has read
    // something already (a frame's opening text), which its callers keep true.
    for (Rule r : inner.rules) {
        r.name = fmt::format("{}/{}", rule, r.name);
        for (Sequence &sequence : r.alternatives) {
            for (Symbol &symbol : sequence) {
                if (symbol.rule >= 0) symbol.rule += offset;
            }
        }
        outer.rules.push_back(std::move(r));
    }
    outer.rules[at].alternatives = {Sequence{Symbol{.rule = inner.root + offset}}};
}

}  // namespace loom::engine::grammar
