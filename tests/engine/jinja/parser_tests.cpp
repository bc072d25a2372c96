// The parser: Jinja2's precedence and statement forms (checked through what they render), and
// syntax errors that name the line.
#include "engine/jinja/parser.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/engine/jinja/test_support.h"

namespace loom::engine::jinja {
namespace {

using testing::render;

TEST(JinjaParser, Precedence) {
    EXPECT_EQ(render("{{ 1 + 2 * 3 }}"), "7");
    EXPECT_EQ(render("{{ 2 ** 3 ** 2 }}"), "64");  // ** is left-associative in Jinja
    EXPECT_EQ(render("{{ -2 ** 2 }}"), "4");       // unary minus binds tighter than **
    // ~ binds tighter than + (so 1 + (2 ~ 3) adds a string to an int), looser than *.
    EXPECT_NE(testing::render_error("{{ 1 + 2 ~ 3 }}").find("unsupported operand"),
              std::string::npos);
    EXPECT_EQ(render("{{ 'a' ~ 2 * 3 }}"), "a6");
    EXPECT_EQ(render("{{ not 1 == 2 }}"), "True");
    EXPECT_EQ(render("{{ 1 or 2 and 0 }}"), "1");
    EXPECT_EQ(render("{{ -3|abs }}"), "3");  // a filter applies to the negated value
    EXPECT_EQ(render("{{ 'x' if 1 > 2 else 'y' }}"), "y");
    EXPECT_EQ(render("{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}"), "TrueFalse");
}

TEST(JinjaParser, TestsTakeOneBareArgument) {
    EXPECT_EQ(render("{{ 9 is divisibleby 3 }}{{ 3 is not divisibleby 3 }}"), "TrueFalse");
    EXPECT_EQ(render("{{ x is defined and 1 }}"), "False");
}

TEST(JinjaParser, TuplesAndSubscripts) {
    EXPECT_EQ(render("{{ 1, 2 }}"), "(1, 2)");
    EXPECT_EQ(render("{% for a, b in [(1, 2)] %}{{ b }}{% endfor %}"), "2");
    EXPECT_EQ(render("{{ [1, 2, 3][1:] }}{{ 'abc'[::-1] }}"), "[2, 3]cba");
}

TEST(JinjaParser, StatementForms) {
    EXPECT_EQ(render("{% if 0 %}a{% elif 1 %}b{% else %}c{% endif %}"), "b");
    EXPECT_EQ(render("{% for x in [1, 2, 3] if x > 1 %}{{ x }}{% else %}none{% endfor %}"), "23");
    EXPECT_EQ(render("{% set x %}in{% endset %}{{ x }}"), "in");
    EXPECT_EQ(render("{% macro m(a, b=2) %}{{ a + b }}{% endmacro %}{{ m(1) }}"), "3");
    EXPECT_EQ(render("{% filter upper %}x{% endfilter %}"), "X");
    EXPECT_EQ(render("{% generation %}g{% endgeneration %}"), "g");
}

std::string syntax_error_of(const std::string &source) {
    try {
        parse(source);
    } catch (const TemplateError &e) {
        return e.what();
    }
    return "";
}

TEST(JinjaParser, ErrorsNameTheLine) {
    EXPECT_EQ(syntax_error_of("a\n{% if x %}\nb"),
              "[jinja] line 3, column 2: unexpected end of template: Jinja was looking for "
              "'elif' or 'else' or 'endif'");
    EXPECT_EQ(syntax_error_of("{% endif %}"),
              "[jinja] line 1, column 4: encountered unknown tag 'endif'");
    EXPECT_EQ(syntax_error_of("\n\n{{ 1 + }}"),
              "[jinja] line 3, column 8: unexpected 'end of print statement'");
    EXPECT_EQ(syntax_error_of("{% break %}"),
              "[jinja] line 1, column 4: 'break' outside of a loop");
    EXPECT_EQ(syntax_error_of("{% include 'x' %}"),
              "[jinja] line 1, column 4: encountered unknown tag 'include'");
    EXPECT_EQ(syntax_error_of("{% macro m(a=1, b) %}{% endmacro %}"),
              "[jinja] line 1, column 18: non-default argument follows default argument");
}

TEST(JinjaParser, DeepNestingIsAnErrorNotACrash) {
    const std::string deep =
        "{{ " + std::string(10000, '(') + "1" + std::string(10000, ')') + " }}";
    EXPECT_NE(syntax_error_of(deep).find("nests more than 128 levels"), std::string::npos);
    std::string ifs;
    for (int i = 0; i < 300; ++i) ifs += "{% if 1 %}";
    EXPECT_NE(syntax_error_of(ifs).find("nests more than 128 levels"), std::string::npos);
    EXPECT_NE(syntax_error_of("{{ " + std::string(5000, '-') + "1 }}").find("nests more"),
              std::string::npos);
}

}  // namespace
}  // namespace loom::engine::jinja
