// The lexer: token kinds, decoded literals, whitespace control as transformers configures Jinja2
// (trim_blocks, lstrip_blocks), and errors that name the line and column.
#include "engine/jinja/lexer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace loom::engine::jinja {
namespace {

// The data tokens' texts, joined by '|'.
std::string data_of(const std::string &source) {
    std::string out;
    for (const Token &t : tokenize(source)) {
        if (t.type == TokenType::data) out += (out.empty() ? "" : "|") + t.text;
    }
    return out;
}

TEST(JinjaLexer, TagTokens) {
    const std::vector<Token> tokens = tokenize("a{{ x.y[0] + 'q' }}b{% if n >= 2 %}");
    std::vector<std::string> texts;
    for (const Token &t : tokens) texts.push_back(t.text);
    const std::vector<std::string> want = {"a",  "{{", "x",  ".",  "y", "[",  "0", "]",  "+", "q",
                                           "}}", "b",  "{%", "if", "n", ">=", "2", "%}", ""};
    EXPECT_EQ(texts, want);
    EXPECT_EQ(tokens[9].type, TokenType::string);
    EXPECT_EQ(tokens[6].type, TokenType::integer);
    EXPECT_EQ(tokens.back().type, TokenType::eof);
}

TEST(JinjaLexer, Numbers) {
    const std::vector<Token> t = tokenize("{{ 1_000 0x1F 0o17 0b11 2.5 1e3 7 }}");
    EXPECT_EQ(t[1].integer, 1000);
    EXPECT_EQ(t[2].integer, 31);
    EXPECT_EQ(t[3].integer, 15);
    EXPECT_EQ(t[4].integer, 3);
    EXPECT_EQ(t[5].type, TokenType::floating);
    EXPECT_DOUBLE_EQ(t[5].number, 2.5);
    EXPECT_DOUBLE_EQ(t[6].number, 1000.0);
    EXPECT_EQ(t[7].integer, 7);
    EXPECT_THROW(tokenize("{{ 99999999999999999999 }}"), TemplateError);
}

TEST(JinjaLexer, StringEscapes) {
    const std::vector<Token> t = tokenize(R"({{ 'a\nb' "q\"" '\u00e9' '\x41' '\d' }})");
    EXPECT_EQ(t[1].text, "a\nb");
    EXPECT_EQ(t[2].text, "q\"");
    EXPECT_EQ(t[3].text, "\xc3\xa9");
    EXPECT_EQ(t[4].text, "A");
    EXPECT_EQ(t[5].text, "\\d");  // an unknown escape stays as written
}

TEST(JinjaLexer, BracesInsideAnExpressionDoNotEndTheTag) {
    const std::vector<Token> t = tokenize("{{ {'a': {'b': 1}} }}x");
    EXPECT_EQ(t[t.size() - 3].type, TokenType::variable_end);
    EXPECT_EQ(t[t.size() - 2].text, "x");
}

TEST(JinjaLexer, TrimBlocksDropsOneNewlineAfterBlockTags) {
    EXPECT_EQ(data_of("{% if x %}\nA\n{% endif %}\n\nB"), "A\n|\nB");
    // Not after a variable tag.
    EXPECT_EQ(data_of("{{ x }}\nA"), "\nA");
    // After a comment too.
    EXPECT_EQ(data_of("{# c #}\nA"), "A");
}

TEST(JinjaLexer, LstripBlocksStripsIndentationBeforeBlockTags) {
    EXPECT_EQ(data_of("A\n    {% if x %}B"), "A\n|B");
    EXPECT_EQ(data_of("    {% if x %}B"), "B");              // at the start of the template too
    EXPECT_EQ(data_of("A\n  x {% if x %}B"), "A\n  x |B");   // not after other text
    EXPECT_EQ(data_of("A\n    {{ x }}"), "A\n    ");         // not before variables
    EXPECT_EQ(data_of("A\n    {%+ if x %}B"), "A\n    |B");  // "+" keeps it
}

TEST(JinjaLexer, MinusStripsAllWhitespace) {
    EXPECT_EQ(data_of("A \n\t {%- if x -%} \n B"), "A|B");
    EXPECT_EQ(data_of("A  {{- x -}}  B"), "A|B");
    EXPECT_EQ(data_of("A  {#- c -#}  B"), "A|B");
}

TEST(JinjaLexer, PlusKeepsTheNewlineAfterATag) {
    EXPECT_EQ(data_of("{% if x +%}\nA"), "\nA");
}

TEST(JinjaLexer, NewlinesNormalisedAndOneTrailingNewlineDropped) {
    EXPECT_EQ(data_of("a\r\nb\rc\n"), "a\nb\nc");
    EXPECT_EQ(data_of("a\n\n"), "a\n");
}

TEST(JinjaLexer, RawBlocksAreData) {
    EXPECT_EQ(data_of("{% raw %}{{ x }}{% endraw %}"), "{{ x }}");
    EXPECT_EQ(data_of("{%- raw -%}  a  {%- endraw -%}  b"), "a|b");
}

TEST(JinjaLexer, ErrorsNameTheLineAndColumn) {
    try {
        tokenize("line one\n  {{ x ! y }}");
        FAIL() << "no error";
    } catch (const TemplateError &e) {
        EXPECT_EQ(e.line(), 2);
        EXPECT_EQ(e.column(), 8);
        EXPECT_NE(std::string(e.what()).find("[jinja] line 2, column 8: unexpected char '!'"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(tokenize("{# never closed"), TemplateError);
    EXPECT_THROW(tokenize("{% raw %} never closed"), TemplateError);
    EXPECT_THROW(tokenize("{{ 'never closed }}"), TemplateError);
    EXPECT_THROW(tokenize("{{ x "), TemplateError);
    EXPECT_THROW(tokenize("{{ (x] }}"), TemplateError);
}

}  // namespace
}  // namespace loom::engine::jinja
