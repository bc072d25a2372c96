// Python's arithmetic on template values: ints are 64-bit and fail on overflow instead of
// growing; / is true division, // and % floor toward negative infinity; + joins strings and
// lists, * repeats them.
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "engine/jinja/builtins.h"
#include "engine/jinja/text.h"

namespace loom::engine::jinja {
namespace {

[[noreturn]] void fail_undefined(const Value &v) {
    render_fail(v.undefined_hint().empty() ? "a value is undefined" : v.undefined_hint());
}

[[noreturn]] void unsupported(const std::string &op, const Value &a, const Value &b) {
    render_fail(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(),
                            b.type_name()));
}

[[noreturn]] void overflow() {
    render_fail("integer overflow (template integers are 64-bit)");
}

// a op b, failing on overflow (op: one of the __builtin_*_overflow functions).
template <typename Op>
int64_t checked(Op op, int64_t a, int64_t b) {
    int64_t result = 0;
    if (op(a, b, &result)) overflow();
    return result;
}
bool add_overflows(int64_t a, int64_t b, int64_t *r) {
    return __builtin_add_overflow(a, b, r);
}
bool sub_overflows(int64_t a, int64_t b, int64_t *r) {
    return __builtin_sub_overflow(a, b, r);
}
bool mul_overflows(int64_t a, int64_t b, int64_t *r) {
    return __builtin_mul_overflow(a, b, r);
}

Value repeat(const Value &sequence, int64_t times) {
    // An empty sequence stays empty however many times it is repeated (and is not looped over
    // up to 2^63 times).
    const bool empty = sequence.is_string() ? sequence.str().empty() : sequence.items().empty();
    if (times <= 0 || empty)
        return sequence.is_string()  ? Value("")
               : sequence.is_tuple() ? Value::tuple({})
                                     : Value::list({});
    if (sequence.is_string()) {
        const std::string &s = sequence.str();
        if (!s.empty() && uint64_t(times) > kMaxStringBytes / s.size()) {
            render_fail(fmt::format("a string would be longer than {} bytes", kMaxStringBytes));
        }
        std::string out;
        out.reserve(s.size() * size_t(times));
        for (int64_t i = 0; i < times; ++i) out += s;
        return Value(std::move(out));
    }
    const auto &items = sequence.items();
    if (!items.empty() && uint64_t(times) > uint64_t(kMaxValueElements) / items.size()) {
        render_fail(fmt::format("a value reaches more than {} elements", kMaxValueElements));
    }
    std::vector<Value> out;
    out.reserve(items.size() * size_t(times));
    for (int64_t i = 0; i < times; ++i) out.insert(out.end(), items.begin(), items.end());
    return sequence.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

int64_t int_pow(int64_t base, int64_t exponent) {
    int64_t result = 1;
    while (exponent > 0) {
        if (exponent & 1) result = checked(mul_overflows, result, base);
        exponent >>= 1;
        if (exponent > 0) base = checked(mul_overflows, base, base);
    }
    return result;
}

double float_mod(double a, double b) {
    double r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    if (r == 0) r = std::copysign(0.0, b);
    return r;
}

Value arithmetic(const std::string &op, const Value &a, const Value &b) {
    const bool floats = a.is_float() || b.is_float();
    if (op == "/") {
        if (b.to_double() == 0) render_fail("division by zero");
        return Value(a.to_double() / b.to_double());
    }
    if (floats) {
        const double x = a.to_double(), y = b.to_double();
        if (op == "+") return Value(x + y);
        if (op == "-") return Value(x - y);
        if (op == "*") return Value(x * y);
        if (op == "//") {
            // Python's float floor division: from the remainder, so that x == (x // y) * y +
            // x % y holds as closely as floats allow.
            if (y == 0) render_fail("float floor division by zero");
            const double mod = std::fmod(x, y);
            double div = (x - mod) / y;
            if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1.0;
            double floor_div = std::floor(div);
            if (div - floor_div > 0.5) floor_div += 1.0;
            return Value(floor_div);
        }
        if (op == "%") {
            if (y == 0) render_fail("float modulo");
            return Value(float_mod(x, y));
        }
        if (x == 0 && y < 0) render_fail("0.0 cannot be raised to a negative power");
        if (x < 0 && std::floor(y) != y) render_fail("a negative number to a fractional power");
        return Value(std::pow(x, y));
    }
    const int64_t x = a.to_int(), y = b.to_int();
    if (op == "+") return Value(checked(add_overflows, x, y));
    if (op == "-") return Value(checked(sub_overflows, x, y));
    if (op == "*") return Value(checked(mul_overflows, x, y));
    if (op == "//" || op == "%") {
        if (y == 0) render_fail("integer division or modulo by zero");
        if (x == std::numeric_limits<int64_t>::min() && y == -1) overflow();
        int64_t q = x / y, m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) {
            q -= 1;
            m += y;
        }
        return Value(op == "//" ? q : m);
    }
    // "**": a negative exponent gives a float, as in Python.
    if (y < 0) {
        if (x == 0) render_fail("0.0 cannot be raised to a negative power");
        return Value(std::pow(double(x), double(y)));
    }
    return Value(int_pow(x, y));
}

}  // namespace

Value binary_op(const std::string &op, const Value &a, const Value &b, Budget &budget) {
    if (a.is_undefined()) fail_undefined(a);
    if (b.is_undefined()) fail_undefined(b);
    if (a.is_number() && b.is_number()) return arithmetic(op, a, b);
    if (op == "+") {
        if (a.is_string() && b.is_string()) {
            if (a.str().size() + b.str().size() > kMaxStringBytes) {
                render_fail(fmt::format("a string would be longer than {} bytes", kMaxStringBytes));
            }
            budget.charge_bytes(a.str().size() + b.str().size());
            return Value(a.str() + b.str());
        }
        if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
            std::vector<Value> items = a.items();
            items.insert(items.end(), b.items().begin(), b.items().end());
            budget.charge(int64_t(items.size()));
            return a.is_tuple() ? Value::tuple(std::move(items)) : Value::list(std::move(items));
        }
        if (a.is_string() || a.is_list()) {
            render_fail(fmt::format("can only concatenate {} (not \"{}\") to {}", a.type_name(),
                                    b.type_name(), a.type_name()));
        }
        unsupported(op, a, b);
    }
    if (op == "*") {
        if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) {
            return repeat(a, b.to_int());
        }
        if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) {
            return repeat(b, a.to_int());
        }
        unsupported(op, a, b);
    }
    if (op == "%" && a.is_string()) return Value(percent_format(a.str(), b, budget));
    unsupported(op, a, b);
}

Value unary_op(const std::string &op, const Value &v) {
    if (v.is_undefined()) fail_undefined(v);
    if (v.is_float()) return Value(op == "-" ? -v.as_float() : v.as_float());
    if (v.is_int() || v.is_bool()) {
        if (op == "+") return Value(v.to_int());
        if (v.to_int() == std::numeric_limits<int64_t>::min()) overflow();
        return Value(-v.to_int());
    }
    render_fail(fmt::format("bad operand type for unary {}: '{}'", op, v.type_name()));
}

std::vector<Value> iterate(const Value &v) {
    switch (v.kind()) {
        case Value::Kind::undefined:
            return {};
        case Value::Kind::list:
            return v.items();
        case Value::Kind::dict: {
            std::vector<Value> keys;
            keys.reserve(v.dict().size());
            for (const auto &entry : v.dict().entries()) keys.push_back(entry.first);
            return keys;
        }
        case Value::Kind::string: {
            std::vector<Value> chars;
            const std::vector<size_t> at = code_point_offsets(v.str());
            chars.reserve(at.size() - 1);
            for (size_t i = 0; i + 1 < at.size(); ++i) {
                chars.emplace_back(v.str().substr(at[i], at[i + 1] - at[i]));
            }
            return chars;
        }
        default:
            render_fail(fmt::format("'{}' object is not iterable", v.type_name()));
    }
}

}  // namespace loom::engine::jinja
