// JSON Schema to GBNF. The reference is the JSON-Schema-Test-Suite (Debian's
// json-schema-test-suite: schemas with documents marked valid or not by the specification's
// authors): every document the grammar of a schema accepts must be one the suite marks valid.
// Beside it, the form the grammar gives (json_schema.h) on documents written here, random
// sentences of the grammars (each one must parse as JSON), and the errors.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <string>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/json_schema.h"
#include "engine/grammar/matcher.h"
#include "loom/error.h"

namespace loom::engine::grammar {
namespace {

using ordered = nlohmann::ordered_json;

bool accepts(const Grammar &grammar, std::string_view text) {
    Matcher matcher(grammar);
    if (!matcher.allows(text)) return false;
    matcher.accept(text);
    return matcher.can_end();
}

Grammar grammar_of(const std::string &schema) {
    return parse_gbnf(json_schema_to_gbnf(schema));
}

std::string error_of(const std::string &schema) {
    try {
        grammar_of(schema);
    } catch (const Error &e) {
        return e.what();
    }
    return "";
}

const std::filesystem::path kSuite = "/usr/share/json-schema-test-suite/tests/draft4";

TEST(JsonSchema, EveryDocumentTheGrammarAcceptsIsValidInTheTestSuite) {
    ASSERT_TRUE(std::filesystem::is_directory(kSuite))
        << kSuite << " is missing: make setup installs Debian's json-schema-test-suite";
    int converted = 0, refused = 0, accepted_valid = 0, rejected_invalid = 0;
    for (const auto &entry : std::filesystem::directory_iterator(kSuite)) {
        if (entry.path().extension() != ".json") continue;
        std::ifstream in(entry.path());
        const ordered groups = ordered::parse(in);
        for (const ordered &group : groups) {
            const std::string where =
                entry.path().filename().string() + ": " + group["description"].get<std::string>();
            Grammar grammar;
            try {
                grammar = grammar_of(group["schema"].dump());
            } catch (const Error &e) {
                ++refused;
                EXPECT_NE(std::string(e.what()).find("[json-schema] at "), std::string::npos)
                    << where << ": " << e.what();
                continue;
            }
            ++converted;
            for (const ordered &test : group["tests"]) {
                const std::string text = test["data"].dump();
                const bool valid = test["valid"].get<bool>();
                if (accepts(grammar, text)) {
                    EXPECT_TRUE(valid) << where << " / " << test["description"].get<std::string>()
                                       << ": the grammar accepts the invalid " << text;
                    accepted_valid += valid;
                } else {
                    rejected_invalid += !valid;
                }
            }
        }
    }
    // Not vacuous: of the 84 schemas, 35 convert (the rest use keywords the converter refuses,
    // or remote references); their grammars take 43 of the valid documents as the suite writes
    // them (compact, keys in its order) and reject 73 invalid ones.
    EXPECT_GE(converted, 35);
    EXPECT_GE(accepted_valid, 43);
    EXPECT_GE(rejected_invalid, 73);
    std::printf(
        "suite: %d schemas converted, %d refused; %d valid documents accepted, %d invalid "
        "rejected\n",
        converted, refused, accepted_valid, rejected_invalid);
}

TEST(JsonSchema, AnObjectGivesRequiredPropertiesFirstThenOptionalOnesInSchemaOrder) {
    const Grammar g = grammar_of(R"({
        "type": "object",
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            "name": {"type": "string", "minLength": 1},
            "age": {"type": "integer"},
            "score": {"type": "number"}
        },
        "required": ["name", "age"]
    })");
    for (const char *text : {
             R"({"name":"Ann","age":31})",
             R"({"name": "Ann", "age": -7, "tags": ["a", "b"]})",
             R"({"name":"Ann","age":0,"score":1.5e-3})",
             R"({"name":"Ann","age":0,"tags":[],"score":2})",
             "{\n  \"name\": \"Ann\",\n  \"age\": 31\n}",
             R"({"name":"Ann","age":31} )",
         }) {
        EXPECT_TRUE(accepts(g, text)) << text;
    }
    for (const char *text : {
             R"({"age":31,"name":"Ann"})",                      // the required ones in schema order
             R"({"name":"Ann"})",                               // age is required
             R"({"name":"","age":31})",                         // minLength 1
             R"({"name":"Ann","age":3.5})",                     // not an integer
             R"({"name":"Ann","age":01})",                      // not JSON
             R"({"name":"Ann","age":1,"tags":["a","b","c"]})",  // maxItems 2
             R"({"name":"Ann","age":1,"score":2,"tags":[]})",   // optional ones in schema order
             R"({"name":"Ann","age":1,"nick":"A"})",            // no other keys
             R"({"name":"Ann","age":1,})",
             R"({"name":"Ann","age":12345678901234567})",  // 17 digits
         }) {
        EXPECT_FALSE(accepts(g, text)) << text;
    }
}

// An empty "properties" closes the object, as llama.cpp reads it; no "properties" leaves it open.
TEST(JsonSchema, EmptyPropertiesIsTheEmptyObject) {
    const Grammar none = grammar_of(R"({"type": "object", "properties": {}})");
    EXPECT_TRUE(accepts(none, "{}"));
    EXPECT_FALSE(accepts(none, R"({"a": 1})"));
    const Grammar open = grammar_of(R"({"type": "object"})");
    EXPECT_TRUE(accepts(open, R"({"a": 1})"));
    const Grammar map =
        grammar_of(R"({"type": "object", "properties": {}, "additionalProperties": true})");
    EXPECT_TRUE(accepts(map, R"({"a": 1})"));
}

TEST(JsonSchema, OptionalPropertiesAreAnyOrderedSubset) {
    const Grammar g = grammar_of(
        R"({"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}})");
    for (const char *text : {"{}", R"({"a":1})", R"({"b":1})", R"({"c":1})", R"({"a":1,"c":3})",
                             R"({"b":2,"c":3})", R"({"a":1,"b":2,"c":3})"}) {
        EXPECT_TRUE(accepts(g, text)) << text;
    }
    for (const char *text :
         {R"({"c":3,"a":1})", R"({"a":1,"a":1})", R"({,"a":1})", R"({"a":1,})"}) {
        EXPECT_FALSE(accepts(g, text)) << text;
    }
}

TEST(JsonSchema, ReferencesMayBeRecursive) {
    const Grammar g = grammar_of(R"({
        "$defs": {"node": {"type": "object",
                           "properties": {"v": {"type": "integer"},
                                          "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
                           "required": ["v", "kids"]}},
        "$ref": "#/$defs/node"
    })");
    EXPECT_TRUE(accepts(g, R"({"v":1,"kids":[]})"));
    EXPECT_TRUE(
        accepts(g, R"({"v":1,"kids":[{"v":2,"kids":[{"v":3,"kids":[]}]},{"v":4,"kids":[]}]})"));
    EXPECT_FALSE(accepts(g, R"({"v":1,"kids":[{"v":2}]})"));
}

TEST(JsonSchema, ValuesUnionsStringsAndFormats) {
    const Grammar e =
        grammar_of(R"({"enum": ["red", 1, null, {"k": [true]}], "type": ["string", "object"]})");
    EXPECT_TRUE(accepts(e, R"("red")"));
    EXPECT_TRUE(accepts(e, R"({"k":[true]})"));
    EXPECT_FALSE(accepts(e, "1"));  // not of the schema's types
    EXPECT_FALSE(accepts(e, "null"));

    const Grammar c = grammar_of(R"({"const": "a\"b\\c\n"})");
    EXPECT_TRUE(accepts(c, R"("a\"b\\c\n")"));
    EXPECT_FALSE(accepts(c, R"("a\"b\\c")"));

    const Grammar u = grammar_of(
        R"({"anyOf": [{"type": "string", "maxLength": 2}, {"type": "null"}], "title": "x"})");
    EXPECT_TRUE(accepts(u, "null"));
    EXPECT_TRUE(accepts(u, R"("é\u00e9")"));  // two characters: lengths count code points
    EXPECT_FALSE(accepts(u, R"("abc")"));
    EXPECT_FALSE(accepts(u, R"("\ud83d")"));  // a lone surrogate, which parsers refuse

    const Grammar o = grammar_of(R"({"oneOf": [{"type": "string"}, {"type": "boolean"}]})");
    EXPECT_TRUE(accepts(o, "false"));

    const Grammar t = grammar_of(R"({"type": ["integer", "null"]})");
    EXPECT_TRUE(accepts(t, "-12"));
    EXPECT_TRUE(accepts(t, "null"));
    EXPECT_FALSE(accepts(t, "1.5"));

    const Grammar d = grammar_of(
        R"({"type": "array", "prefixItems": [{"type": "string", "format": "date"}, {"type": "string", "format": "uuid"}]})");
    EXPECT_TRUE(accepts(d, R"(["2026-12-04","123e4567-e89b-12d3-a456-426614174000"])"));
    EXPECT_FALSE(accepts(d, R"(["2026-13-04","123e4567-e89b-12d3-a456-426614174000"])"));
    EXPECT_FALSE(accepts(d, R"(["2026-12-04"])"));

    const Grammar m =
        grammar_of(R"({"type": "object", "additionalProperties": {"type": "integer"}})");
    EXPECT_TRUE(accepts(m, R"({"x":1,"y z":2})"));
    EXPECT_FALSE(accepts(m, R"({"x":"1"})"));

    const Grammar any = grammar_of("{}");
    EXPECT_TRUE(accepts(any, R"([1,{"a":null},"s",true])"));

    const Grammar ws = grammar_of(R"({"type": "array", "items": {"type": "integer"}})");
    EXPECT_TRUE(accepts(ws, "[\n" + std::string(20, ' ') + "1]"));
    EXPECT_FALSE(accepts(ws, "[\n" + std::string(21, ' ') + "1]"));  // whitespace is bounded
}

TEST(JsonSchema, BoundsOnIntegersInEachDraftsForm) {
    const Grammar inclusive = grammar_of(R"({"type": "integer", "minimum": -2, "maximum": 10})");
    const Grammar draft4 = grammar_of(
        R"({"type": "integer", "minimum": -2, "exclusiveMinimum": true, "maximum": 10.5})");
    const Grammar draft6 =
        grammar_of(R"({"type": "integer", "exclusiveMinimum": -2.5, "exclusiveMaximum": 10})");
    for (int v = -20; v <= 20; ++v) {
        const std::string text = std::to_string(v);
        EXPECT_EQ(accepts(inclusive, text), v >= -2 && v <= 10) << text;
        EXPECT_EQ(accepts(draft4, text), v >= -1 && v <= 10) << text;
        EXPECT_EQ(accepts(draft6, text), v >= -2 && v <= 9) << text;
    }
    const Grammar non_negative = grammar_of(R"({"type": "number", "minimum": 0})");
    EXPECT_TRUE(accepts(non_negative, "0"));
    EXPECT_TRUE(accepts(non_negative, "3.25e-2"));
    EXPECT_FALSE(accepts(non_negative, "-1"));
    EXPECT_FALSE(accepts(non_negative, "-0.5"));
}

// Random sentences: from the start, a character the grammar allows (from a set that covers
// every kind of token JSON has), until it may end. Each must parse as JSON, of the right shape.
TEST(JsonSchema, RandomSentencesAreJson) {
    const std::string schema = R"({
        "type": "object",
        "properties": {
            "id": {"type": "string", "format": "uuid"},
            "n": {"type": "number"},
            "list": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
                     "minItems": 1, "maxItems": 3},
            "kind": {"enum": ["a", "b"]},
            "note": {"type": ["string", "null"], "maxLength": 4}
        },
        "required": ["n", "list"]
    })";
    const Grammar g = grammar_of(schema);
    const std::vector<std::string> alphabet = {
        "{", "}", "[", "]", ",", ":", "\"", "\\", "-", "+", ".", "e", "E", "0", "1", "5",  "9", "a",
        "b", "f", "n", "u", "t", "r", "l",  "s",  "i", "d", "k", "o", "A", "F", " ", "\n", "é"};
    std::mt19937 rng(7);
    int made = 0;
    for (int attempt = 0; attempt < 400 && made < 100; ++attempt) {
        Matcher matcher(g);
        std::string text;
        bool ended = false;
        for (int step = 0; step < 400 && !ended; ++step) {
            if (matcher.can_end() && rng() % 4 == 0) {
                ended = true;
                break;
            }
            std::vector<const std::string *> next;
            for (const std::string &c : alphabet) {
                if (matcher.allows(c)) next.push_back(&c);
            }
            if (next.empty()) {
                ended = matcher.can_end();
                break;
            }
            const std::string &c = *next[rng() % next.size()];
            matcher.accept(c);
            text += c;
        }
        if (!ended) continue;
        ++made;
        ordered doc;
        ASSERT_NO_THROW(doc = ordered::parse(text)) << text;
        ASSERT_TRUE(doc.is_object()) << text;
        EXPECT_TRUE(doc.contains("n") && doc["n"].is_number()) << text;
        ASSERT_TRUE(doc.contains("list") && doc["list"].is_array()) << text;
        EXPECT_GE(doc["list"].size(), 1u) << text;
        EXPECT_LE(doc["list"].size(), 3u) << text;
        for (const ordered &item : doc["list"]) {
            EXPECT_TRUE(item.is_number_integer() || item.is_boolean()) << text;
        }
        if (doc.contains("kind")) {
            EXPECT_TRUE(doc["kind"] == "a" || doc["kind"] == "b") << text;
        }
        if (doc.contains("id")) {
            EXPECT_EQ(doc["id"].get<std::string>().size(), 36u) << text;
        }
    }
    EXPECT_GE(made, 50);
}

TEST(JsonSchema, RefusesWhatItCannotExpressNamingWhere) {
    EXPECT_EQ(
        error_of(R"({"properties": {"zip": {"type": "string", "pattern": "^(?=1)[0-9]+$"}}})"),
        "[json-schema] at /properties/zip/pattern: lookarounds ((?=, (?!, (?<=, (?<!) are "
        "not supported at offset 3 of the pattern");
    EXPECT_EQ(error_of(R"({"type": "number", "minimum": 1.5})"),
              "[json-schema] at /: bounds on a number are supported only as \"minimum\": 0 (an "
              "\"integer\" may have any)");
    EXPECT_EQ(error_of(R"({"type": "integer", "minimum": 5, "maximum": 4})"),
              "[json-schema] at /: no integer of at most 16 digits is within the bounds");
    EXPECT_EQ(error_of(R"({"type": "integer", "minimum": "3"})"),
              "[json-schema] at /minimum: must be a number");
    EXPECT_EQ(
        error_of(R"({"$ref": "http://example.com/s.json"})"),
        "[json-schema] at /$ref: only references inside the schema (\"#/...\") are supported");
    EXPECT_EQ(error_of(R"({"$ref": "#/$defs/missing"})"),
              "[json-schema] at /$ref: '#/$defs/missing' names nothing in the schema");
    EXPECT_EQ(error_of("false"), "[json-schema] at /: the schema false allows no value");
    EXPECT_EQ(error_of(R"({"type": "text"})"), "[json-schema] at /type: unknown type 'text'");
    EXPECT_EQ(error_of(R"({"type": "array", "maxItems": 100000})"),
              "[json-schema] at /maxItems: counts above 10000 are not supported");
    EXPECT_EQ(error_of(R"({"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 3}]})"),
              "[json-schema] at /oneOf: branches of the same type may both match (use anyOf)");
    EXPECT_EQ(error_of(R"({"properties": {"a": {}}, "additionalProperties": true})"),
              "[json-schema] at /additionalProperties: other keys beside 'properties' are not "
              "supported yet");
    EXPECT_EQ(error_of(R"({"type": "string", "enum": [1, 2]})"),
              "[json-schema] at /: no value of 'enum' or 'const' has the schema's type");
    EXPECT_EQ(error_of("[1]"), "[json-schema] at /: a schema is an object or a boolean");
    // Found by the fuzzer: a tuple that is not an array.
    EXPECT_EQ(error_of(R"({"type": "array", "prefixItems": "array"})"),
              "[json-schema] at /prefixItems: must be an array of schemas");
    EXPECT_NE(error_of("{\"type\": ").find("[json-schema] the schema is not JSON"),
              std::string::npos);
    // Found by the fuzzer: a number past a double's range.
    EXPECT_NE(error_of(R"({"minimum": 3e999})").find("[json-schema] the schema is not JSON"),
              std::string::npos);
    std::string deep = "{}";
    for (int i = 0; i < 200; ++i) deep = R"({"items": )" + deep + "}";
    EXPECT_EQ(error_of(deep).rfind("[json-schema] at /items/items/", 0), 0u);
}

// Random sentences of a grammar over `alphabet` (single characters, some of them JSON escapes'
// parts), each walked until the grammar may end and a coin says so.
std::vector<std::string> random_sentences(const Grammar &g,
                                          const std::vector<std::string> &alphabet, int want,
                                          uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<std::string> out;
    for (int attempt = 0; attempt < want * 10 && int(out.size()) < want; ++attempt) {
        Matcher matcher(g);
        std::string text;
        for (int step = 0; step < 200; ++step) {
            if (matcher.can_end() && rng() % 3 == 0) break;
            std::vector<const std::string *> next;
            for (const std::string &c : alphabet) {
                if (matcher.allows(c)) next.push_back(&c);
            }
            if (next.empty()) break;
            const std::string &c = *next[rng() % next.size()];
            matcher.accept(c);
            text += c;
        }
        if (matcher.can_end()) out.push_back(text);
    }
    return out;
}

// UTF-8 as code points (wchar_t is 32 bits here).
std::wstring wide(const std::string &s) {
    std::wstring out;
    for (size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        const int n = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        uint32_t c = n == 1 ? b : b & (0x7F >> n);
        for (int k = 1; k < n && i + k < s.size(); ++k) c = c << 6 | (s[i + k] & 0x3F);
        out += wchar_t(c);
        i += size_t(n);
    }
    return out;
}

// Every string a pattern's grammar writes is JSON whose value the pattern matches, by std::regex
// in ECMAScript mode (JSON Schema's dialect), searched as JSON Schema does (unanchored unless
// the pattern says ^ or $).
TEST(JsonSchema, PatternsWriteOnlyStringsTheyMatch) {
    const char *patterns[] = {
        "^[0-9]{3}-[0-9]{4}$",
        "^(\\([0-9]{3}\\))?[0-9]{3}-[0-9]{4}$",  // JSON Schema's own example
        "^[a-z]+(?:_[a-z]+)*$",
        "a+b",
        "^\\d+(\\.\\d{1,2})?$",
        "^(yes|no)$",
        "^[^ab]{2,5}$",
        "^\\w+@\\w+\\.com$",
        "^\\s*x\\s*$",
        "ab|^cd|ef$",
        "^[\\]\\-a]+$",
        "^\"q\"$",
        "^a\\\\b$",
        "^.{0,3}$",
        "^\\D\\W\\S$",
        "^(a|b)*c{2,}?$",
        "^(?<year>\\d{4})-(?<m>\\d{2})$",
        "^[\\t ]+z$",
        "x?",
        "^[\\d\\s]+$",
        "^[^\\d]$",
    };
    // Few enough characters that an unanchored pattern's letters come up in a short walk.
    const std::vector<std::string> alphabet = {
        "\"", "x", "f", "a", "b", "c",    "d",    "e",   "m",   "n",       "o", "q",
        "s",  "y", "z", "G", "_", "0",    "1",    "5",   "9",   "-",       "(", ")",
        ".",  "@", " ", "%", "/", "\\\"", "\\\\", "\\t", "\\n", "\\u0001", "é"};
    for (const char *pattern : patterns) {
        SCOPED_TRACE(pattern);
        const std::string schema = ordered({{"type", "string"}, {"pattern", pattern}}).dump();
        Grammar g;
        ASSERT_NO_THROW(g = grammar_of(schema));
        // Over code points (wide characters), and without group names, which std::regex lacks.
        const std::wregex re(
            wide(std::regex_replace(std::string(pattern), std::regex("\\(\\?<[a-z]+>"), "(")),
            std::regex::ECMAScript);
        const std::vector<std::string> sentences = random_sentences(g, alphabet, 40, 5);
        EXPECT_GE(sentences.size(), 20u);
        for (const std::string &text : sentences) {
            ordered doc;
            ASSERT_NO_THROW(doc = ordered::parse(text)) << text;
            ASSERT_TRUE(doc.is_string()) << text;
            EXPECT_TRUE(std::regex_search(wide(doc.get<std::string>()), re)) << text;
        }
    }
    // Strings the pattern takes, written as JSON writes them, and some it does not.
    const auto takes = [](const char *pattern, const std::string &text) {
        return accepts(grammar_of(ordered({{"type", "string"}, {"pattern", pattern}}).dump()),
                       text);
    };
    EXPECT_TRUE(takes("^(\\([0-9]{3}\\))?[0-9]{3}-[0-9]{4}$", "\"(888)555-1212\""));
    EXPECT_TRUE(takes("^(\\([0-9]{3}\\))?[0-9]{3}-[0-9]{4}$", "\"555-1212\""));
    EXPECT_FALSE(takes("^(\\([0-9]{3}\\))?[0-9]{3}-[0-9]{4}$", "\"(888)555-1212 ext. 532\""));
    EXPECT_TRUE(takes("^\"q\"$", R"("\"q\"")"));
    EXPECT_TRUE(takes("^a\\\\b$", R"("a\\b")"));
    EXPECT_TRUE(takes("a+b", "\"xx aab yy\""));  // unanchored: anywhere
    EXPECT_FALSE(takes("^(yes|no)$", "\"maybe\""));
    EXPECT_TRUE(takes("^[\\t ]+z$", "\"\\t z\""));
    // A pattern without "type" is about strings: the grammar writes one.
    EXPECT_TRUE(accepts(grammar_of(R"({"pattern": "^a$"})"), "\"a\""));
    // What is refused, naming the construct.
    for (const char *bad : {"(?=a)", "(?<!a)b", "(a)\\1", "\\bx", "a^b", "a$b", "(a$)", "\\p{L}",
                            "a{2,1}", "(a", "a)", "*a", "a**", "a{20000}", "[b-a]", "[a", "\\"}) {
        SCOPED_TRACE(bad);
        const std::string error = error_of(ordered({{"type", "string"}, {"pattern", bad}}).dump());
        EXPECT_EQ(error.rfind("[json-schema] at /pattern: ", 0), 0u) << error;
    }
    EXPECT_EQ(error_of(R"({"type": "string", "pattern": "a", "maxLength": 3})"),
              "[json-schema] at /: a length beside 'pattern' is not supported");
    EXPECT_EQ(error_of(R"({"type": "string", "pattern": "a", "format": "uuid"})"),
              "[json-schema] at /: 'format' beside 'pattern' is not supported");
}

}  // namespace
}  // namespace loom::engine::grammar
