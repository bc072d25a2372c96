// The Python methods templates call on str, list and dict values. Methods that would change a
// list or dict (append, pop, update...) are refused as transformers' ImmutableSandboxedEnvironment
// refuses them: the attribute is an undefined value whose use fails with the sandbox's message.
#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

#include "engine/jinja/builtins.h"
#include "engine/jinja/text.h"

namespace loom::engine::jinja {
namespace {

using Method = Value (*)(const Value &self, CallArgs &args);

const std::string *optional_string(const Value *v, const char *what) {
    if (v == nullptr || v->is_none()) return nullptr;
    if (!v->is_string()) render_fail(fmt::format("{} must be None or a string", what));
    return &v->str();
}

int64_t int_arg(const Value *v, int64_t fallback, const char *what) {
    if (v == nullptr || v->is_none()) return fallback;
    if (!v->is_int() && !v->is_bool()) render_fail(fmt::format("{} must be an integer", what));
    return v->to_int();
}

const std::string &string_arg(const Value *v, const char *what) {
    if (v == nullptr || !v->is_string()) render_fail(fmt::format("{} must be a string", what));
    return v->str();
}

Value string_list(const std::vector<std::string> &parts) {
    std::vector<Value> out(parts.begin(), parts.end());
    return Value::list(std::move(out));
}

// The code point range [start, end) of str.find / count / startswith's optional arguments, as
// byte offsets into s.
std::pair<size_t, size_t> byte_range(const std::string &s, const Value *start, const Value *end) {
    if ((start == nullptr || start->is_none()) && (end == nullptr || end->is_none())) {
        return {0, s.size()};
    }
    const std::vector<size_t> at = code_point_offsets(s);
    const int64_t n = int64_t(at.size() - 1);
    const auto clamp = [&](int64_t i) {
        if (i < 0) i = std::max<int64_t>(0, i + n);
        return std::min(i, n);
    };
    const int64_t b = clamp(int_arg(start, 0, "start")), e = clamp(int_arg(end, n, "end"));
    return {at[size_t(b)], at[size_t(std::max(b, e))]};
}

size_t code_points_before(const std::string &s, size_t byte) {
    return code_point_count(std::string_view(s).substr(0, byte));
}

Value str_starts_or_ends(const Value &self, CallArgs &args, bool ends) {
    const BoundArgs a(args, ends ? "endswith" : "startswith", {"prefix", "start", "end"});
    const auto [b, e] = byte_range(self.str(), a.get(1), a.get(2));
    const std::string_view part = std::string_view(self.str()).substr(b, e - b);
    const auto matches = [&](const Value &p) {
        if (!p.is_string())
            render_fail("startswith/endswith first arg must be str or a tuple of str");
        return ends ? part.size() >= p.str().size() &&
                          part.substr(part.size() - p.str().size()) == p.str()
                    : part.substr(0, p.str().size()) == p.str();
    };
    const Value *prefix = a.get(0);
    if (prefix == nullptr) render_fail("startswith/endswith takes at least 1 argument");
    if (prefix->is_tuple()) {
        return Value(std::any_of(prefix->items().begin(), prefix->items().end(), matches));
    }
    return Value(matches(*prefix));
}

Value str_find(const Value &self, CallArgs &args, const char *name, bool from_right, bool must) {
    const BoundArgs a(args, name, {"sub", "start", "end"});
    const std::string &sub = string_arg(a.get(0), "sub");
    const auto [b, e] = byte_range(self.str(), a.get(1), a.get(2));
    const std::string_view part = std::string_view(self.str()).substr(b, e - b);
    const size_t hit = from_right ? part.rfind(sub) : part.find(sub);
    if (hit == std::string_view::npos) {
        if (must) render_fail("substring not found");
        return Value(-1);
    }
    return Value(int64_t(code_points_before(self.str(), b + hit)));
}

Value str_split(const Value &self, CallArgs &args, bool from_right) {
    const BoundArgs a(args, from_right ? "rsplit" : "split", {"sep", "maxsplit"});
    const std::string *sep = optional_string(a.get(0), "sep");
    if (sep != nullptr && sep->empty()) render_fail("empty separator");
    return string_list(split(self.str(), sep, int_arg(a.get(1), -1, "maxsplit"), from_right));
}

Value str_strip(const Value &self, CallArgs &args, const char *name, bool left, bool right) {
    const BoundArgs a(args, name, {"chars"});
    return Value(strip(self.str(), optional_string(a.get(0), "chars"), left, right));
}

template <typename Predicate>
Value str_all(const Value &self, Predicate predicate) {
    const std::string &s = self.str();
    if (s.empty()) return Value(false);
    for (size_t i = 0; i < s.size();) {
        const CodePoint cp = decode_code_point(s, i);
        if (!predicate(cp.value)) return Value(false);
        i += cp.length;
    }
    return Value(true);
}

bool is_ascii_alpha(uint32_t c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_ascii_digit(uint32_t c) {
    return c >= '0' && c <= '9';
}

Value str_pad(const Value &self, CallArgs &args, const char *name, int where) {
    const BoundArgs a(args, name, {"width", "fillchar"});
    const int64_t width = int_arg(a.get(0), 0, "width");
    const std::string fill = a.get(1) ? string_arg(a.get(1), "fillchar") : " ";
    if (code_point_count(fill) != 1)
        render_fail("the fill character must be exactly one character long");
    const int64_t n = int64_t(code_point_count(self.str()));
    if (width <= n) return self;
    if (uint64_t(width) * fill.size() > kMaxStringBytes)
        render_fail("the padded string is too long");
    const int64_t pad = width - n;
    // center: CPython puts the odd space on the left when the width is odd.
    const int64_t left = where < 0 ? 0 : where > 0 ? pad : pad / 2 + (pad & width & 1);
    std::string out;
    for (int64_t i = 0; i < left; ++i) out += fill;
    out += self.str();
    for (int64_t i = left; i < pad; ++i) out += fill;
    return Value(std::move(out));
}

Value str_partition(const Value &self, CallArgs &args, bool from_right) {
    const BoundArgs a(args, from_right ? "rpartition" : "partition", {"sep"});
    const std::string &sep = string_arg(a.get(0), "sep");
    if (sep.empty()) render_fail("empty separator");
    const std::string &s = self.str();
    const size_t hit = from_right ? s.rfind(sep) : s.find(sep);
    if (hit == std::string::npos) {
        return from_right ? Value::tuple({Value(""), Value(""), self})
                          : Value::tuple({self, Value(""), Value("")});
    }
    return Value::tuple({Value(s.substr(0, hit)), Value(sep), Value(s.substr(hit + sep.size()))});
}

Value str_splitlines(const Value &self, CallArgs &args) {
    const BoundArgs a(args, "splitlines", {"keepends"});
    const bool keep = a.get(0) && truthy(*a.get(0));
    const std::string &s = self.str();
    std::vector<Value> lines;
    size_t begin = 0;
    for (size_t i = 0; i < s.size();) {
        const CodePoint cp = decode_code_point(s, i);
        const uint32_t c = cp.value;
        const bool is_break = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C ||
                              c == 0x1D || c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029;
        if (!is_break || (cp.length == 1 && c >= 0x80)) {
            i += cp.length;
            continue;
        }
        size_t end = i + cp.length;
        if (c == '\r' && end < s.size() && s[end] == '\n') ++end;
        lines.emplace_back(s.substr(begin, (keep ? end : i) - begin));
        begin = i = end;
    }
    if (begin < s.size()) lines.emplace_back(s.substr(begin));
    return Value::list(std::move(lines));
}

const std::unordered_map<std::string, Method> &string_methods() {
    static const std::unordered_map<std::string, Method> table = {
        {"startswith", [](const Value &s, CallArgs &a) { return str_starts_or_ends(s, a, false); }},
        {"endswith", [](const Value &s, CallArgs &a) { return str_starts_or_ends(s, a, true); }},
        {"split", [](const Value &s, CallArgs &a) { return str_split(s, a, false); }},
        {"rsplit", [](const Value &s, CallArgs &a) { return str_split(s, a, true); }},
        {"strip", [](const Value &s, CallArgs &a) { return str_strip(s, a, "strip", true, true); }},
        {"lstrip", [](const Value &s, CallArgs &a) { return str_strip(s, a, "lstrip", true, false); }},
        {"rstrip", [](const Value &s, CallArgs &a) { return str_strip(s, a, "rstrip", false, true); }},
        {"upper", [](const Value &s, CallArgs &a) { BoundArgs(a, "upper", {}); return Value(to_upper(s.str())); }},
        {"lower", [](const Value &s, CallArgs &a) { BoundArgs(a, "lower", {}); return Value(to_lower(s.str())); }},
        {"casefold", [](const Value &s, CallArgs &a) { BoundArgs(a, "casefold", {}); return Value(to_lower(s.str())); }},
        {"title", [](const Value &s, CallArgs &a) { BoundArgs(a, "title", {}); return Value(to_title(s.str())); }},
        {"capitalize", [](const Value &s, CallArgs &a) { BoundArgs(a, "capitalize", {}); return Value(capitalize(s.str())); }},
        {"swapcase", [](const Value &s, CallArgs &a) {
             BoundArgs(a, "swapcase", {});
             std::string out;
             for (size_t i = 0; i < s.str().size();) {
                 const CodePoint cp = decode_code_point(s.str(), i);
                 const std::string one = s.str().substr(i, cp.length);
                 const std::string up = to_upper(one);
                 out += up != one ? up : to_lower(one);
                 i += cp.length;
             }
             return Value(std::move(out));
         }},
        {"replace", [](const Value &s, CallArgs &a) {
             const BoundArgs b(a, "replace", {"old", "new", "count"});
             std::string out = replace(s.str(), string_arg(b.get(0), "old"), string_arg(b.get(1), "new"),
                                       int_arg(b.get(2), -1, "count"));
             if (out.size() > kMaxStringBytes) render_fail("the replaced string is too long");
             a.budget.charge_bytes(out.size());
             return Value(std::move(out));
         }},
        {"find", [](const Value &s, CallArgs &a) { return str_find(s, a, "find", false, false); }},
        {"rfind", [](const Value &s, CallArgs &a) { return str_find(s, a, "rfind", true, false); }},
        {"index", [](const Value &s, CallArgs &a) { return str_find(s, a, "index", false, true); }},
        {"rindex", [](const Value &s, CallArgs &a) { return str_find(s, a, "rindex", true, true); }},
        {"count", [](const Value &s, CallArgs &a) {
             const BoundArgs b(a, "count", {"sub", "start", "end"});
             const std::string &sub = string_arg(b.get(0), "sub");
             const auto [begin, end] = byte_range(s.str(), b.get(1), b.get(2));
             const std::string_view part = std::string_view(s.str()).substr(begin, end - begin);
             if (sub.empty()) return Value(int64_t(code_point_count(part) + 1));
             int64_t n = 0;
             for (size_t at = part.find(sub); at != std::string_view::npos; at = part.find(sub, at + sub.size())) ++n;
             return Value(n);
         }},
        {"format", [](const Value &s, CallArgs &a) { return Value(python_format(s.str(), a)); }},
        {"join", [](const Value &s, CallArgs &a) {
             const BoundArgs b(a, "join", {"iterable"});
             if (b.get(0) == nullptr) render_fail("join() takes exactly one argument");
             std::string out;
             bool first = true;
             for (const Value &v : iterate(*b.get(0))) {
                 if (!v.is_string()) render_fail(fmt::format("sequence item: expected str instance, {} found", v.type_name()));
                 if (!first) out += s.str();
                 first = false;
                 out += v.str();
                 if (out.size() > kMaxStringBytes) render_fail("the joined string is too long");
             }
             a.budget.charge_bytes(out.size());
             return Value(std::move(out));
         }},
        {"isdigit", [](const Value &s, CallArgs &) { return str_all(s, is_ascii_digit); }},
        {"isdecimal", [](const Value &s, CallArgs &) { return str_all(s, is_ascii_digit); }},
        {"isnumeric", [](const Value &s, CallArgs &) { return str_all(s, is_ascii_digit); }},
        {"isalpha", [](const Value &s, CallArgs &) { return str_all(s, is_ascii_alpha); }},
        {"isalnum", [](const Value &s, CallArgs &) {
             return str_all(s, [](uint32_t c) { return is_ascii_alpha(c) || is_ascii_digit(c); });
         }},
        {"isspace", [](const Value &s, CallArgs &) { return str_all(s, is_space); }},
        {"islower", [](const Value &s, CallArgs &) {
             return Value(to_lower(s.str()) == s.str() && to_upper(s.str()) != s.str());
         }},
        {"isupper", [](const Value &s, CallArgs &) {
             return Value(to_upper(s.str()) == s.str() && to_lower(s.str()) != s.str());
         }},
        {"center", [](const Value &s, CallArgs &a) { return str_pad(s, a, "center", 0); }},
        {"ljust", [](const Value &s, CallArgs &a) { return str_pad(s, a, "ljust", -1); }},
        {"rjust", [](const Value &s, CallArgs &a) { return str_pad(s, a, "rjust", 1); }},
        {"zfill", [](const Value &s, CallArgs &a) {
             const BoundArgs b(a, "zfill", {"width"});
             const int64_t width = int_arg(b.get(0), 0, "width");
             const std::string &str = s.str();
             const int64_t n = int64_t(code_point_count(str));
             if (width <= n) return s;
             if (uint64_t(width) > kMaxStringBytes) render_fail("the padded string is too long");
             const size_t sign = !str.empty() && (str[0] == '-' || str[0] == '+') ? 1 : 0;
             return Value(str.substr(0, sign) + std::string(size_t(width - n), '0') + str.substr(sign));
         }},
        {"partition", [](const Value &s, CallArgs &a) { return str_partition(s, a, false); }},
        {"rpartition", [](const Value &s, CallArgs &a) { return str_partition(s, a, true); }},
        {"splitlines", str_splitlines},
        {"removeprefix", [](const Value &s, CallArgs &a) {
             const BoundArgs b(a, "removeprefix", {"prefix"});
             const std::string &p = string_arg(b.get(0), "prefix");
             return s.str().compare(0, p.size(), p) == 0 ? Value(s.str().substr(p.size())) : s;
         }},
        {"removesuffix", [](const Value &s, CallArgs &a) {
             const BoundArgs b(a, "removesuffix", {"suffix"});
             const std::string &p = string_arg(b.get(0), "suffix");
             const std::string &str = s.str();
             const bool ends = !p.empty() && str.size() >= p.size() && str.compare(str.size() - p.size(), p.size(), p) == 0;
             return ends ? Value(str.substr(0, str.size() - p.size())) : s;
         }},
    };
    return table;
}

Value list_index(const Value &self, CallArgs &args) {
    const BoundArgs a(args, "index", {"value", "start", "end"});
    if (a.get(0) == nullptr) render_fail("index expected at least 1 argument");
    const auto &items = self.items();
    const int64_t n = int64_t(items.size());
    const auto clamp = [&](int64_t i) {
        return i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n);
    };
    const int64_t begin = clamp(int_arg(a.get(1), 0, "start")),
                  end = clamp(int_arg(a.get(2), n, "end"));
    for (int64_t i = begin; i < end; ++i) {
        if (equals(items[size_t(i)], *a.get(0), args.budget)) return Value(i);
    }
    render_fail(fmt::format("{} is not in list", repr(*a.get(0), args.budget)));
}

const std::unordered_map<std::string, Method> &list_methods() {
    static const std::unordered_map<std::string, Method> table = {
        {"index", list_index},
        {"count",
         [](const Value &s, CallArgs &a) {
             const BoundArgs b(a, "count", {"value"});
             if (b.get(0) == nullptr) render_fail("count() takes exactly one argument");
             int64_t n = 0;
             for (const Value &v : s.items()) n += equals(v, *b.get(0), a.budget) ? 1 : 0;
             return Value(n);
         }},
        {"copy",
         [](const Value &s, CallArgs &a) {
             BoundArgs(a, "copy", {});
             return Value::list(s.items());
         }},
    };
    return table;
}

const std::unordered_map<std::string, Method> &dict_methods() {
    static const std::unordered_map<std::string, Method> table = {
        {"items",
         [](const Value &s, CallArgs &a) {
             BoundArgs(a, "items", {});
             std::vector<Value> out;
             out.reserve(s.dict().size());
             for (const auto &[k, v] : s.dict().entries()) out.push_back(Value::tuple({k, v}));
             return Value::list(std::move(out));
         }},
        {"keys",
         [](const Value &s, CallArgs &a) {
             BoundArgs(a, "keys", {});
             return Value::list(iterate(s));
         }},
        {"values",
         [](const Value &s, CallArgs &a) {
             BoundArgs(a, "values", {});
             std::vector<Value> out;
             out.reserve(s.dict().size());
             for (const auto &entry : s.dict().entries()) out.push_back(entry.second);
             return Value::list(std::move(out));
         }},
        {"get",
         [](const Value &s, CallArgs &a) {
             const BoundArgs b(a, "get", {"key", "default"});
             if (b.get(0) == nullptr) render_fail("get expected at least 1 argument");
             const Value *v = s.dict().find(*b.get(0));
             return v ? *v : b.get_or(1, Value::none());
         }},
        {"copy",
         [](const Value &s, CallArgs &a) {
             BoundArgs(a, "copy", {});
             return s;
         }},
    };
    return table;
}

bool is_mutating(const Value &self, const std::string &name) {
    static const char *const kList[] = {"append", "clear",  "extend",  "insert",
                                        "pop",    "remove", "reverse", "sort"};
    static const char *const kDict[] = {"clear", "pop", "popitem", "setdefault", "update"};
    if (self.is_list() && !self.is_tuple()) {
        return std::find(std::begin(kList), std::end(kList), name) != std::end(kList);
    }
    if (self.is_dict())
        return std::find(std::begin(kDict), std::end(kDict), name) != std::end(kDict);
    return false;
}

}  // namespace

std::optional<Value> bound_method(const Value &object, const std::string &name) {
    if ((!name.empty() && name[0] == '_') || is_mutating(object, name)) {
        return Value::undefined(fmt::format("access to attribute '{}' of '{}' object is unsafe.",
                                            name, object.type_name()));
    }
    const std::unordered_map<std::string, Method> *table = object.is_string() ? &string_methods()
                                                           : object.is_list() ? &list_methods()
                                                           : object.is_dict() ? &dict_methods()
                                                                              : nullptr;
    if (table == nullptr) return std::nullopt;
    const auto it = table->find(name);
    if (it == table->end()) return std::nullopt;
    const Method method = it->second;
    return Value::function(name, [object, method](CallArgs &args) { return method(object, args); });
}

}  // namespace loom::engine::jinja
