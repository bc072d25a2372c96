#include "engine/jinja/value.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/jinja/text.h"

namespace loom::engine::jinja {

void render_fail(const std::string &message) {
    throw RenderFailure(message);
}

void Budget::exhausted() const {
    render_fail(
        fmt::format("the render needs more than {} steps (the bound on a render's work)", steps_));
}

namespace {

// Depth and elements of a container holding `children`; RenderFailure past the bounds or for a
// namespace among them.
struct Extent {
    int depth = 1;
    int64_t elements = 1;
    void add(const Value &child) {
        if (child.is_namespace()) render_fail("a namespace cannot be put in a list or a dict");
        depth = std::max(depth, child.depth() + 1);
        elements += child.elements();
    }
    void check() const {
        if (depth > kMaxValueDepth) {
            render_fail(fmt::format("values nest more than {} deep", kMaxValueDepth));
        }
        if (elements > kMaxValueElements) {
            render_fail(fmt::format("a value reaches more than {} elements", kMaxValueElements));
        }
    }
};

Value make_list(std::vector<Value> items, bool is_tuple) {
    Extent extent;
    for (const Value &v : items) extent.add(v);
    extent.check();
    auto data = std::make_shared<ListData>();
    data->items = std::move(items);
    data->is_tuple = is_tuple;
    data->depth = extent.depth;
    data->elements = extent.elements;
    return Value::list_from(std::move(data));
}

}  // namespace

Value Value::undefined(std::string hint, bool strict) {
    Value v;
    v.data_ = Undefined{std::make_shared<const std::string>(std::move(hint)), strict};
    return v;
}

Value Value::list(std::vector<Value> items) {
    return make_list(std::move(items), false);
}
Value Value::tuple(std::vector<Value> items) {
    return make_list(std::move(items), true);
}

Value Value::list_from(std::shared_ptr<const ListData> data) {
    Value v;
    v.data_ = std::move(data);
    return v;
}

Value Value::dict(Dict dict) {
    Value v;
    v.data_ = std::make_shared<const Dict>(std::move(dict));
    return v;
}

Value Value::function(std::string name, std::function<Value(CallArgs &)> call) {
    Value v;
    v.data_ = std::make_shared<const Function>(Function{std::move(name), std::move(call)});
    return v;
}

Value Value::object(std::shared_ptr<Object> object) {
    Value v;
    v.data_ = std::move(object);
    return v;
}

const std::string &Value::undefined_hint() const {
    static const std::string kNone;
    const auto &hint = std::get<Undefined>(data_).hint;
    return hint ? *hint : kNone;
}

double Value::to_double() const {
    if (is_float()) return as_float();
    return double(to_int());
}

int Value::depth() const {
    if (is_list()) return list_data().depth;
    if (is_dict()) return dict().depth();
    return 1;
}

int64_t Value::elements() const {
    if (is_list()) return list_data().elements;
    if (is_dict()) return dict().elements();
    return 1;
}

bool Value::is_namespace() const {
    return is_object() && obj().is_namespace();
}

bool Value::same_as(const Value &other) const {
    if (kind() != other.kind()) return false;
    switch (kind()) {
        case Kind::undefined:
        case Kind::none:
            return true;
        case Kind::boolean:
            return as_bool() == other.as_bool();
        case Kind::integer:
            return as_int() == other.as_int();
        case Kind::floating:
            return as_float() == other.as_float();
        case Kind::string:
            return &str() == &other.str() || str() == other.str();
        case Kind::list:
            return &list_data() == &other.list_data();
        case Kind::dict:
            return &dict() == &other.dict();
        case Kind::function:
            return &func() == &other.func();
        case Kind::object:
            return &obj() == &other.obj();
    }
    return false;
}

std::string Value::type_name() const {
    switch (kind()) {
        case Kind::undefined:
            return "Undefined";
        case Kind::none:
            return "NoneType";
        case Kind::boolean:
            return "bool";
        case Kind::integer:
            return "int";
        case Kind::floating:
            return "float";
        case Kind::string:
            return "str";
        case Kind::list:
            return is_tuple() ? "tuple" : "list";
        case Kind::dict:
            return "dict";
        case Kind::function:
            return "function";
        case Kind::object:
            return obj().type_name();
    }
    return "?";
}

std::string hash_key(const Value &key) {
    switch (key.kind()) {
        case Value::Kind::string:
            return "s" + key.str();
        case Value::Kind::boolean:
        case Value::Kind::integer:
            return fmt::format("n{}", key.to_int());
        case Value::Kind::floating: {
            // An integral float is the same key as the int (1.0 and 1).
            const double f = key.as_float();
            if (std::floor(f) == f && std::fabs(f) < 9.2e18) return fmt::format("n{}", int64_t(f));
            return "f" + float_repr(f);
        }
        case Value::Kind::none:
            return "N";
        case Value::Kind::undefined:
            // Jinja2's Undefined hashes, and every undefined equals every other.
            return "U";
        case Value::Kind::list:
            if (key.is_tuple()) {
                std::string out = "t";
                for (const Value &v : key.items()) {
                    const std::string part = hash_key(v);
                    out += fmt::format("{}:{}", part.size(), part);
                }
                return out;
            }
            break;
        default:
            break;
    }
    render_fail(fmt::format("unhashable type: '{}'", key.type_name()));
}

const Value *Dict::find(const Value &key) const {
    const auto it = index_.find(hash_key(key));
    return it == index_.end() ? nullptr : &entries_[it->second].second;
}

const Value *Dict::find(std::string_view key) const {
    std::string hashed;
    hashed.reserve(key.size() + 1);
    hashed += 's';
    hashed += key;
    const auto it = index_.find(hashed);
    return it == index_.end() ? nullptr : &entries_[it->second].second;
}

void Dict::set(const Value &key, Value value) {
    Extent extent{depth_, elements_};
    extent.add(value);
    std::string hashed = hash_key(key);
    const auto it = index_.find(hashed);
    if (it != index_.end()) {
        extent.elements -= entries_[it->second].second.elements();
        extent.check();
        entries_[it->second].second = std::move(value);
        // Depth only shrinks by a replacement's removal when it was the deepest: recompute.
        extent.depth = 1;
        for (const auto &[k, v] : entries_) {
            extent.depth = std::max({extent.depth, k.depth() + 1, v.depth() + 1});
        }
    } else {
        extent.add(key);
        extent.check();
        index_.emplace(std::move(hashed), entries_.size());
        entries_.emplace_back(key, std::move(value));
    }
    depth_ = extent.depth;
    elements_ = extent.elements;
}

std::string Object::repr(Budget &) const {
    return fmt::format("<{} object>", type_name());
}

Value Object::call(CallArgs &) {
    render_fail(fmt::format("'{}' object is not callable", type_name()));
}

BoundArgs::BoundArgs(const CallArgs &args, std::string_view function,
                     std::initializer_list<std::string_view> params) {
    const std::vector<std::string_view> names(params);
    values_.assign(names.size(), nullptr);
    if (args.positional.size() > names.size()) {
        render_fail(fmt::format("{}() takes at most {} argument{} ({} given)", function,
                                names.size(), names.size() == 1 ? "" : "s",
                                args.positional.size()));
    }
    for (size_t i = 0; i < args.positional.size(); ++i) values_[i] = &args.positional[i];
    for (const auto &[name, value] : args.keywords) {
        const auto it = std::find(names.begin(), names.end(), name);
        if (it == names.end()) {
            render_fail(
                fmt::format("{}() got an unexpected keyword argument '{}'", function, name));
        }
        const size_t i = size_t(it - names.begin());
        if (values_[i] != nullptr) {
            render_fail(fmt::format("{}() got multiple values for argument '{}'", function, name));
        }
        values_[i] = &value;
    }
}

bool truthy(const Value &v) {
    switch (v.kind()) {
        case Value::Kind::undefined:
        case Value::Kind::none:
            return false;
        case Value::Kind::boolean:
            return v.as_bool();
        case Value::Kind::integer:
            return v.as_int() != 0;
        case Value::Kind::floating:
            return v.as_float() != 0;
        case Value::Kind::string:
            return !v.str().empty();
        case Value::Kind::list:
            return !v.items().empty();
        case Value::Kind::dict:
            return !v.dict().empty();
        case Value::Kind::function:
        case Value::Kind::object:
            return true;
    }
    return false;
}

bool equals(const Value &a, const Value &b, Budget &budget) {
    budget.charge(1);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.to_double() == b.to_double();
        return a.to_int() == b.to_int();
    }
    if (a.kind() != b.kind()) return false;
    switch (a.kind()) {
        case Value::Kind::string:
            return a.str() == b.str();
        case Value::Kind::list: {
            if (a.same_as(b)) return true;
            if (a.is_tuple() != b.is_tuple() || a.items().size() != b.items().size()) return false;
            for (size_t i = 0; i < a.items().size(); ++i) {
                if (!equals(a.items()[i], b.items()[i], budget)) return false;
            }
            return true;
        }
        case Value::Kind::dict: {
            if (a.same_as(b)) return true;
            if (a.dict().size() != b.dict().size()) return false;
            for (const auto &[key, value] : a.dict().entries()) {
                const Value *other = b.dict().find(key);
                if (other == nullptr || !equals(value, *other, budget)) return false;
            }
            return true;
        }
        default:
            return a.same_as(b);
    }
}

bool less_than(const Value &a, const Value &b, Budget &budget) {
    budget.charge(1);
    if (a.is_number() && b.is_number()) {
        if (a.is_float() || b.is_float()) return a.to_double() < b.to_double();
        return a.to_int() < b.to_int();
    }
    if (a.is_string() && b.is_string()) return a.str() < b.str();  // UTF-8 keeps code point order
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
        const auto &x = a.items(), &y = b.items();
        for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
            if (!equals(x[i], y[i], budget)) return less_than(x[i], y[i], budget);
        }
        return x.size() < y.size();
    }
    render_fail(fmt::format("'<' not supported between instances of '{}' and '{}'", a.type_name(),
                            b.type_name()));
}

bool contains(const Value &container, const Value &item, Budget &budget) {
    switch (container.kind()) {
        case Value::Kind::string:
            if (!item.is_string()) {
                render_fail(fmt::format("'in <string>' requires string as left operand, not {}",
                                        item.type_name()));
            }
            budget.charge_bytes(container.str().size());
            return container.str().find(item.str()) != std::string::npos;
        case Value::Kind::list:
            for (const Value &v : container.items()) {
                if (equals(v, item, budget)) return true;
            }
            return false;
        case Value::Kind::dict:
            return container.dict().find(item) != nullptr;
        case Value::Kind::undefined:
            return false;  // iterates as empty
        default:
            render_fail(
                fmt::format("argument of type '{}' is not iterable", container.type_name()));
    }
}

namespace {

void append_repr(std::string &out, const Value &v, Budget &budget, bool top_str);

void append_checked(std::string &out, std::string_view piece, Budget &budget) {
    if (out.size() + piece.size() > kMaxStringBytes) {
        render_fail(fmt::format("a string would be longer than {} bytes", kMaxStringBytes));
    }
    budget.charge_bytes(piece.size());
    out += piece;
}

// str(v) when `top_str` (strings bare), else repr(v).
void append_repr(std::string &out, const Value &v, Budget &budget, bool top_str) {
    budget.charge(1);
    switch (v.kind()) {
        case Value::Kind::undefined:
            append_checked(out, top_str ? "" : "Undefined", budget);
            break;
        case Value::Kind::none:
            append_checked(out, "None", budget);
            break;
        case Value::Kind::boolean:
            append_checked(out, v.as_bool() ? "True" : "False", budget);
            break;
        case Value::Kind::integer:
            append_checked(out, fmt::format("{}", v.as_int()), budget);
            break;
        case Value::Kind::floating:
            append_checked(out, float_repr(v.as_float()), budget);
            break;
        case Value::Kind::string:
            append_checked(out, top_str ? v.str() : string_repr(v.str()), budget);
            break;
        case Value::Kind::list: {
            const bool tuple = v.is_tuple();
            append_checked(out, tuple ? "(" : "[", budget);
            for (size_t i = 0; i < v.items().size(); ++i) {
                if (i > 0) append_checked(out, ", ", budget);
                append_repr(out, v.items()[i], budget, false);
            }
            if (tuple && v.items().size() == 1) append_checked(out, ",", budget);
            append_checked(out, tuple ? ")" : "]", budget);
            break;
        }
        case Value::Kind::dict: {
            append_checked(out, "{", budget);
            bool first = true;
            for (const auto &[key, value] : v.dict().entries()) {
                if (!first) append_checked(out, ", ", budget);
                first = false;
                append_repr(out, key, budget, false);
                append_checked(out, ": ", budget);
                append_repr(out, value, budget, false);
            }
            append_checked(out, "}", budget);
            break;
        }
        case Value::Kind::function:
            append_checked(out, fmt::format("<function {}>", v.func().name), budget);
            break;
        case Value::Kind::object:
            append_checked(out, v.obj().repr(budget), budget);
            break;
    }
}

}  // namespace

std::string to_str(const Value &v, Budget &budget) {
    if (v.is_string()) return v.str();
    std::string out;
    append_repr(out, v, budget, true);
    return out;
}

std::string repr(const Value &v, Budget &budget) {
    std::string out;
    append_repr(out, v, budget, false);
    return out;
}

}  // namespace loom::engine::jinja
