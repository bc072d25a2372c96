#pragma once
// GBNF, llama.cpp's grammar format, parsed into rules of plain sequences:
//
//   root   ::= "{" ws pair ("," ws pair)* "}"   # a comment
//   pair   ::= [a-z]+ ws ":" ws [0-9]{1,3}
//   ws     ::= [ \t\n]*
//
// A rule is alternatives separated by "|", each a sequence of string literals ("..."), character
// classes ([...], [^...]), any character (.), rule names, and parenthesised groups, each
// optionally followed by *, +, ?, {m}, {m,} or {m,n}. A rule ends at the end of its line, except
// after "|" or inside parentheses. Groups and repetitions become rules of their own here, so what
// the matcher (matcher.h) walks is only characters and references. Grammars are checked when
// parsed: every rule referenced is defined, the root exists, and no rule reaches itself before
// reading a character (the matcher would expand it forever).
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::engine::grammar {

// Code points in the inclusive ranges, or, negated, every code point outside them.
struct CharSet {
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    bool negated = false;
    // Which ASCII characters are in the set, bit c of ascii[c / 64], where `indexed` (index()):
    // most characters a grammar reads are ASCII, and a whole vocabulary is checked against it.
    bool indexed = false;
    uint64_t ascii[2] = {0, 0};

    bool contains(uint32_t c) const {
        if (c < 128 && indexed) return (ascii[c / 64] >> (c % 64) & 1) != 0;
        return intersects(c, c);
    }
    // Whether some code point of [lo, hi] is in the set.
    bool intersects(uint32_t lo, uint32_t hi) const;
    void index();
};

// One step of a sequence: a character of `chars`, or (rule >= 0) a sentence of that rule.
struct Symbol {
    int32_t rule = -1;
    CharSet chars;
};

using Sequence = std::vector<Symbol>;

struct Rule {
    std::string name;  // as written, or "<rule>_<n>" for a group or repetition made from <rule>
    std::vector<Sequence> alternatives;
};

struct Grammar {
    std::vector<Rule> rules;
    int32_t root = 0;
};

// Throws loom::Error("[grammar] line L, column C: ...") for text that is not a grammar, and
// for a grammar that references an undefined rule, lacks `root`, or is left-recursive.
Grammar parse_gbnf(std::string_view text, std::string_view root = "root");

// A GBNF string literal of the bytes of `text`: quotes and backslashes escaped, control bytes as
// \xHH, everything else (UTF-8 included) as it is. For grammars written by code.
std::string gbnf_literal(std::string_view text);

// Makes rule `rule` of `outer` (a placeholder) stand for the sentences of `inner`: inner's rules
// are added to outer's (their names prefixed with "<rule>/"), and the placeholder's one
// alternative becomes inner's root. A grammar written around parts converted on their own (a
// tool call's frame around each tool's JSON Schema) without clashes between their rule names.
// Left recursion is checked when each is parsed, not here: no rule of outer may reach itself
// through the placeholder before reading a character. Throws loom::Error when outer has no such
// rule.
void embed_grammar(Grammar &outer, std::string_view rule, const Grammar &inner);

}  // namespace loom::engine::grammar
