// Jinja2's tests: `x is defined`, `x is divisibleby 3`, `x is eq 2`, ...
#include <fmt/format.h>

#include <cmath>
#include <unordered_map>

#include "engine/jinja/builtins.h"
#include "engine/jinja/text.h"

namespace loom::engine::jinja {
namespace {

using Test = bool (*)(const Value &input, CallArgs &args);

const Value &argument(CallArgs &args, const char *test) {
    if (args.positional.size() != 1 || !args.keywords.empty()) {
        render_fail(fmt::format("the test '{}' takes one argument", test));
    }
    return args.positional[0];
}

void no_arguments(CallArgs &args, const char *test) {
    if (!args.positional.empty() || !args.keywords.empty()) {
        render_fail(fmt::format("the test '{}' takes no arguments", test));
    }
}

double remainder_of(const Value &v, const Value &by) {
    if (!v.is_number() || !by.is_number()) {
        render_fail(fmt::format("unsupported operand type(s) for %: '{}' and '{}'", v.type_name(),
                                by.type_name()));
    }
    if (by.to_double() == 0) render_fail("integer division or modulo by zero");
    if (v.is_float() || by.is_float()) return std::fmod(v.to_double(), by.to_double());
    return double(v.to_int() % by.to_int());
}

bool is_odd(const Value &v, CallArgs &args) {
    no_arguments(args, "odd");
    return remainder_of(v, Value(2)) != 0;
}

bool is_even(const Value &v, CallArgs &args) {
    no_arguments(args, "even");
    return remainder_of(v, Value(2)) == 0;
}

bool is_iterable(const Value &v) {
    return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
}

const std::unordered_map<std::string, Test> &test_table() {
    static const std::unordered_map<std::string, Test> table = [] {
        std::unordered_map<std::string, Test> t = {
            {"defined",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "defined");
                 return !v.is_undefined();
             }},
            {"undefined",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "undefined");
                 return v.is_undefined();
             }},
            {"none",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "none");
                 return v.is_none();
             }},
            {"boolean",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "boolean");
                 return v.is_bool();
             }},
            {"true",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "true");
                 return v.is_bool() && v.as_bool();
             }},
            {"false",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "false");
                 return v.is_bool() && !v.as_bool();
             }},
            {"integer",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "integer");
                 return v.is_int();
             }},
            {"float",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "float");
                 return v.is_float();
             }},
            {"number",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "number");
                 return v.is_number();
             }},
            {"string",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "string");
                 return v.is_string();
             }},
            {"mapping",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "mapping");
                 return v.is_dict();
             }},
            {"iterable",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "iterable");
                 return is_iterable(v);
             }},
            {"sequence",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "sequence");
                 return is_iterable(v);
             }},
            {"callable",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "callable");
                 return v.is_function() || (v.is_object() && v.obj().is_callable());
             }},
            {"escaped",
             [](const Value &, CallArgs &a) {
                 no_arguments(a, "escaped");
                 return false;
             }},
            {"lower",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "lower");
                 return v.is_string() && to_lower(v.str()) == v.str() &&
                        to_upper(v.str()) != v.str();
             }},
            {"upper",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "upper");
                 return v.is_string() && to_upper(v.str()) == v.str() &&
                        to_lower(v.str()) != v.str();
             }},
            {"odd", is_odd},
            {"even", is_even},
            {"divisibleby",
             [](const Value &v, CallArgs &a) {
                 return remainder_of(v, argument(a, "divisibleby")) == 0;
             }},
            {"sameas",
             [](const Value &v, CallArgs &a) { return v.same_as(argument(a, "sameas")); }},
            {"in",
             [](const Value &v, CallArgs &a) { return contains(argument(a, "in"), v, a.budget); }},
            {"filter",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "filter");
                 return v.is_string() && has_filter(v.str());
             }},
            {"test",
             [](const Value &v, CallArgs &a) {
                 no_arguments(a, "test");
                 return v.is_string() && has_test(v.str());
             }},
        };
        const auto eq = [](const Value &v, CallArgs &a) {
            return equals(v, argument(a, "eq"), a.budget);
        };
        const auto ne = [](const Value &v, CallArgs &a) {
            return !equals(v, argument(a, "ne"), a.budget);
        };
        const auto lt = [](const Value &v, CallArgs &a) {
            return less_than(v, argument(a, "lt"), a.budget);
        };
        const auto gt = [](const Value &v, CallArgs &a) {
            return less_than(argument(a, "gt"), v, a.budget);
        };
        const auto le = [](const Value &v, CallArgs &a) {
            const Value &x = argument(a, "le");
            return less_than(v, x, a.budget) || equals(v, x, a.budget);
        };
        const auto ge = [](const Value &v, CallArgs &a) {
            const Value &x = argument(a, "ge");
            return less_than(x, v, a.budget) || equals(v, x, a.budget);
        };
        for (const char *name : {"eq", "equalto", "=="}) t[name] = eq;
        for (const char *name : {"ne", "!="}) t[name] = ne;
        for (const char *name : {"lt", "lessthan", "<"}) t[name] = lt;
        for (const char *name : {"gt", "greaterthan", ">"}) t[name] = gt;
        for (const char *name : {"le", "<="}) t[name] = le;
        for (const char *name : {"ge", ">="}) t[name] = ge;
        return t;
    }();
    return table;
}

}  // namespace

bool apply_test(const std::string &name, const Value &input, CallArgs &args) {
    const auto &table = test_table();
    const auto it = table.find(name);
    if (it == table.end()) render_fail(fmt::format("no test named '{}'", name));
    return it->second(input, args);
}

bool has_test(const std::string &name) {
    return test_table().count(name) > 0;
}

}  // namespace loom::engine::jinja
