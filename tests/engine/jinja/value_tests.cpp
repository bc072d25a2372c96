// Values with Python's semantics: printing (str and repr), floats as Python prints them, truth,
// equality across int/float/bool, dict keys in insertion order, code-point strings, and the
// bounds every value keeps.
#include "engine/jinja/value.h"

#include <gtest/gtest.h>

#include "engine/jinja/json.h"
#include "engine/jinja/text.h"
#include "tests/engine/jinja/test_support.h"

namespace loom::engine::jinja {
namespace {

TEST(JinjaValues, FloatsPrintAsPythonRepr) {
    EXPECT_EQ(float_repr(1.0), "1.0");
    EXPECT_EQ(float_repr(0.1 + 0.2), "0.30000000000000004");
    EXPECT_EQ(float_repr(1e-05), "1e-05");
    EXPECT_EQ(float_repr(0.0001), "0.0001");
    EXPECT_EQ(float_repr(1e16), "1e+16");
    EXPECT_EQ(float_repr(1e15), "1000000000000000.0");
    EXPECT_EQ(float_repr(-2.5), "-2.5");
    EXPECT_EQ(float_repr(1.5e300), "1.5e+300");
    EXPECT_EQ(float_repr(-0.0), "-0.0");
    EXPECT_EQ(float_repr(123456789.125), "123456789.125");
}

TEST(JinjaValues, StrAndRepr) {
    Budget budget(1000);
    Dict d;
    d.set(Value("b"), Value(1));
    d.set(Value("a"), Value::list({Value("x"), Value::none(), Value(true), Value(1.5)}));
    const Value v = Value::dict(d);
    EXPECT_EQ(to_str(v, budget), "{'b': 1, 'a': ['x', None, True, 1.5]}");
    EXPECT_EQ(to_str(Value::tuple({Value(1)}), budget), "(1,)");
    EXPECT_EQ(to_str(Value::tuple({}), budget), "()");
    EXPECT_EQ(to_str(Value(), budget), "");
    EXPECT_EQ(to_str(Value::none(), budget), "None");
    EXPECT_EQ(repr(Value("it's"), budget), "\"it's\"");
    EXPECT_EQ(repr(Value("a\nb\\"), budget), "'a\\nb\\\\'");
    EXPECT_EQ(repr(Value("h\xc3\xa9"), budget), "'h\xc3\xa9'");  // printable non-ASCII as is
}

TEST(JinjaValues, TruthAndEquality) {
    Budget budget(1000);
    EXPECT_FALSE(truthy(Value()));
    EXPECT_FALSE(truthy(Value::none()));
    EXPECT_FALSE(truthy(Value(0.0)));
    EXPECT_FALSE(truthy(Value("")));
    EXPECT_FALSE(truthy(Value::list({})));
    EXPECT_TRUE(truthy(Value(" ")));
    EXPECT_TRUE(equals(Value(1), Value(1.0), budget));
    EXPECT_TRUE(equals(Value(true), Value(1), budget));
    EXPECT_FALSE(equals(Value::list({Value(1)}), Value::tuple({Value(1)}), budget));
    EXPECT_TRUE(equals(Value(), Value(), budget));
    EXPECT_FALSE(equals(Value(), Value::none(), budget));
    EXPECT_TRUE(less_than(Value("B"), Value("a"), budget));
    EXPECT_THROW(less_than(Value(1), Value("a"), budget), RenderFailure);
}

TEST(JinjaValues, DictKeysKeepOrderAndMergeEqualNumbers) {
    Dict d;
    d.set(Value("z"), Value(1));
    d.set(Value(1), Value("one"));
    d.set(Value(1.0), Value("float one"));  // the same key as 1
    d.set(Value("a"), Value(2));
    ASSERT_EQ(d.size(), 3u);
    EXPECT_EQ(d.entries()[0].first.str(), "z");
    EXPECT_EQ(d.find(Value(true))->str(), "float one");
    EXPECT_EQ(d.entries()[2].first.str(), "a");
    EXPECT_THROW(d.set(Value::list({}), Value(1)), RenderFailure);  // unhashable
}

TEST(JinjaValues, StringsCountCodePoints) {
    const std::string s = "h\xc3\xa9llo \xf0\x9f\x91\x8b";  // "héllo 👋"
    EXPECT_EQ(code_point_count(s), 7u);
    EXPECT_EQ(
        testing::render("{{ s|length }}|{{ s[1] }}|{{ s[-1] }}|{{ s[1:3] }}", {{"s", Value(s)}}),
        "7|\xc3\xa9|\xf0\x9f\x91\x8b|\xc3\xa9l");
    // An ill-formed byte is a code point of its own and comes back unchanged.
    EXPECT_EQ(code_point_count("a\xff"), 2u);
    EXPECT_EQ(testing::render("{{ s }}", {{"s", Value("a\xff")}}), "a\xff");
}

TEST(JinjaValues, ContainersAreBounded) {
    Value v = Value::list({});
    for (int i = 1; i < kMaxValueDepth; ++i) v = Value::list({v});
    EXPECT_EQ(v.depth(), kMaxValueDepth);
    EXPECT_THROW(Value::list({v}), RenderFailure);
    // Shared parts count each time they are reached.
    Value wide = Value::list(std::vector<Value>(1024, Value(1)));
    Value doubled = Value::list({wide, wide, wide});
    EXPECT_EQ(doubled.elements(), 1 + 3 * 1025);
    EXPECT_THROW(Value::list(std::vector<Value>(5000, doubled)), RenderFailure);
}

TEST(JinjaValues, JsonInKeepsOrderAndTypes) {
    Budget budget(1000);
    const Value v = parse_json(R"({"z": 1, "a": [1.0, 2, "x", null, true], "m": {}})");
    EXPECT_EQ(to_str(v, budget), "{'z': 1, 'a': [1.0, 2, 'x', None, True], 'm': {}}");
    EXPECT_THROW(parse_json("{"), Error);
    EXPECT_THROW(parse_json(std::string(1000, '[') + std::string(1000, ']')), Error);
}

}  // namespace
}  // namespace loom::engine::jinja
