#pragma once
// A JSON Schema `pattern` (an ECMA-262 regular expression) as GBNF: the text between a JSON
// string's quotes, written as JSON writes it ('"' as \", '\' as \\, a tab as \t), whose decoded
// value the pattern matches.
//
// Taken: literals, `.`, classes ([a-z], [^...], \d \w \s and their negations), groups ((...),
// (?:...), (?<name>...)), alternation, the quantifiers * + ? {n} {n,} {n,m} (lazy ones too: the
// same strings), and ^ / $ at the pattern's ends. A pattern without ^ matches anywhere in the
// string, so any characters may come before it (after it, without $), as JSON Schema says.
// Refused with loom::Error naming the construct: back-references, lookarounds, \b and \B, ^ or $
// inside the pattern, Unicode property classes, and counts above 10,000.
//
// Every string the GBNF allows matches the pattern; not every match is allowed, as the
// converter's other rules (json_schema.h): a negated class, `.` and \D \W \S never write
// a character JSON must escape, nor control characters.
#include <string>
#include <string_view>

namespace loom::engine::grammar {

// A GBNF expression (no rule of its own) for the string's content; it may use the rule `char`
// (one JSON string character) where the pattern is unanchored.
std::string regex_to_gbnf(std::string_view pattern);

}  // namespace loom::engine::grammar
