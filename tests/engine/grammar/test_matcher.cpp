// The matcher against independent references: std::regex for grammars of regular languages, and
// nlohmann::json's parser for the JSON grammar (grammars/json.gbnf), on every short string or on
// valid and mutated documents, read in pieces the way tokens come.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/matcher.h"
#include "loom/error.h"

namespace loom::engine::grammar {
namespace {

// Whether the matcher reads all of `text` in pieces of the given lengths (cycled) and can end.
bool matches(const Grammar &g, const std::string &text, const std::vector<size_t> &pieces = {1}) {
    Matcher m(g);
    size_t i = 0;
    for (size_t p = 0; i < text.size(); ++p) {
        const std::string piece = text.substr(i, pieces[p % pieces.size()]);
        if (!m.allows(piece)) return false;
        m.accept(piece);
        i += piece.size();
    }
    return m.can_end();
}

// Every string over `alphabet` of at most `max_length` characters.
std::vector<std::string> all_strings(const std::string &alphabet, size_t max_length) {
    std::vector<std::string> out{""};
    for (size_t begin = 0, length = 0; length < max_length; ++length) {
        const size_t end = out.size();
        for (size_t i = begin; i < end; ++i) {
            for (const char c : alphabet) out.push_back(out[i] + c);
        }
        begin = end;
    }
    return out;
}

TEST(GrammarMatcher, AgreesWithRegexOnEveryShortString) {
    const std::pair<const char *, const char *> cases[] = {
        {"root ::= \"a\" [bc]* (\"d\" | \"ab\")?", "a[bc]*(d|ab)?"},
        {"root ::= (\"ab\" | \"c\"){2,3} \"d\"*", "(ab|c){2,3}d*"},
        {"root ::= [^a]+ | \"a\" x\nx ::= \"b\" x | \"\"", "[^a]+|ab*"},
        {"root ::= \"a\"? \"b\"? \"c\"?", "a?b?c?"},
        {"root ::= . \"a\"{0,2} .{1,}", ".a{0,2}.+"},
        {"root ::= (\"a\" (\"b\" | \"c\")* \"d\")+", "(a(b|c)*d)+"},
        {"root ::= x{1,2} \"c\"\nx ::= [ab] [^c]", "([ab][^c]){1,2}c"},
        {"root ::= [a-c]{3}", "[a-c]{3}"},
    };
    const std::vector<std::string> strings = all_strings("abcd", 6);
    for (const auto &[gbnf, pattern] : cases) {
        const Grammar g = parse_gbnf(gbnf);
        const std::regex re(pattern);
        size_t accepted = 0;
        for (const std::string &s : strings) {
            const bool expected = std::regex_match(s, re);
            ASSERT_EQ(matches(g, s), expected) << gbnf << " on '" << s << "'";
            accepted += expected;
            if (!expected) continue;
            // A sentence's every prefix is allowed, piece by piece, whatever the cuts.
            ASSERT_TRUE(matches(g, s, {2, 1, 3}) && matches(g, s, {64})) << gbnf << " on " << s;
        }
        EXPECT_GT(accepted, 0u) << gbnf;
    }
}

TEST(GrammarMatcher, RefusesAPieceNoStackReads) {
    const Grammar g = parse_gbnf("root ::= \"ab\" | \"ac\"");
    Matcher m(g);
    EXPECT_TRUE(m.allows("a"));
    EXPECT_FALSE(m.allows("b"));
    EXPECT_FALSE(m.allows("abc"));
    EXPECT_FALSE(m.can_end());
    m.accept("a");
    EXPECT_TRUE(m.allows("c"));
    EXPECT_THROW(m.accept("d"), Error);
    EXPECT_TRUE(m.allows("b"));  // a refused piece changes nothing
    m.accept("b");
    EXPECT_TRUE(m.can_end());
    EXPECT_FALSE(m.allows("b"));
}

TEST(GrammarMatcher, CharactersCutBetweenPieces) {
    const Grammar g = parse_gbnf("root ::= [α-ω]+");
    const std::string text = "αβγ";  // two bytes each
    EXPECT_TRUE(matches(g, text, {1}));
    EXPECT_TRUE(matches(g, text, {3}));
    Matcher m(g);
    m.accept("\xce");  // the start of α..ω, and of Α..Ω too
    EXPECT_FALSE(m.can_end());
    EXPECT_FALSE(m.allows("\x91"));  // Α: not in [α-ω]
    EXPECT_TRUE(m.allows("\xb1"));
    EXPECT_FALSE(Matcher(g).allows("\xd0"));  // Cyrillic: no character of the set starts so
    EXPECT_FALSE(Matcher(g).allows("\xff"));  // never UTF-8
    EXPECT_FALSE(Matcher(g).allows("\xb1"));  // a stray continuation byte
}

TEST(GrammarMatcher, OnlyShortestFormsAreCharacters) {
    const Grammar g = parse_gbnf("root ::= [^a]*");
    const Matcher m(g);
    EXPECT_TRUE(m.allows("{}\xce\xb1\xf0\x9f\x98\x80"));
    EXPECT_FALSE(m.allows("\xc1\xbb"));          // '{' in two bytes
    EXPECT_FALSE(m.allows("\xe0\x81"));          // the start of an overlong form, cut
    EXPECT_FALSE(m.allows("\xed\xa0\x80"));      // a surrogate
    EXPECT_FALSE(m.allows("\xf4\x90\x80\x80"));  // past U+10FFFF
    EXPECT_FALSE(m.allows("\xf5"));
    EXPECT_TRUE(m.allows("\xf4\x8f"));  // U+10FC00.. U+10FFFF, cut
}

std::string json_grammar_text() {
    std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/grammars/json.gbnf");
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

nlohmann::json random_json(std::mt19937 &rng, int depth) {
    const int kind = int(rng() % (depth > 3 ? 5 : 7));
    switch (kind) {
        case 0:
            return nullptr;
        case 1:
            return rng() % 2 == 0;
        case 2:
            return int64_t(rng() % 200000) - 100000;
        case 3:
            return double(int64_t(rng() % 20000) - 10000) / 64.0;
        case 4: {
            std::string s;
            for (int i = int(rng() % 6); i > 0; --i) s += char(1 + rng() % 126);  // escapes too
            return s;
        }
        case 5: {
            nlohmann::json a = nlohmann::json::array();
            for (int i = int(rng() % 4); i > 0; --i) a.push_back(random_json(rng, depth + 1));
            return a;
        }
        default: {
            nlohmann::json o = nlohmann::json::object();
            for (int i = int(rng() % 4); i > 0; --i)
                o[std::string(1, char('a' + rng() % 26))] = random_json(rng, depth + 1);
            return o;
        }
    }
}

// Whether nlohmann::json parses `text`, where a number too large for a double ("1e999") counts
// as parsed: the grammar checks syntax, and JSON's syntax has no limit on exponents.
bool is_json_syntax(const std::string &text) {
    try {
        (void)nlohmann::json::parse(text);
        return true;
    } catch (const nlohmann::json::parse_error &) {
        return false;
    } catch (const nlohmann::json::out_of_range &e) {
        return std::string(e.what()).find("number overflow") != std::string::npos;
    }
}

TEST(GrammarMatcher, JsonGrammarAgreesWithAJsonParser) {
    const std::string text = json_grammar_text();
    ASSERT_FALSE(text.empty()) << "grammars/json.gbnf is missing";
    const Grammar g = parse_gbnf(text);
    std::mt19937 rng(7);
    const std::string noise = "{}[]\",:0123456789.-+eE \t\n\\uatrfln";
    size_t valid = 0, invalid = 0;
    for (int doc = 0; doc < 300; ++doc) {
        const nlohmann::json value = random_json(rng, 0);
        const std::string json = doc % 2 == 0 ? value.dump() : value.dump(2);
        ASSERT_TRUE(matches(g, json, {1, 3, 2})) << json;
        for (int m = 0; m < 8; ++m) {
            std::string mutated = json;
            const size_t at = rng() % (mutated.size() + 1);
            const char c = noise[rng() % noise.size()];
            switch (rng() % 3) {
                case 0:
                    mutated.insert(at, 1, c);
                    break;
                case 1:
                    if (at < mutated.size()) mutated.erase(at, 1);
                    break;
                default:
                    if (at < mutated.size()) mutated[at] = c;
            }
            const bool expected = is_json_syntax(mutated);
            ASSERT_EQ(matches(g, mutated, {2, 1}), expected) << "'" << mutated << "'";
            (expected ? valid : invalid) += 1;
        }
    }
    EXPECT_GT(invalid, 500u);  // the mutations test both answers
    EXPECT_GT(valid, 100u);
}

TEST(GrammarMatcher, AmbiguityPastTheLimitIsAnError) {
    // Each x goes on past an empty y four ways: 4^8 ways to reach the end of root.
    const Grammar g =
        parse_gbnf("root ::= x x x x x x x x\nx ::= y | y | y | y\ny ::= \"a\" | \"\"");
    EXPECT_THROW(
        {
            Matcher m(g);
            for (int i = 0; i < 8; ++i) m.accept("a");
        },
        Error);
    // Two ways each stay well inside the limit.
    const Grammar two = parse_gbnf("root ::= x x x x x x x x\nx ::= y | y\ny ::= \"a\" | \"\"");
    EXPECT_TRUE(matches(two, "aaaa"));
    EXPECT_FALSE(matches(two, "aaaaaaaaa"));
}

}  // namespace
}  // namespace loom::engine::grammar
