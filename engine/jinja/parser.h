#pragma once
// Tokens into a syntax tree, with Jinja2's grammar and precedence (lowest first):
//   a if c else b  |  or  |  and  |  not  |  == != < <= > >= in, not in (chained)  |  + -  |  ~
//   |  * / // %  |  **  |  unary - +  |  postfix .name [index] (call) then | filter, is test.
// Statements: if/elif/else, for (targets, `if` filter, else, recursive), set (= or block),
// macro, call, filter, with, print, generation, break, continue.
#include <string_view>

#include "engine/jinja/ast.h"

namespace loom::engine::jinja {

// How deep expressions and statements may nest (each level is a frame of the parser and later of
// the interpreter).
inline constexpr int kMaxSyntaxDepth = 128;

// TemplateError naming the line and column for any syntax error, an unknown tag or filter
// keyword misuse, or nesting past kMaxSyntaxDepth.
Program parse(std::string_view source);

}  // namespace loom::engine::jinja
