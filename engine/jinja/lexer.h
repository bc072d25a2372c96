#pragma once
// The template source as tokens, the way Jinja2's lexer cuts it with transformers' settings
// (trim_blocks and lstrip_blocks on, keep_trailing_newline off):
//   * "\r\n" and "\r" become "\n", and one trailing newline of the source is dropped;
//   * text between tags is a data token, after whitespace control: "{%-", "{{-", "{#-" strip the
//     whitespace before the tag, "-%}", "-}}", "-#}" the whitespace after it; trim_blocks drops
//     the newline right after "%}" and "#}"; lstrip_blocks drops spaces and tabs between the start
//     of a line and "{%" or "{#" ("{%+" keeps them, "+%}" keeps the newline);
//   * comments vanish, {% raw %}...{% endraw %} is data;
//   * inside a tag: names, strings (escapes decoded), integers, floats and operators; a "}}" or
//     "%}" inside brackets belongs to the expression, not the end of the tag.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/jinja/error.h"

namespace loom::engine::jinja {

enum class TokenType {
    data,            // template text (text: the bytes)
    variable_begin,  // {{
    variable_end,    // }}
    block_begin,     // {%
    block_end,       // %}
    name,            // text: the identifier (keywords too: if, for, and, true, none...)
    string,          // text: the decoded value
    integer,         // integer
    floating,        // number
    op,              // text: "+", "//", "==", "(", ...
    eof,
};

struct Token {
    TokenType type;
    std::string text;
    int64_t integer = 0;
    double number = 0;
    SourceLocation at;
};

// The tokens, ending in eof. TemplateError for an unterminated comment, raw block, tag or string,
// an unexpected character or a bracket that does not match.
std::vector<Token> tokenize(std::string_view source);

}  // namespace loom::engine::jinja
