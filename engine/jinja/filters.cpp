// Jinja2's filters over text and numbers, tojson as transformers defines it, and the table every
// filter is found in (the ones over lists and dicts are in sequence_filters.cpp).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "engine/jinja/builtins.h"
#include "engine/jinja/filter_table.h"
#include "engine/jinja/json.h"
#include "engine/jinja/text.h"

namespace loom::engine::jinja {

std::string text_of(const Value &v, Budget &budget) {
    return to_str(v, budget);
}

namespace {

int64_t int_arg(const Value *v, int64_t fallback, const char *what) {
    if (v == nullptr || v->is_none()) return fallback;
    if (!v->is_int() && !v->is_bool()) render_fail(fmt::format("{} must be an integer", what));
    return v->to_int();
}

Value filter_length(const Value &input, CallArgs &args) {
    BoundArgs(args, "length", {});
    switch (input.kind()) {
        case Value::Kind::undefined:
            return Value(0);
        case Value::Kind::string:
            return Value(int64_t(code_point_count(input.str())));
        case Value::Kind::list:
            return Value(int64_t(input.items().size()));
        case Value::Kind::dict:
            return Value(int64_t(input.dict().size()));
        default:
            render_fail(fmt::format("object of type '{}' has no len()", input.type_name()));
    }
}

Value filter_default(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "default", {"default_value", "boolean"});
    const bool boolean = a.get(1) && truthy(*a.get(1));
    if (input.is_undefined() || (boolean && !truthy(input))) return a.get_or(0, Value(""));
    return input;
}

Value filter_trim(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "trim", {"chars"});
    const Value *chars = a.get(0);
    if (chars && !chars->is_none() && !chars->is_string()) {
        render_fail("trim() chars must be a string");
    }
    const std::string *set = chars && chars->is_string() ? &chars->str() : nullptr;
    return Value(strip(text_of(input, args.budget), set, true, true));
}

Value filter_replace(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "replace", {"old", "new", "count"});
    if (a.get(0) == nullptr || a.get(1) == nullptr) render_fail("replace() needs old and new");
    std::string out = replace(text_of(input, args.budget), text_of(*a.get(0), args.budget),
                              text_of(*a.get(1), args.budget), int_arg(a.get(2), -1, "count"));
    if (out.size() > kMaxStringBytes) render_fail("the replaced string is too long");
    return Value(std::move(out));
}

// Jinja's title: every piece after a run of "-", whitespace, "(", "{", "[" or "<" starts upper
// case, the rest lower (not str.title: "they're" stays "They're").
Value filter_title(const Value &input, CallArgs &args) {
    BoundArgs(args, "title", {});
    const std::string s = text_of(input, args.budget);
    std::string out;
    bool word_start = true;
    for (size_t i = 0; i < s.size();) {
        const CodePoint cp = decode_code_point(s, i);
        const std::string one = s.substr(i, cp.length);
        const bool separator =
            is_space(cp.value) || std::string_view("-({[<").find(s[i]) != std::string_view::npos;
        if (separator) {
            out += one;
            word_start = true;
        } else {
            out += word_start ? to_upper(one) : to_lower(one);
            word_start = false;
        }
        i += cp.length;
    }
    return Value(std::move(out));
}

Value filter_indent(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "indent", {"width", "first", "blank"});
    const Value width = a.get_or(0, Value(4));
    std::string indentation;
    if (width.is_string()) {
        indentation = width.str();
    } else {
        const int64_t n = int_arg(&width, 4, "width");
        if (n > 4096) render_fail("indent() width is too large");
        indentation.assign(size_t(std::max<int64_t>(n, 0)), ' ');
    }
    const bool first = a.get(1) && truthy(*a.get(1)), blank = a.get(2) && truthy(*a.get(2));
    // As Jinja2: a newline is appended before splitting into lines, so a trailing newline yields
    // no indented empty line; lines are split as str.splitlines splits them.
    std::vector<std::string> lines;
    {
        CallArgs none{{}, {}, args.budget};
        const Value split = bound_method(Value(text_of(input, args.budget) + "\n"), "splitlines")
                                ->func()
                                .call(none);
        for (const Value &line : split.items()) lines.push_back(line.str());
    }
    std::string out;
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) out += '\n';
        if (i == 0 ? first : (blank || !lines[i].empty())) out += indentation;
        out += lines[i];
        if (out.size() > kMaxStringBytes) render_fail("the indented string is too long");
    }
    return Value(std::move(out));
}

Value filter_truncate(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "truncate", {"length", "killwords", "end", "leeway"});
    const std::string s = text_of(input, args.budget);
    const int64_t length = int_arg(a.get(0), 255, "length");
    const bool killwords = a.get(1) && truthy(*a.get(1));
    const std::string end = a.get(2) ? text_of(*a.get(2), args.budget) : "...";
    const int64_t leeway = int_arg(a.get(3), 5, "leeway");
    const int64_t end_length = int64_t(code_point_count(end));
    if (length < end_length)
        render_fail(fmt::format("expected length >= {}, got {}", end_length, length));
    if (leeway < 0) render_fail(fmt::format("expected leeway >= 0, got {}", leeway));
    const std::vector<size_t> at = code_point_offsets(s);
    const int64_t n = int64_t(at.size() - 1);
    if (n <= length + leeway) return Value(s);
    std::string kept = s.substr(0, at[size_t(length - end_length)]);
    if (!killwords) {
        const size_t space = kept.rfind(' ');
        if (space != std::string::npos) kept.resize(space);
    }
    return Value(kept + end);
}

Value filter_center(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "center", {"width"});
    CallArgs forwarded{{a.get_or(0, Value(80))}, {}, args.budget};
    return bound_method(Value(text_of(input, args.budget)), "center")->func().call(forwarded);
}

Value filter_wordcount(const Value &input, CallArgs &args) {
    BoundArgs(args, "wordcount", {});
    // Runs of word characters (\w): letters, digits, underscore; any non-ASCII code point that is
    // not whitespace counts as a letter.
    const std::string s = text_of(input, args.budget);
    int64_t words = 0;
    bool in_word = false;
    for (size_t i = 0; i < s.size();) {
        const CodePoint cp = decode_code_point(s, i);
        const uint32_t c = cp.value;
        const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                          (c >= '0' && c <= '9') || c == '_' || (c >= 0x80 && !is_space(c));
        if (word && !in_word) ++words;
        in_word = word;
        i += cp.length;
    }
    return Value(words);
}

Value filter_escape(const Value &input, CallArgs &args) {
    BoundArgs(args, "escape", {});
    const std::string s = text_of(input, args.budget);
    std::string out;
    for (const char c : s) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return Value(std::move(out));
}

Value filter_striptags(const Value &input, CallArgs &args) {
    BoundArgs(args, "striptags", {});
    const std::string s = text_of(input, args.budget);
    std::string text;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '<') {
            const size_t close = s.find('>', i);
            if (close != std::string::npos) {
                i = close;
                continue;
            }
        }
        text += s[i];
    }
    // Whitespace runs become one space, as " ".join(text.split()).
    const std::vector<std::string> words = split(text, nullptr, -1, false);
    std::string out;
    for (const std::string &w : words) out += (out.empty() ? "" : " ") + w;
    return Value(std::move(out));
}

// Python's int(str, base) / float(str): surrounding whitespace and underscores between digits.
std::optional<int64_t> parse_int(std::string s, int base) {
    s = strip(s, nullptr, true, true);
    std::string digits;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '_' && i > 0 && i + 1 < s.size() && s[i - 1] != '_') continue;
        digits += s[i];
    }
    if (digits.empty()) return std::nullopt;
    errno = 0;
    char *end = nullptr;
    const long long v = std::strtoll(digits.c_str(), &end, base);
    if (errno != 0 || end != digits.c_str() + digits.size() ||
        std::isspace(static_cast<unsigned char>(digits[0]))) {
        return std::nullopt;
    }
    return int64_t(v);
}

std::optional<double> parse_float(const std::string &text) {
    const std::string s = strip(text, nullptr, true, true);
    if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
    const std::string lower = to_lower(s);
    const size_t sign = lower[0] == '+' || lower[0] == '-' ? 1 : 0;
    const std::string body = lower.substr(sign);
    if (body == "inf" || body == "infinity" || body == "nan") {
        const double v = body == "nan" ? NAN : INFINITY;
        return lower[0] == '-' ? -v : v;
    }
    if (body.find_first_not_of("0123456789._e+-") != std::string::npos)
        return std::nullopt;  // no hex
    std::string digits;
    for (const char c : s) {
        if (c != '_') digits += c;
    }
    char *end = nullptr;
    const double v = std::strtod(digits.c_str(), &end);
    if (end != digits.c_str() + digits.size()) return std::nullopt;
    return v;
}

Value filter_int(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "int", {"default", "base"});
    const Value fallback = a.get_or(0, Value(0));
    const int64_t base = int_arg(a.get(1), 10, "base");
    if (input.is_int() || input.is_bool()) return Value(input.to_int());
    if (input.is_float()) {
        if (!(std::fabs(input.as_float()) < 9.2e18)) return fallback;
        return Value(int64_t(input.as_float()));
    }
    if (input.is_string()) {
        if (base >= 2 && base <= 36) {
            if (const auto v = parse_int(input.str(), int(base))) return Value(*v);
        }
        if (const auto f = parse_float(input.str()); f && std::fabs(*f) < 9.2e18)
            return Value(int64_t(*f));
    }
    return fallback;
}

Value filter_float(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "float", {"default"});
    if (input.is_number()) return Value(input.to_double());
    if (input.is_string()) {
        if (const auto f = parse_float(input.str())) return Value(*f);
    }
    return a.get_or(0, Value(0.0));
}

Value filter_abs(const Value &input, CallArgs &args) {
    BoundArgs(args, "abs", {});
    if (input.is_float()) return Value(std::fabs(input.as_float()));
    if (input.is_int() || input.is_bool()) {
        if (input.to_int() == INT64_MIN)
            render_fail("integer overflow (template integers are 64-bit)");
        return Value(input.to_int() < 0 ? -input.to_int() : input.to_int());
    }
    render_fail(fmt::format("bad operand type for abs(): '{}'", input.type_name()));
}

Value filter_round(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "round", {"precision", "method"});
    const int64_t precision = int_arg(a.get(0), 0, "precision");
    const std::string method = a.get(1) ? text_of(*a.get(1), args.budget) : "common";
    if (method != "common" && method != "ceil" && method != "floor") {
        render_fail("method must be common, ceil or floor");
    }
    if (!input.is_number())
        render_fail(fmt::format("type {} doesn't define __round__ method", input.type_name()));
    if (precision > 300 || precision < -300) render_fail("round() precision is out of range");
    const double scale = std::pow(10.0, double(precision));
    if (method != "common") {
        const double x = input.to_double() * scale;
        return Value((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
    }
    // Python's round(int, n) stays an int; round(float, n) rounds the exact binary value half to
    // even, which is what printf's correctly rounded %.*f does.
    if (!input.is_float()) {
        if (precision >= 0) return Value(input.to_int());
        return Value(
            int64_t(std::nearbyint(double(input.to_int()) / std::pow(10.0, double(-precision))) *
                    std::pow(10.0, double(-precision))));
    }
    const double x = input.as_float();
    if (!std::isfinite(x)) return Value(x);
    if (precision < 0)
        return Value(std::nearbyint(x / std::pow(10.0, double(-precision))) *
                     std::pow(10.0, double(-precision)));
    std::string text(400, '\0');
    text.resize(size_t(std::snprintf(text.data(), text.size(), "%.*f", int(precision), x)));
    return Value(std::strtod(text.c_str(), nullptr));
}

Value filter_format(const Value &input, CallArgs &args) {
    // "%s, %s"|format(a, b): printf-style, with the keywords as the mapping when given.
    if (!args.keywords.empty()) {
        Dict named;
        for (const auto &[k, v] : args.keywords) named.set(Value(k), v);
        return Value(percent_format(text_of(input, args.budget), Value::dict(std::move(named)),
                                    args.budget));
    }
    const Value tuple = Value::tuple(args.positional);
    return Value(percent_format(text_of(input, args.budget), tuple, args.budget));
}

// transformers' tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False).
Value filter_tojson(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonOptions options;
    options.ensure_ascii = a.get(0) && truthy(*a.get(0));
    options.sort_keys = a.get(3) && truthy(*a.get(3));
    if (const Value *indent = a.get(1); indent && !indent->is_none()) {
        if (indent->is_string()) {
            options.indent = indent->str();
        } else {
            const int64_t n = int_arg(indent, 0, "indent");
            if (n > 4096) render_fail("tojson() indent is too large");
            options.indent = std::string(size_t(std::max<int64_t>(n, 0)), ' ');
        }
    }
    if (const Value *separators = a.get(2); separators && !separators->is_none()) {
        if (!separators->is_list() || separators->items().size() != 2 ||
            !separators->items()[0].is_string() || !separators->items()[1].is_string()) {
            render_fail("tojson() separators must be a pair of strings");
        }
        options.item_separator = separators->items()[0].str();
        options.key_separator = separators->items()[1].str();
    }
    return Value(to_json(input, options, args.budget));
}

Value filter_string(const Value &input, CallArgs &args) {
    BoundArgs(args, "string", {});
    return Value(text_of(input, args.budget));
}

Value filter_pprint(const Value &input, CallArgs &args) {
    BoundArgs(args, "pprint", {});
    return Value(repr(input, args.budget));
}

Value filter_attr(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "attr", {"name"});
    if (a.get(0) == nullptr || !a.get(0)->is_string()) render_fail("attr() needs a name");
    // Only attributes, never items: a dict's keys are not its attributes.
    const std::string &name = a.get(0)->str();
    if (input.is_object() || input.is_undefined()) return get_attribute(input, name);
    if (std::optional<Value> method = bound_method(input, name)) return *method;
    return Value::undefined(
        fmt::format("'{} object' has no attribute '{}'", input.type_name(), name));
}

const FilterTable &filter_table() {
    static const FilterTable table = [] {
        FilterTable t = {
            {"length", filter_length},
            {"count", filter_length},
            {"default", filter_default},
            {"d", filter_default},
            {"trim", filter_trim},
            {"replace", filter_replace},
            {"upper",
             [](const Value &v, CallArgs &a) {
                 BoundArgs(a, "upper", {});
                 return Value(to_upper(text_of(v, a.budget)));
             }},
            {"lower",
             [](const Value &v, CallArgs &a) {
                 BoundArgs(a, "lower", {});
                 return Value(to_lower(text_of(v, a.budget)));
             }},
            {"capitalize",
             [](const Value &v, CallArgs &a) {
                 BoundArgs(a, "capitalize", {});
                 return Value(capitalize(text_of(v, a.budget)));
             }},
            {"title", filter_title},
            {"indent", filter_indent},
            {"truncate", filter_truncate},
            {"center", filter_center},
            {"wordcount", filter_wordcount},
            {"escape", filter_escape},
            {"e", filter_escape},
            {"forceescape", filter_escape},
            {"striptags", filter_striptags},
            {"safe", filter_string},
            {"string", filter_string},
            {"int", filter_int},
            {"float", filter_float},
            {"abs", filter_abs},
            {"round", filter_round},
            {"format", filter_format},
            {"tojson", filter_tojson},
            {"pprint", filter_pprint},
            {"attr", filter_attr},
        };
        add_sequence_filters(t);
        return t;
    }();
    return table;
}

}  // namespace

Value apply_filter(const std::string &name, const Value &input, CallArgs &args) {
    const FilterTable &table = filter_table();
    const auto it = table.find(name);
    if (it == table.end()) render_fail(fmt::format("no filter named '{}'", name));
    return it->second(input, args);
}

bool has_filter(const std::string &name) {
    return filter_table().count(name) > 0;
}

}  // namespace loom::engine::jinja
