// obj.name, obj[key] and obj[a:b:c], as Jinja2 resolves them, with one reconciliation of the two
// reference renderers: a dict's own key wins over a method of the same name when it is read
// (`schema.items` is the "items" entry of a JSON schema, as @huggingface/jinja reads it), the
// method when it is called (`d.items()`, as Jinja2 calls it). The interpreter asks bound_method
// first for calls.
//
// Undefined is lenient here: undefined.name and undefined["key"] are undefined again (Jinja2
// raises, @huggingface/jinja does not; where they differ the expected output is the one that
// rendered). Where both fail, Loom fails too:
// * undefined[0] and undefined[a:b] (@huggingface/jinja takes only string keys into undefined,
//   and slices only lists and strings);
// * reading further into none[0], d[0] of a dict without that key, 5[0]...: Jinja2 makes them
//   undefined, and fails on the next .name or [key]; @huggingface/jinja fails at once (a number
//   indexes only lists and strings). So these undefined values are strict.
// Using an undefined value for arithmetic, a call or iteration of none still fails.
#include <fmt/format.h>

#include "engine/jinja/builtins.h"
#include "engine/jinja/text.h"

namespace loom::engine::jinja {
namespace {

// Jinja2's object_type_repr: "dict object", "None", ...
std::string object_type(const Value &v) {
    if (v.is_none()) return "None";
    return v.type_name() + " object";
}

Value missing_attribute(const Value &object, const std::string &name) {
    return Value::undefined(fmt::format("'{}' has no attribute '{}'", object_type(object), name));
}

[[noreturn]] void fail_undefined(const Value &undefined) {
    const std::string &hint = undefined.undefined_hint();
    render_fail(hint.empty() ? "a value is undefined" : hint);
}

// A list's or string's element out of range, or (strict) a key that is not a string into anything
// else.
Value missing_element(const Value &object, const Value &key, Budget &budget, bool strict) {
    return Value::undefined(
        fmt::format("{} has no element {}", object_type(object), repr(key, budget)), strict);
}

// Python's index into a sequence of n: negative from the end; std::nullopt out of range.
std::optional<size_t> sequence_index(int64_t index, size_t n) {
    if (index < 0) index += int64_t(n);
    if (index < 0 || uint64_t(index) >= n) return std::nullopt;
    return size_t(index);
}

// PySlice_AdjustIndices: the start, stop and step over a sequence of n.
struct SliceRange {
    int64_t start, stop, step;
};

SliceRange slice_range(size_t n, const Value &start, const Value &stop, const Value &step) {
    const auto as_index = [](const Value &v) -> std::optional<int64_t> {
        if (v.is_none() || v.is_undefined()) return std::nullopt;
        if (!v.is_int() && !v.is_bool()) {
            render_fail("slice indices must be integers or None");
        }
        return v.to_int();
    };
    const int64_t len = int64_t(n);
    const int64_t s = as_index(step).value_or(1);
    if (s == 0) render_fail("slice step cannot be zero");
    const auto clamp = [&](std::optional<int64_t> i, int64_t fallback) {
        if (!i) return fallback;
        int64_t x = *i;
        if (x < 0) {
            x += len;
            if (x < 0) x = s < 0 ? -1 : 0;
        } else if (x >= len) {
            x = s < 0 ? len - 1 : len;
        }
        return x;
    };
    return {clamp(as_index(start), s < 0 ? len - 1 : 0), clamp(as_index(stop), s < 0 ? -1 : len),
            s};
}

}  // namespace

Value get_attribute(const Value &object, const std::string &name) {
    if (object.is_undefined()) {
        if (object.undefined_is_strict()) fail_undefined(object);
        return object;
    }
    if (object.is_dict()) {
        if (const Value *v = object.dict().find(name)) return *v;
    }
    if (object.is_object()) {
        if (std::optional<Value> v = object.obj().attribute(name)) return *v;
        return missing_attribute(object, name);
    }
    if (std::optional<Value> method = bound_method(object, name)) return *method;
    return missing_attribute(object, name);
}

Value get_item(const Value &object, const Value &key, Budget &budget) {
    switch (object.kind()) {
        case Value::Kind::undefined:
            if (object.undefined_is_strict() || !key.is_string()) fail_undefined(object);
            return object;
        case Value::Kind::dict:
            if (key.is_list() && !key.is_tuple()) render_fail("unhashable type: 'list'");
            if (key.is_dict()) render_fail("unhashable type: 'dict'");
            if (const Value *v = object.dict().find(key)) return *v;
            break;
        case Value::Kind::list:
            if (key.is_int() || key.is_bool()) {
                const auto i = sequence_index(key.to_int(), object.items().size());
                return i ? object.items()[*i] : missing_element(object, key, budget, false);
            }
            break;
        case Value::Kind::string:
            if (key.is_int() || key.is_bool()) {
                const std::string &s = object.str();
                if (is_ascii(s)) {
                    const auto i = sequence_index(key.to_int(), s.size());
                    return i ? Value(s.substr(*i, 1)) : missing_element(object, key, budget, false);
                }
                const std::vector<size_t> at = code_point_offsets(s);
                const auto i = sequence_index(key.to_int(), at.size() - 1);
                if (!i) return missing_element(object, key, budget, false);
                return Value(s.substr(at[*i], at[*i + 1] - at[*i]));
            }
            break;
        default:
            break;
    }
    // obj["name"] falls back to the attribute, as Jinja2's getitem does.
    if (key.is_string()) {
        if (object.is_object()) {
            if (std::optional<Value> v = object.obj().attribute(key.str())) return *v;
        } else if (std::optional<Value> method = bound_method(object, key.str())) {
            return *method;
        }
        return missing_attribute(object, key.str());
    }
    return missing_element(object, key, budget, true);
}

Value slice(const Value &object, const Value &start, const Value &stop, const Value &step) {
    if (object.is_undefined()) fail_undefined(object);
    if (object.is_list()) {
        const auto &items = object.items();
        const SliceRange r = slice_range(items.size(), start, stop, step);
        std::vector<Value> out;
        for (int64_t i = r.start; r.step > 0 ? i < r.stop : i > r.stop; i += r.step) {
            out.push_back(items[size_t(i)]);
        }
        return object.is_tuple() ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
    if (object.is_string()) {
        const std::string &s = object.str();
        const std::vector<size_t> at = code_point_offsets(s);
        const SliceRange r = slice_range(at.size() - 1, start, stop, step);
        std::string out;
        if (r.step == 1) {
            if (r.stop > r.start)
                out = s.substr(at[size_t(r.start)], at[size_t(r.stop)] - at[size_t(r.start)]);
            return Value(std::move(out));
        }
        for (int64_t i = r.start; r.step > 0 ? i < r.stop : i > r.stop; i += r.step) {
            out += s.substr(at[size_t(i)], at[size_t(i) + 1] - at[size_t(i)]);
        }
        return Value(std::move(out));
    }
    render_fail(fmt::format("'{}' object is not subscriptable", object.type_name()));
}

}  // namespace loom::engine::jinja
