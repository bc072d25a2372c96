// JSON Schema to GBNF (see json_schema.h for what the grammar accepts and what it refuses).
#include "engine/grammar/json_schema.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "engine/grammar/gbnf.h"
#include "engine/grammar/integer_range.h"
#include "engine/grammar/regex_gbnf.h"
#include "loom/error.h"

namespace loom::engine::grammar {
namespace {

using json = nlohmann::ordered_json;

// How deep schemas may nest (the converter recurses on them), and the largest count a length or
// item bound may have: the GBNF parser's own limit on a repetition.
constexpr int kMaxDepth = 128;
constexpr int64_t kMaxCount = 10000;

// The rules every grammar may use, added on first use. `ws` is bounded: a model that may write
// whitespace forever sometimes does. `char` leaves out \u escapes of UTF-16 surrogates, which a
// JSON parser refuses alone (a character outside the BMP is written as itself).
const std::map<std::string, std::string, std::less<>> kPrimitives = {
    {"ws", R"(( " " | "\n" [ \t]{0,20} )?)"},
    {"char",
     R"([^"\\\x00-\x1f] | "\\" ( ["\\/bfnrt] | "u" ( [0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} ) ))"},
    {"string", R"("\"" char* "\"")"},
    {"integer", R"("-"? ( "0" | [1-9] [0-9]{0,15} ))"},
    {"number", R"(integer ( "." [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} )?)"},
    {"boolean", R"("true" | "false")"},
    {"null", R"("null")"},
    {"value", R"(object | array | string | number | boolean | null)"},
    {"object",
     R"("{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}")"},
    {"array", R"("[" ws ( value ws ( "," ws value ws )* )? "]")"},
    // RFC 3339 dates and times, and UUIDs: llama.cpp's converter writes these formats too.
    {"date", R"([0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ))"},
    {"time",
     R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ))"},
    {"date-time", R"(date "T" time)"},
    {"uuid",
     R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})"},
};

// The string formats written as grammars (the others are annotations).
const std::set<std::string, std::less<>> kFormats = {"date", "time", "date-time", "uuid"};

// The rules a primitive's body uses.
const std::map<std::string, std::vector<std::string>, std::less<>> kPrimitiveUses = {
    {"char", {}},
    {"string", {"char"}},
    {"number", {"integer"}},
    {"value", {"object", "array", "string", "number", "boolean", "null"}},
    {"object", {"ws", "string", "value"}},
    {"array", {"ws", "value"}},
    {"date-time", {"date", "time"}},
};

// Keywords that assert something this converter does not express: refused where they appear.
const std::set<std::string, std::less<>> kUnsupported = {
    "multipleOf",
    "contains",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
    "patternProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
    "$dynamicRef",
    "$recursiveRef",
    "contentSchema",
};

// Keywords that only describe: a schema made of these and one combinator is just the combinator.
const std::set<std::string, std::less<>> kAnnotations = {
    "title",     "description", "default",     "examples",   "$schema",
    "$id",       "id",          "$comment",    "deprecated", "readOnly",
    "writeOnly", "$defs",       "definitions", "$anchor",    "format",
};

// Whether `value` is of JSON Schema type `type` (draft 4 onwards: 1.0 is an integer).
bool has_type(const json &value, std::string_view type) {
    if (type == "null") return value.is_null();
    if (type == "boolean") return value.is_boolean();
    if (type == "object") return value.is_object();
    if (type == "array") return value.is_array();
    if (type == "string") return value.is_string();
    if (type == "number") return value.is_number();
    if (type == "integer") {
        if (value.is_number_integer()) return true;
        if (!value.is_number_float()) return false;
        const double d = value.get<double>();
        return d == static_cast<double>(static_cast<int64_t>(d));
    }
    return false;
}

class Converter {
  public:
    explicit Converter(const json &root) : root_(root) {}

    std::string convert() {
        names_.insert("root");
        for (const auto &[name, body] : kPrimitives) names_.insert(name);
        const std::string value = visit(root_, "root", "", 0);
        std::string out = "root ::= " + value + " ws\n";
        use("ws");
        for (const auto &[name, body] : rules_) out += name + " ::= " + body + "\n";
        for (const std::string &name : primitives_used_) {
            out += name + " ::= " + kPrimitives.find(name)->second + "\n";
        }
        return out;
    }

  private:
    [[noreturn]] static void refuse(const std::string &pointer, const std::string &message) {
        fail("json-schema", "at {}: {}", pointer.empty() ? "/" : pointer, message);
    }

    // A primitive rule by name, with the ones it uses.
    std::string use(const std::string &name) {
        if (primitives_used_.insert(name).second) {
            const auto uses = kPrimitiveUses.find(name);
            if (uses != kPrimitiveUses.end()) {
                for (const std::string &u : uses->second) use(u);
            }
        }
        return name;
    }

    // A fresh rule name from `hint`: letters, digits and '-' only, numbered when taken.
    std::string fresh_name(std::string_view hint) {
        std::string base;
        for (const char c : hint) {
            const bool ok =
                (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
            if (ok) {
                base += c;
            } else if (!base.empty() && base.back() != '-') {
                base += '-';
            }
        }
        while (!base.empty() && base.back() == '-') base.pop_back();
        if (base.empty()) base = "rule";
        if (base.size() > 64) base.resize(64);
        std::string name = base;
        for (int n = 1; !names_.insert(name).second; ++n) name = base + "-" + std::to_string(n);
        return name;
    }

    std::string add_rule(std::string_view hint, const std::string &body) {
        std::string name = fresh_name(hint);
        rules_.emplace_back(name, body);
        return name;
    }

    static int64_t count_of(const json &schema, const char *key, const std::string &pointer,
                            int64_t fallback) {
        const auto it = schema.find(key);
        if (it == schema.end()) return fallback;
        if (!it->is_number_integer() && !it->is_number_unsigned()) {
            refuse(pointer + "/" + key, "must be a non-negative integer");
        }
        const int64_t n = it->get<int64_t>();
        if (n < 0) refuse(pointer + "/" + key, "must be a non-negative integer");
        if (n > kMaxCount) {
            refuse(pointer + "/" + key, "counts above 10000 are not supported");
        }
        return n;
    }

    // The assertion keywords of `schema` besides annotations and `except`.
    static std::vector<std::string> assertions(const json &schema,
                                               std::initializer_list<std::string_view> except) {
        std::vector<std::string> out;
        for (const auto &[key, value] : schema.items()) {
            if (kAnnotations.contains(key)) continue;
            if (std::find(except.begin(), except.end(), key) != except.end()) continue;
            out.push_back(key);
        }
        return out;
    }

    std::string visit(const json &schema, const std::string &hint, const std::string &pointer,
                      int depth) {
        if (depth > kMaxDepth) refuse(pointer, "schemas nested deeper than 128 are not supported");
        if (schema.is_boolean()) {
            if (!schema.get<bool>()) refuse(pointer, "the schema false allows no value");
            return use("value");
        }
        if (!schema.is_object()) refuse(pointer, "a schema is an object or a boolean");
        for (const auto &[key, value] : schema.items()) {
            if (kUnsupported.contains(key)) refuse(pointer, "'" + key + "' is not supported yet");
        }
        if (const auto it = schema.find("uniqueItems"); it != schema.end() && *it != false) {
            refuse(pointer, "'uniqueItems' is not supported yet");
        }
        if (schema.contains("$ref")) return visit_ref(schema, pointer, depth);
        if (schema.contains("const")) return visit_values(schema, {schema["const"]}, pointer);
        if (schema.contains("enum")) {
            const json &values = schema["enum"];
            if (!values.is_array() || values.empty()) {
                refuse(pointer + "/enum", "must be a non-empty array");
            }
            return visit_values(schema, std::vector<json>(values.begin(), values.end()), pointer);
        }
        for (const char *key : {"anyOf", "oneOf", "allOf"}) {
            if (schema.contains(key)) return visit_combinator(schema, key, hint, pointer, depth);
        }
        const auto type = schema.find("type");
        if (type == schema.end())
            return visit_type(infer_type(schema), schema, hint, pointer, depth);
        if (type->is_string())
            return visit_type(type->get<std::string>(), schema, hint, pointer, depth);
        if (!type->is_array() || type->empty()) {
            refuse(pointer + "/type", "must be a type name or a non-empty array of them");
        }
        std::string out = "(";
        for (size_t i = 0; i < type->size(); ++i) {
            if (!(*type)[i].is_string()) refuse(pointer + "/type", "must hold type names");
            out += (i > 0 ? " | " : " ") +
                   visit_type((*type)[i].get<std::string>(), schema, hint, pointer, depth);
        }
        return out + " )";
    }

    // Without `type`, the keywords say which kind of value is meant; with none, any value.
    static std::string infer_type(const json &schema) {
        for (const char *key : {"properties", "required", "additionalProperties"}) {
            if (schema.contains(key)) return "object";
        }
        for (const char *key : {"items", "prefixItems", "minItems", "maxItems"}) {
            if (schema.contains(key)) return "array";
        }
        for (const char *key : {"minLength", "maxLength", "pattern"}) {
            if (schema.contains(key)) return "string";
        }
        for (const char *key : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
            if (schema.contains(key)) return "number";
        }
        return "any";
    }

    std::string visit_ref(const json &schema, const std::string &pointer, int depth) {
        const json &ref = schema["$ref"];
        if (!ref.is_string()) refuse(pointer + "/$ref", "must be a string");
        const std::string target = ref.get<std::string>();
        if (target.empty() || target[0] != '#') {
            refuse(pointer + "/$ref",
                   "only references inside the schema (\"#/...\") are supported");
        }
        if (const std::vector<std::string> others = assertions(schema, {"$ref"}); !others.empty()) {
            refuse(pointer, "'" + others[0] + "' beside '$ref' is not supported");
        }
        if (const auto it = refs_.find(target); it != refs_.end()) return it->second;
        const json *resolved = nullptr;
        try {
            resolved = &root_.at(json::json_pointer(target.substr(1)));
        } catch (const json::exception &) {
            refuse(pointer + "/$ref", "'" + target + "' names nothing in the schema");
        }
        const std::string name = fresh_name(target.substr(target.rfind('/') + 1));
        refs_.emplace(target, name);  // before the body: a schema may refer to itself
        const std::string body = visit(*resolved, name, target.substr(1), depth + 1);
        rules_.emplace_back(name, body);
        return name;
    }

    // `const` or `enum`: the values themselves, as compact JSON, minus those `type` excludes.
    std::string visit_values(const json &schema, const std::vector<json> &values,
                             const std::string &pointer) {
        std::vector<std::string> types;
        if (const auto t = schema.find("type"); t != schema.end()) {
            for (const json &name : t->is_array() ? *t : json::array({*t})) {
                if (name.is_string()) types.push_back(name.get<std::string>());
            }
        }
        std::string out;
        for (const json &value : values) {
            const bool typed =
                types.empty() || std::any_of(types.begin(), types.end(),
                                             [&](auto &t) { return has_type(value, t); });
            if (!typed) continue;
            out += (out.empty() ? "( " : " | ") + gbnf_literal(value.dump());
        }
        if (out.empty()) refuse(pointer, "no value of 'enum' or 'const' has the schema's type");
        return out + " )";
    }

    std::string visit_combinator(const json &schema, const std::string &key,
                                 const std::string &hint, const std::string &pointer, int depth) {
        const std::string at = pointer + "/" + key;
        const json &branches = schema[key];
        if (!branches.is_array() || branches.empty()) refuse(at, "must be a non-empty array");
        if (const std::vector<std::string> others = assertions(schema, {key}); !others.empty()) {
            refuse(pointer, "'" + others[0] + "' beside '" + key + "' is not supported");
        }
        if (key == "allOf") {
            if (branches.size() != 1) refuse(at, "more than one schema is not supported yet");
            return visit(branches[0], hint, at + "/0", depth + 1);
        }
        // oneOf allows a value that exactly one branch accepts; the grammar cannot count, so
        // only branches of distinct types (which no value can satisfy twice) are taken.
        if (key == "oneOf") {
            std::set<std::string> seen;
            for (const json &branch : branches) {
                const json *t =
                    branch.is_object() && branch.contains("type") ? &branch["type"] : nullptr;
                if (t == nullptr || !t->is_string()) {
                    refuse(at,
                           "only branches with one distinct 'type' each are supported (use anyOf)");
                }
                std::string name = t->get<std::string>();
                if (name == "integer") name = "number";  // an integer is a number too
                if (!seen.insert(name).second) {
                    refuse(at, "branches of the same type may both match (use anyOf)");
                }
            }
        }
        std::string out = "(";
        for (size_t i = 0; i < branches.size(); ++i) {
            out += (i > 0 ? " | " : " ") + visit(branches[i], hint + "-" + std::to_string(i),
                                                 at + "/" + std::to_string(i), depth + 1);
        }
        return out + " )";
    }

    std::string visit_type(const std::string &type, const json &schema, const std::string &hint,
                           const std::string &pointer, int depth) {
        if (type == "any") return use("value");
        if (type == "string") return visit_string(schema, pointer);
        if (type == "integer" || type == "number") return visit_number(type, schema, pointer);
        if (type == "boolean" || type == "null") return use(type);
        if (type == "object") return visit_object(schema, hint, pointer, depth);
        if (type == "array") return visit_array(schema, hint, pointer, depth);
        refuse(pointer + "/type", "unknown type '" + type + "'");
    }

    // minimum / maximum, and exclusiveMinimum / exclusiveMaximum as numbers (draft 6 on) or as
    // booleans beside them (draft 4): the least and greatest integer allowed, where bounded.
    static std::pair<std::optional<int64_t>, std::optional<int64_t>> integer_bounds(
        const json &schema, const std::string &pointer) {
        auto number = [&](const char *key) -> std::optional<double> {
            const auto it = schema.find(key);
            if (it == schema.end() || it->is_boolean()) return std::nullopt;
            if (!it->is_number()) refuse(pointer + "/" + key, "must be a number");
            return it->get<double>();
        };
        auto flag = [&](const char *key) {
            const auto it = schema.find(key);
            return it != schema.end() && it->is_boolean() && it->get<bool>();
        };
        // Past the 16 digits the grammar writes, a bound only has to stay on its side.
        static constexpr double kFar = 1e17;
        auto clamp = [](double v) { return int64_t(std::clamp(v, -kFar, kFar)); };
        std::optional<int64_t> lo, hi;
        auto raise = [&](int64_t v) { lo = lo ? std::max(*lo, v) : v; };
        auto lower = [&](int64_t v) { hi = hi ? std::min(*hi, v) : v; };
        if (const auto m = number("minimum")) {
            raise(flag("exclusiveMinimum") ? clamp(std::floor(*m)) + 1 : clamp(std::ceil(*m)));
        }
        if (const auto m = number("maximum")) {
            lower(flag("exclusiveMaximum") ? clamp(std::ceil(*m)) - 1 : clamp(std::floor(*m)));
        }
        if (const auto e = number("exclusiveMinimum")) raise(clamp(std::floor(*e)) + 1);
        if (const auto e = number("exclusiveMaximum")) lower(clamp(std::ceil(*e)) - 1);
        return {lo, hi};
    }

    std::string visit_number(const std::string &type, const json &schema,
                             const std::string &pointer) {
        const bool bounded = schema.contains("minimum") || schema.contains("maximum") ||
                             schema.contains("exclusiveMinimum") ||
                             schema.contains("exclusiveMaximum");
        if (!bounded) return use(type);
        if (type == "number") {
            // Only the common "not negative": a number's digits cannot be bounded like an
            // integer's without also bounding its fraction and exponent.
            const auto m = schema.find("minimum");
            const bool non_negative =
                m != schema.end() && m->is_number() && m->get<double>() == 0.0 &&
                !schema.contains("maximum") && !schema.contains("exclusiveMaximum") &&
                (!schema.contains("exclusiveMinimum") || schema["exclusiveMinimum"] == false);
            if (!non_negative) {
                refuse(pointer,
                       "bounds on a number are supported only as \"minimum\": 0 (an "
                       "\"integer\" may have any)");
            }
            return "( \"0\" | [1-9] [0-9]{0,15} ) ( \".\" [0-9]{1,16} )? ( [eE] [-+]? [0-9]{1,2} "
                   ")?";
        }
        const auto [lo, hi] = integer_bounds(schema, pointer);
        if ((lo && *lo > kMaxIntegerMagnitude) || (hi && *hi < -kMaxIntegerMagnitude) ||
            (lo && hi && *lo > *hi)) {
            refuse(pointer, "no integer of at most 16 digits is within the bounds");
        }
        return integer_range_gbnf(lo, hi);
    }

    std::string visit_string(const json &schema, const std::string &pointer) {
        const int64_t min = count_of(schema, "minLength", pointer, 0);
        const int64_t max = count_of(schema, "maxLength", pointer, -1);
        if (max >= 0 && max < min) refuse(pointer, "maxLength is below minLength");
        if (const auto p = schema.find("pattern"); p != schema.end()) {
            if (!p->is_string()) refuse(pointer + "/pattern", "must be a string");
            if (min > 0 || max >= 0) refuse(pointer, "a length beside 'pattern' is not supported");
            if (const auto f = schema.find("format");
                f != schema.end() && f->is_string() && kFormats.contains(f->get<std::string>())) {
                refuse(pointer, "'format' beside 'pattern' is not supported");
            }
            std::string body;
            try {
                body = regex_to_gbnf(p->get<std::string>());
            } catch (const Error &e) {
                std::string_view what = e.what();
                what.remove_prefix(std::min(what.size(), std::string_view("[regex] ").size()));
                refuse(pointer + "/pattern", std::string(what));
            }
            use("char");  // the unanchored sides
            return "\"\\\"\" " + body + " \"\\\"\"";
        }
        if (const auto f = schema.find("format"); f != schema.end() && f->is_string()) {
            const std::string format = f->get<std::string>();
            if (kFormats.contains(format)) {
                if (min > 0 || max >= 0)
                    refuse(pointer, "a length beside 'format' is not supported");
                return "\"\\\"\" " + use(format) + " \"\\\"\"";
            }
            // Other formats are annotations to a validator unless it is told otherwise.
        }
        if (min == 0 && max < 0) return use("string");
        use("char");
        const std::string bound = max < 0
                                      ? "{" + std::to_string(min) + ",}"
                                      : "{" + std::to_string(min) + "," + std::to_string(max) + "}";
        return "\"\\\"\" char" + bound + " \"\\\"\"";
    }

    std::string visit_object(const json &schema, const std::string &hint,
                             const std::string &pointer, int depth) {
        static const json kNone = json::object();
        const json &properties = schema.contains("properties") ? schema["properties"] : kNone;
        if (!properties.is_object()) refuse(pointer + "/properties", "must be an object");
        std::vector<std::string> required;
        if (const auto it = schema.find("required"); it != schema.end()) {
            if (!it->is_array()) refuse(pointer + "/required", "must be an array of names");
            for (const json &name : *it) {
                if (!name.is_string()) refuse(pointer + "/required", "must be an array of names");
                if (std::find(required.begin(), required.end(), name.get<std::string>()) ==
                    required.end())
                    required.push_back(name.get<std::string>());
            }
        }
        const auto additional = schema.find("additionalProperties");
        const bool closed = additional == schema.end() || *additional == false;
        use("ws");
        if (properties.empty() && required.empty()) {
            // "properties": {} without additionalProperties is {} only, as llama.cpp's converter
            // reads it (a tool without arguments); no "properties" at all is any object.
            if ((additional == schema.end() && schema.contains("properties")) ||
                (additional != schema.end() && *additional == false)) {
                return "\"{\" ws \"}\"";
            }
            if (additional == schema.end() || *additional == true) return use("object");
            const std::string value =
                visit(*additional, hint + "-value", pointer + "/additionalProperties", depth + 1);
            use("string");
            const std::string kv = add_rule(hint + "-kv", "string ws \":\" ws " + value + " ws");
            return add_rule(hint, "\"{\" ws ( " + kv + " ( \",\" ws " + kv + " )* )? \"}\"");
        }
        if (!closed) {
            refuse(pointer + "/additionalProperties",
                   "other keys beside 'properties' are not supported yet");
        }
        // Each property's key and value, the required ones first, each group in schema order.
        auto kv_rule = [&](const std::string &name) {
            const auto it = properties.find(name);
            const std::string value =
                it == properties.end()
                    ? use("value")
                    : visit(*it, hint + "-" + name, pointer + "/properties/" + name, depth + 1);
            return add_rule(hint + "-" + name + "-kv",
                            gbnf_literal(json(name).dump()) + " ws \":\" ws " + value + " ws");
        };
        std::vector<std::string> required_kvs, optional_kvs;
        for (const auto &[name, sub] : properties.items()) {
            if (std::find(required.begin(), required.end(), name) != required.end()) continue;
            optional_kvs.push_back(name);
        }
        for (const std::string &name : required) required_kvs.push_back(kv_rule(name));
        for (std::string &name : optional_kvs) name = kv_rule(name);
        std::string body = "\"{\" ws";
        for (size_t i = 0; i < required_kvs.size(); ++i) {
            body += (i > 0 ? " \",\" ws " : " ") + required_kvs[i];
        }
        if (!optional_kvs.empty()) {
            // rest_i: a non-empty subset of the optional properties i.. in order.
            std::vector<std::string> rest(optional_kvs.size());
            for (size_t i = optional_kvs.size(); i-- > 0;) {
                rest[i] = fresh_name(hint + "-rest");
                std::string r = optional_kvs[i];
                if (i + 1 < optional_kvs.size()) {
                    r += " ( \",\" ws " + rest[i + 1] + " )? | " + rest[i + 1];
                }
                rules_.emplace_back(rest[i], r);
            }
            body += required_kvs.empty() ? " " + rest[0] + "?" : " ( \",\" ws " + rest[0] + " )?";
        }
        return add_rule(hint, body + " \"}\"");
    }

    std::string visit_array(const json &schema, const std::string &hint, const std::string &pointer,
                            int depth) {
        const int64_t min = count_of(schema, "minItems", pointer, 0);
        const int64_t max = count_of(schema, "maxItems", pointer, -1);
        if (max >= 0 && max < min) refuse(pointer, "maxItems is below minItems");
        use("ws");
        const json *tuple = nullptr;
        std::string tuple_key;
        if (schema.contains("prefixItems")) {
            tuple = &schema["prefixItems"], tuple_key = "prefixItems";
            if (!tuple->is_array()) refuse(pointer + "/prefixItems", "must be an array of schemas");
        } else if (schema.contains("items") && schema["items"].is_array()) {
            tuple = &schema["items"], tuple_key = "items";
        }
        if (tuple != nullptr) {
            // Exactly the listed items: fewer would be valid too, more only under rules about
            // additional items, and one form is enough to generate.
            const int64_t n = int64_t(tuple->size());
            if (n < min || (max >= 0 && n > max)) {
                refuse(pointer, "a tuple whose length the item bounds exclude is not supported");
            }
            std::string body = "\"[\" ws";
            for (int64_t i = 0; i < n; ++i) {
                const std::string at = pointer + "/" + tuple_key + "/" + std::to_string(i);
                body += (i > 0 ? " \",\" ws " : " ") +
                        visit((*tuple)[size_t(i)], hint + "-" + std::to_string(i), at, depth + 1) +
                        " ws";
            }
            return add_rule(hint, body + " \"]\"");
        }
        const auto items = schema.find("items");
        const std::string item = items == schema.end()
                                     ? use("value")
                                     : visit(*items, hint + "-item", pointer + "/items", depth + 1);
        if (max == 0) return "\"[\" ws \"]\"";
        const std::string more = max < 0
                                     ? "{" + std::to_string(std::max<int64_t>(min - 1, 0)) + ",}"
                                     : "{" + std::to_string(std::max<int64_t>(min - 1, 0)) + "," +
                                           std::to_string(max - 1) + "}";
        const std::string list = item + " ws ( \",\" ws " + item + " ws )" + more;
        return add_rule(
            hint, min == 0 ? "\"[\" ws ( " + list + " )? \"]\"" : "\"[\" ws " + list + " \"]\"");
    }

    const json &root_;
    std::vector<std::pair<std::string, std::string>> rules_;  // in the order they are made
    std::set<std::string> names_;                             // taken, primitives included
    std::set<std::string> primitives_used_;
    std::map<std::string, std::string> refs_;  // "$ref" target -> its rule
};

}  // namespace

std::string json_schema_to_gbnf(std::string_view schema_text) {
    json schema;
    try {
        schema = json::parse(schema_text);
    } catch (const json::exception &e) {  // parse_error, or out_of_range for 1e999
        fail("json-schema", "the schema is not JSON: {}", e.what());
    }
    try {
        return Converter(schema).convert();
    } catch (const json::exception &e) {
        // A value of a kind no check above expected (the fuzzer found one): still the schema's
        // fault, and a clear error rather than an escaping exception.
        fail("json-schema", "the schema is malformed: {}", e.what());
    }
}

}  // namespace loom::engine::grammar
