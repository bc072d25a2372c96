// Python's two string formatting languages: str.format ("{} {0} {name!r:>10.2f}") and printf-style
// "%s %05.2f %(name)s" % args. Format specs take fill, align, sign, zero padding, width,
// precision and the types s d i f F e E g G x X o b c %.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/jinja/builtins.h"
#include "engine/jinja/text.h"

namespace loom::engine::jinja {
namespace {

struct Spec {
    std::string fill = " ";
    char align = '\0';  // '<', '>', '^', '=' or none (the type's default)
    char sign = '-';
    bool alternate = false;
    bool zero = false;
    int64_t width = 0;
    int64_t precision = -1;
    char type = '\0';
};

int64_t read_number(std::string_view s, size_t &i) {
    int64_t n = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
        n = n * 10 + (s[i++] - '0');
        if (n > int64_t(kMaxStringBytes)) render_fail("a format width or precision is too large");
    }
    return n;
}

// [[fill]align][sign][#][0][width][,][.precision][type]
Spec parse_spec(std::string_view s) {
    Spec spec;
    size_t i = 0;
    const auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
    if (!s.empty()) {
        const size_t first = decode_code_point(s, 0).length;
        if (first < s.size() && is_align(s[first])) {
            spec.fill = std::string(s.substr(0, first));
            spec.align = s[first];
            i = first + 1;
        } else if (is_align(s[0])) {
            spec.align = s[0];
            i = 1;
        }
    }
    if (i < s.size() && (s[i] == '+' || s[i] == '-' || s[i] == ' ')) spec.sign = s[i++];
    if (i < s.size() && s[i] == '#') spec.alternate = (++i, true);
    if (i < s.size() && s[i] == '0') spec.zero = (++i, true);
    spec.width = read_number(s, i);
    if (i < s.size() && s[i] == ',') ++i;
    if (i < s.size() && s[i] == '.') {
        ++i;
        spec.precision = read_number(s, i);
    }
    if (i < s.size()) spec.type = s[i++];
    if (i != s.size()) render_fail(fmt::format("invalid format specifier '{}'", s));
    return spec;
}

std::string pad(std::string body, const Spec &spec, bool numeric) {
    const int64_t n = int64_t(code_point_count(body));
    if (spec.width <= n) return body;
    const int64_t missing = spec.width - n;
    char align = spec.align ? spec.align : numeric ? '>' : '<';
    std::string fill = spec.fill;
    if (spec.zero && !spec.align && numeric) {
        align = '=';
        fill = "0";
    }
    const auto repeat = [&](int64_t k) {
        std::string out;
        for (int64_t j = 0; j < k; ++j) out += fill;
        return out;
    };
    if (align == '<') return body + repeat(missing);
    if (align == '>') return repeat(missing) + body;
    if (align == '^') return repeat(missing / 2) + body + repeat(missing - missing / 2);
    // '=': the padding goes after the sign.
    const size_t sign =
        !body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ') ? 1 : 0;
    return body.substr(0, sign) + repeat(missing) + body.substr(sign);
}

std::string with_sign(std::string digits, bool negative, char sign) {
    if (negative) return "-" + digits;
    if (sign == '+') return "+" + digits;
    if (sign == ' ') return " " + digits;
    return digits;
}

std::string format_number(const Value &v, const Spec &spec, Budget &budget) {
    char type = spec.type;
    if (type == '\0') type = v.is_float() ? 'r' : 'd';
    if (type == 'd' || type == 'x' || type == 'X' || type == 'o' || type == 'b' || type == 'c') {
        if (v.is_float())
            render_fail(fmt::format("unknown format code '{}' for object of type 'float'", type));
        const int64_t x = v.to_int();
        const uint64_t mag = x < 0 ? uint64_t(0) - uint64_t(x) : uint64_t(x);
        std::string digits;
        if (type == 'c') {
            if (x < 0 || x > 0x10FFFF) render_fail("%c arg not in range(0x110000)");
            append_utf8(digits, uint32_t(x));
            return digits;
        }
        digits = type == 'd'   ? fmt::format("{}", mag)
                 : type == 'x' ? fmt::format("{:x}", mag)
                 : type == 'X' ? fmt::format("{:X}", mag)
                 : type == 'o' ? fmt::format("{:o}", mag)
                               : fmt::format("{:b}", mag);
        if (spec.alternate && type != 'd')
            digits = std::string("0") + (type == 'X' ? 'X' : type) + digits;
        return with_sign(digits, x < 0, spec.sign);
    }
    const double x = v.to_double();
    if (type == 'r') return with_sign(float_repr(std::fabs(x)), std::signbit(x), spec.sign);
    const int64_t precision = spec.precision < 0 ? 6 : spec.precision;
    if (precision > 512) render_fail("a format precision is too large");
    double shown = std::fabs(x);
    char c = type;
    std::string suffix;
    if (type == '%') {
        shown *= 100;
        c = 'f';
        suffix = "%";
    } else if (type == 'n') {
        c = 'g';
    } else if (std::string_view("fFeEgG").find(type) == std::string_view::npos) {
        render_fail(fmt::format("unknown format code '{}' for a number", type));
    }
    char format[16];
    std::snprintf(format, sizeof(format), "%%%s.%d%c", spec.alternate ? "#" : "", int(precision),
                  c);
    std::string digits(size_t(precision) + 400, '\0');
    digits.resize(size_t(std::snprintf(digits.data(), digits.size(), format, shown)));
    budget.charge_bytes(digits.size());
    return with_sign(digits + suffix, std::signbit(x) && !std::isnan(x), spec.sign);
}

std::string format_value(const Value &v, std::string_view spec_text, Budget &budget) {
    if (spec_text.empty()) return to_str(v, budget);
    const Spec spec = parse_spec(spec_text);
    if (v.is_number() && spec.type != 's') return pad(format_number(v, spec, budget), spec, true);
    if (spec.type != '\0' && spec.type != 's') {
        render_fail(fmt::format("unknown format code '{}' for object of type '{}'", spec.type,
                                v.type_name()));
    }
    std::string s = to_str(v, budget);
    if (spec.precision >= 0) {
        const std::vector<size_t> at = code_point_offsets(s);
        if (size_t(spec.precision) + 1 < at.size()) s.resize(at[size_t(spec.precision)]);
    }
    return pad(std::move(s), spec, false);
}

// A str.format field's value: an argument by index or name, then .attr and [key] steps.
Value field_value(std::string_view field, const CallArgs &args, size_t &next_auto, Budget &budget) {
    size_t end = 0;
    while (end < field.size() && field[end] != '.' && field[end] != '[') ++end;
    const std::string_view first = field.substr(0, end);
    Value v;
    if (first.empty() || (first[0] >= '0' && first[0] <= '9')) {
        size_t i = 0;
        const size_t index = first.empty() ? next_auto++ : size_t(read_number(first, i));
        if (!first.empty() && i != first.size())
            render_fail(fmt::format("bad format field '{}'", field));
        if (index >= args.positional.size()) {
            render_fail(
                fmt::format("Replacement index {} out of range for positional args tuple", index));
        }
        v = args.positional[index];
    } else {
        const auto it = std::find_if(args.keywords.begin(), args.keywords.end(),
                                     [&](const auto &kw) { return kw.first == first; });
        if (it == args.keywords.end()) render_fail(fmt::format("KeyError: '{}'", first));
        v = it->second;
    }
    while (end < field.size()) {
        if (field[end] == '.') {
            size_t stop = end + 1;
            while (stop < field.size() && field[stop] != '.' && field[stop] != '[') ++stop;
            v = get_attribute(v, std::string(field.substr(end + 1, stop - end - 1)));
            end = stop;
        } else {
            const size_t close = field.find(']', end);
            if (close == std::string_view::npos) render_fail("missing ']' in format string");
            const std::string key(field.substr(end + 1, close - end - 1));
            size_t i = 0;
            const bool numeric =
                !key.empty() && key.find_first_not_of("0123456789") == std::string::npos;
            v = get_item(v, numeric ? Value(read_number(key, i)) : Value(key), budget);
            end = close + 1;
        }
    }
    return v;
}

}  // namespace

std::string python_format(const std::string &format, const CallArgs &args) {
    std::string out;
    size_t next_auto = 0;
    for (size_t i = 0; i < format.size();) {
        const char c = format[i];
        if (c == '}') {
            if (i + 1 < format.size() && format[i + 1] == '}') {
                out += '}';
                i += 2;
                continue;
            }
            render_fail("Single '}' encountered in format string");
        }
        if (c != '{') {
            out += c;
            ++i;
            continue;
        }
        if (i + 1 < format.size() && format[i + 1] == '{') {
            out += '{';
            i += 2;
            continue;
        }
        const size_t close = format.find('}', i);
        if (close == std::string::npos) render_fail("Single '{' encountered in format string");
        std::string_view field(format.data() + i + 1, close - i - 1);
        std::string_view spec;
        if (const size_t colon = field.find(':'); colon != std::string_view::npos) {
            spec = field.substr(colon + 1);
            field = field.substr(0, colon);
        }
        char conversion = '\0';
        if (const size_t bang = field.find('!'); bang != std::string_view::npos) {
            if (bang + 2 != field.size()) render_fail("a format conversion must be one character");
            conversion = field[bang + 1];
            field = field.substr(0, bang);
        }
        Value v = field_value(field, args, next_auto, args.budget);
        if (conversion == 'r' || conversion == 'a') {
            v = Value(repr(v, args.budget));
        } else if (conversion == 's') {
            v = Value(to_str(v, args.budget));
        } else if (conversion != '\0') {
            render_fail(fmt::format("Unknown conversion specifier {}", conversion));
        }
        out += format_value(v, spec, args.budget);
        if (out.size() > kMaxStringBytes) render_fail("the formatted string is too long");
        i = close + 1;
    }
    args.budget.charge_bytes(out.size());
    return out;
}

std::string percent_format(const std::string &format, const Value &args, Budget &budget) {
    const std::vector<Value> positional = args.is_tuple() ? args.items() : std::vector<Value>{args};
    size_t next = 0;
    std::string out;
    for (size_t i = 0; i < format.size();) {
        if (format[i] != '%') {
            out += format[i++];
            continue;
        }
        ++i;
        if (i < format.size() && format[i] == '%') {
            out += '%';
            ++i;
            continue;
        }
        const Value *value = nullptr;
        Value keyed;
        if (i < format.size() && format[i] == '(') {
            const size_t close = format.find(')', i);
            if (close == std::string::npos || !args.is_dict())
                render_fail("format requires a mapping");
            keyed = get_item(args, Value(format.substr(i + 1, close - i - 1)), budget);
            value = &keyed;
            i = close + 1;
        }
        Spec spec;
        for (; i < format.size() &&
               std::string_view("-+ #0").find(format[i]) != std::string_view::npos;
             ++i) {
            if (format[i] == '-') spec.align = '<';
            if (format[i] == '+' || format[i] == ' ') spec.sign = format[i];
            if (format[i] == '#') spec.alternate = true;
            if (format[i] == '0') spec.zero = true;
        }
        spec.width = read_number(format, i);
        if (i < format.size() && format[i] == '.') {
            ++i;
            spec.precision = read_number(format, i);
        }
        if (i >= format.size()) render_fail("incomplete format");
        spec.type = format[i++];
        if (spec.type == 'i' || spec.type == 'u') spec.type = 'd';
        if (spec.align == '\0') spec.align = '>';
        if (spec.zero && spec.align == '>') {
            spec.align = '\0';  // zero padding after the sign, numbers only
        }
        if (value == nullptr) {
            if (next >= positional.size()) render_fail("not enough arguments for format string");
            value = &positional[next++];
        }
        if (spec.type == 's' || spec.type == 'r' || spec.type == 'a') {
            std::string s = spec.type == 's' ? to_str(*value, budget) : repr(*value, budget);
            spec.zero = false;
            if (spec.precision >= 0) {
                const std::vector<size_t> at = code_point_offsets(s);
                if (size_t(spec.precision) + 1 < at.size()) s.resize(at[size_t(spec.precision)]);
            }
            out += pad(std::move(s), spec, false);
        } else {
            if (!value->is_number()) {
                render_fail(fmt::format("%{} format: a real number is required, not {}", spec.type,
                                        value->type_name()));
            }
            if (spec.type == 'd' && value->is_float()) {
                if (!(std::fabs(value->as_float()) < 9.2e18))
                    render_fail("%d format: the float is out of range");
                out +=
                    pad(format_number(Value(int64_t(value->as_float())), spec, budget), spec, true);
            } else {
                out += pad(format_number(*value, spec, budget), spec, true);
            }
        }
        if (out.size() > kMaxStringBytes) render_fail("the formatted string is too long");
    }
    if (!args.is_dict() && next < positional.size()) {
        render_fail("not all arguments converted during string formatting");
    }
    budget.charge_bytes(out.size());
    return out;
}

}  // namespace loom::engine::jinja
