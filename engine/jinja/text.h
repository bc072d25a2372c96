#pragma once
// Python's str semantics over UTF-8 bytes: strings are sequences of code points (len, indexes and
// slices count code points), whitespace is str.isspace()'s, numbers print as Python prints them.
// A byte that is not part of well-formed UTF-8 counts as one code point of its own, so any bytes
// are a string and come back unchanged.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::engine::jinja {

// The byte offset where each code point starts, plus s.size() at the end (so code point i is
// s.substr(at[i], at[i + 1] - at[i])).
std::vector<size_t> code_point_offsets(std::string_view s);
size_t code_point_count(std::string_view s);
bool is_ascii(std::string_view s);

// The code point at `at` and its length in bytes (an ill-formed byte: itself, length 1).
struct CodePoint {
    uint32_t value;
    size_t length;
};
CodePoint decode_code_point(std::string_view s, size_t at);
void append_utf8(std::string &out, uint32_t code_point);

// str.isspace() of one code point.
bool is_space(uint32_t code_point);

// str.strip / lstrip / rstrip: whitespace when `chars` is null, else the code points of *chars.
std::string strip(std::string_view s, const std::string *chars, bool left, bool right);

// ASCII letters only change case; other code points stay as they are.
std::string to_upper(std::string_view s);
std::string to_lower(std::string_view s);
// str.title(): words (runs of letters) start upper case, the rest lower.
std::string to_title(std::string_view s);
// str.capitalize(): the first code point upper case, the rest lower.
std::string capitalize(std::string_view s);

// str.split() (no separator: runs of whitespace, empty parts dropped) and str.split(sep),
// at most `max_split` times (< 0: no limit); rsplit when `from_right`.
std::vector<std::string> split(std::string_view s, const std::string *sep, int64_t max_split,
                               bool from_right);
// str.replace(old, new, count); count < 0: every occurrence.
std::string replace(std::string_view s, std::string_view old, std::string_view replacement,
                    int64_t count);

// Python's repr of a float: shortest round-trip digits, "1.0", "1e-05", "1e+16", "inf", "nan".
std::string float_repr(double x);
// Python's repr of a str: single quotes unless the text holds ' and no ", escapes for \\, the
// quote, \n, \r, \t and other control characters.
std::string string_repr(std::string_view s);

}  // namespace loom::engine::jinja
