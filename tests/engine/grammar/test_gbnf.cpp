// The GBNF parser: what a grammar becomes, and the errors that name where a grammar is wrong.
#include <gtest/gtest.h>

#include <string>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/matcher.h"
#include "loom/error.h"

namespace loom::engine::grammar {
namespace {

// The message parse_gbnf throws for `text`, or "" when it parses.
std::string error_of(const std::string &text) {
    try {
        parse_gbnf(text);
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

TEST(Gbnf, RulesBecomeSequencesOfCharactersAndReferences) {
    const Grammar g = parse_gbnf(
        "# a comment\n"
        "root ::= \"ab\" item | [x-z^] # another\n"
        "item ::= [^0-9]\n");
    ASSERT_EQ(g.rules.size(), 2u);
    const Rule &root = g.rules[size_t(g.root)];
    EXPECT_EQ(root.name, "root");
    ASSERT_EQ(root.alternatives.size(), 2u);
    const Sequence &first = root.alternatives[0];
    ASSERT_EQ(first.size(), 3u);  // 'a', 'b', item
    EXPECT_TRUE(first[0].chars.contains('a'));
    EXPECT_FALSE(first[0].chars.contains('b'));
    EXPECT_EQ(g.rules[size_t(first[2].rule)].name, "item");
    const CharSet &xz = root.alternatives[1][0].chars;
    EXPECT_TRUE(xz.contains('y'));
    EXPECT_TRUE(xz.contains('^'));
    EXPECT_FALSE(xz.contains('w'));
    const CharSet &not_digit = g.rules[size_t(first[2].rule)].alternatives[0][0].chars;
    EXPECT_TRUE(not_digit.contains('a'));
    EXPECT_FALSE(not_digit.contains('5'));
}

TEST(Gbnf, RulesGoOnAfterABarOrInsideParentheses) {
    const Grammar g = parse_gbnf("root ::= \"a\" |\n  \"b\" | (\n \"c\"\n \"d\")\n");
    EXPECT_EQ(g.rules[size_t(g.root)].alternatives.size(), 3u);
}

TEST(Gbnf, EscapesAndUtf8) {
    const Grammar g = parse_gbnf("root ::= \"\\x41\\u03B1\\U0001F600\\n\\\"\" \"é\"\n");
    const Sequence &s = g.rules[size_t(g.root)].alternatives[0];
    ASSERT_EQ(s.size(), 6u);
    const uint32_t expected[] = {0x41, 0x3B1, 0x1F600, '\n', '"', 0xE9};
    for (size_t i = 0; i < 6; ++i) EXPECT_TRUE(s[i].chars.contains(expected[i])) << i;
}

TEST(Gbnf, NegatedSetsIntersectWhereARangeIsUncovered) {
    const CharSet set{.ranges = {{'a', 'c'}, {'e', 'f'}}, .negated = true};
    EXPECT_FALSE(set.intersects('a', 'c'));
    EXPECT_TRUE(set.intersects('a', 'd'));  // d
    EXPECT_FALSE(set.intersects('e', 'f'));
    EXPECT_TRUE(set.intersects('b', 'z'));
    const CharSet any{.ranges = {}, .negated = true};
    EXPECT_TRUE(any.contains(0x10FFFF));
}

TEST(Gbnf, ErrorsNameTheLineAndColumn) {
    EXPECT_EQ(error_of("root ::= foo\n"), "[grammar] line 1, column 10: undefined rule 'foo'");
    EXPECT_EQ(error_of("root ::= \"abc\n"), "[grammar] line 1, column 10: unterminated string");
    EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\"\n"),
              "[grammar] line 2, column 1: rule 'root' is defined twice");
    EXPECT_EQ(error_of("root = \"a\"\n"),
              "[grammar] line 1, column 6: expected '::=' after 'root'");
    EXPECT_EQ(error_of("root ::= \"\\q\"\n"), "[grammar] line 1, column 11: unknown escape '\\q'");
    EXPECT_EQ(error_of("root ::= [ab"),
              "[grammar] line 1, column 10: unterminated character class");
    EXPECT_EQ(error_of("root ::= [z-a]\n"),
              "[grammar] line 1, column 11: the range U+7A-U+61 is reversed");
    EXPECT_EQ(error_of("root ::= *\n"),
              "[grammar] line 1, column 10: '*' has nothing before it to repeat");
    EXPECT_EQ(error_of("root ::= (\"a\"\n"), "[grammar] line 1, column 10: unclosed '('");
    EXPECT_EQ(error_of("root ::= \"a\"{3,2}\n"),
              "[grammar] line 1, column 13: repetition {3,2}: the most is less than the least");
    EXPECT_EQ(error_of("root ::= \"a\"{100000}\n"),
              "[grammar] line 1, column 14: repetition counts go up to 10000");
    EXPECT_EQ(error_of("root ::= \"a\" )\n"),
              "[grammar] line 1, column 14: unexpected ')' in rule 'root'");
    EXPECT_EQ(error_of("# only α comment\n  é ::= \"a\"\n"),
              "[grammar] line 2, column 3: expected a rule name (letters, digits, '-', '_')");
    EXPECT_EQ(error_of("item ::= \"a\"\n"),
              "[grammar] the grammar has no rule 'root' to start from");
    EXPECT_EQ(error_of(""), "[grammar] the grammar has no rule 'root' to start from");
}

TEST(Gbnf, LeftRecursionIsRefused) {
    const std::string message =
        " can reach itself without reading a character (left recursion, or a repetition of "
        "something that can be empty)";
    EXPECT_EQ(error_of("root ::= root \"a\" | \"b\"\n"), "[grammar] rule 'root'" + message);
    EXPECT_EQ(error_of("root ::= x\nx ::= e y\ny ::= x \"a\"\ne ::= \"\" | \"b\"\n"),
              "[grammar] rule 'x'" + message);
    EXPECT_NE(error_of("root ::= (\"a\"?)*\n"), "");
    EXPECT_EQ(error_of("root ::= \"a\" root | \"\"\n"), "");  // right recursion is fine
}

TEST(Gbnf, HostileSizesAreRefused) {
    EXPECT_EQ(error_of("root ::= \"" + std::string(200, 'a') + "\"{10000}\n"),
              "[grammar] line 1, column 219: the grammar grows past 1048576 symbols (repetition "
              "counts multiply)");
    EXPECT_NE(
        error_of("root ::= " + std::string(300, '(') + "\"a\"" + std::string(300, ')') + "\n"), "");
    EXPECT_EQ(
        error_of("root ::= " + std::string(200, '(') + "\"a\"" + std::string(200, ')') + "\n"), "");
}

// Two grammars with rules of the same names, one put into the other's placeholder: the sentences
// are the outer's with the inner's in its place, each name still meaning its own grammar's rule.
TEST(Gbnf, EmbedKeepsEachGrammarsRules) {
    Grammar outer = parse_gbnf("root ::= \"<\" slot item \">\"\nslot ::= \"?\"\nitem ::= \"o\"\n");
    const Grammar inner = parse_gbnf("root ::= item item\nitem ::= [0-9]\n");
    embed_grammar(outer, "slot", inner);
    const auto whole = [&](const std::string &text) {
        Matcher m(outer);
        if (!m.allows(text)) return false;
        m.accept(text);
        return m.can_end();
    };
    EXPECT_TRUE(whole("<42o>"));
    EXPECT_FALSE(whole("<?o>"));    // the placeholder is gone
    EXPECT_FALSE(whole("<4o>"));    // inner's item is a digit, twice
    EXPECT_FALSE(whole("<42oo>"));  // outer's item is one "o"
    EXPECT_FALSE(whole("<4oo>"));
    EXPECT_EQ(outer.rules.back().name.rfind("slot/", 0), 0u);
    EXPECT_THROW(embed_grammar(outer, "nope", inner), Error);
}

}  // namespace
}  // namespace loom::engine::grammar
