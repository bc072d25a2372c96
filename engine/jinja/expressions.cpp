// Expression evaluation: the Interpreter's half that computes values (interpreter.h).
#include <fmt/format.h>

#include "engine/jinja/builtins.h"
#include "engine/jinja/interpreter.h"

namespace loom::engine::jinja {
namespace {

[[noreturn]] void fail_undefined(const Value &v) {
    render_fail(v.undefined_hint().empty() ? "a value is undefined" : v.undefined_hint());
}

}  // namespace

Value Interpreter::eval(const Expr &expr, Scope &scope) {
    const Nesting nesting(*this);
    try {
        budget_.charge(1);
        return eval_node(expr, scope);
    } catch (const RenderFailure &e) {
        throw TemplateError(e.what(), expr.at.line, expr.at.column, e.raised());
    }
}

Value Interpreter::eval_node(const Expr &e, Scope &scope) {
    switch (e.kind) {
        case ExprKind::literal:
            return e.value;
        case ExprKind::name: {
            const Value *v = scope.find(e.name);
            return v ? *v : Value::undefined(fmt::format("'{}' is undefined", e.name));
        }
        case ExprKind::list:
        case ExprKind::tuple: {
            std::vector<Value> items;
            items.reserve(e.items.size());
            for (const ExprPtr &item : e.items) items.push_back(eval(*item, scope));
            return e.kind == ExprKind::list ? Value::list(std::move(items))
                                            : Value::tuple(std::move(items));
        }
        case ExprKind::dict: {
            Dict dict;
            for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
                const Value key = eval(*e.items[i], scope);
                dict.set(key, eval(*e.items[i + 1], scope));
            }
            return Value::dict(std::move(dict));
        }
        case ExprKind::get_attr:
            return get_attribute(eval(*e.object, scope), e.name);
        case ExprKind::get_item: {
            const Value object = eval(*e.object, scope);
            if (e.index->kind == ExprKind::slice) {
                const auto part = [&](size_t i) {
                    const Expr *p = e.index->items[i].get();
                    return p ? eval(*p, scope) : Value::none();
                };
                const Value start = part(0), stop = part(1), step = part(2);
                return slice(object, start, stop, step);
            }
            return get_item(object, eval(*e.index, scope), budget_);
        }
        case ExprKind::slice:
            render_fail("a slice outside of a subscript");
        case ExprKind::call:
            return eval_call(e, scope, nullptr);
        case ExprKind::filter:
            return eval_filter(e, scope, nullptr);
        case ExprKind::test: {
            const Value operand = eval(*e.object, scope);
            CallArgs args = eval_args(e.args, scope);
            return Value(apply_test(e.name, operand, args));
        }
        case ExprKind::unary: {
            const Value operand = eval(*e.object, scope);
            if (e.name == "not") return Value(!truthy(operand));
            return unary_op(e.name, operand);
        }
        case ExprKind::binary: {
            // and / or give one of their operands, as Python's do.
            Value left = eval(*e.object, scope);
            if (e.name == "and") return truthy(left) ? eval(*e.index, scope) : left;
            if (e.name == "or") return truthy(left) ? left : eval(*e.index, scope);
            const Value right = eval(*e.index, scope);
            return binary_op(e.name, left, right, budget_);
        }
        case ExprKind::concat: {
            std::string text;
            for (const ExprPtr &item : e.items) {
                text += to_str(eval(*item, scope), budget_);
                if (text.size() > kMaxStringBytes) {
                    render_fail(
                        fmt::format("a string would be longer than {} bytes", kMaxStringBytes));
                }
            }
            budget_.charge_bytes(text.size());
            return Value(std::move(text));
        }
        case ExprKind::compare:
            return eval_compare(e, scope);
        case ExprKind::condition:
            if (truthy(eval(*e.index, scope))) return eval(*e.object, scope);
            if (e.other) return eval(*e.other, scope);
            return Value::undefined(
                "the inline if-expression evaluated to false and no else section was defined");
    }
    return Value();
}

Value Interpreter::eval_compare(const Expr &e, Scope &scope) {
    // a < b < c is a < b and b < c, each operand evaluated once.
    Value left = eval(*e.object, scope);
    for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.items[i], scope);
        const std::string &op = e.ops[i];
        bool result;
        if (op == "==") {
            result = equals(left, right, budget_);
        } else if (op == "!=") {
            result = !equals(left, right, budget_);
        } else if (op == "in" || op == "notin") {
            result = contains(right, left, budget_) == (op == "in");
        } else {
            if (left.is_undefined()) fail_undefined(left);
            if (right.is_undefined()) fail_undefined(right);
            if (op == "<") {
                result = less_than(left, right, budget_);
            } else if (op == ">") {
                result = less_than(right, left, budget_);
            } else if (op == "<=") {
                result = less_than(left, right, budget_) || equals(left, right, budget_);
            } else {
                result = less_than(right, left, budget_) || equals(left, right, budget_);
            }
        }
        if (!result) return Value(false);
        left = std::move(right);
    }
    return Value(true);
}

CallArgs Interpreter::eval_args(const ArgsExpr &a, Scope &scope) {
    CallArgs args{{}, {}, budget_};
    for (const ExprPtr &p : a.positional) args.positional.push_back(eval(*p, scope));
    if (a.star) {
        for (Value &v : iterate(eval(*a.star, scope))) args.positional.push_back(std::move(v));
    }
    for (const auto &[name, value] : a.keywords)
        args.keywords.emplace_back(name, eval(*value, scope));
    if (a.star_star) {
        const Value named = eval(*a.star_star, scope);
        if (!named.is_dict()) render_fail("the argument after ** must be a mapping");
        for (const auto &[key, value] : named.dict().entries()) {
            if (!key.is_string()) render_fail("keywords must be strings");
            args.keywords.emplace_back(key.str(), value);
        }
    }
    return args;
}

Value Interpreter::call_value(const Value &callee, CallArgs &args) {
    Value result;
    if (callee.is_function()) {
        result = callee.func().call(args);
    } else if (callee.is_object() && callee.obj().is_callable()) {
        result = callee.obj().call(args);
    } else if (callee.is_undefined()) {
        fail_undefined(callee);
    } else {
        render_fail(fmt::format("'{}' object is not callable", callee.type_name()));
    }
    if (result.is_string()) budget_.charge_bytes(result.str().size());
    return result;
}

Value Interpreter::eval_call(const Expr &e, Scope &scope, const Value *caller) {
    Value callee;
    const Expr &target = *e.object;
    if (target.kind == ExprKind::get_attr) {
        // A call prefers the method: d.items() is the dict's method even where d has an "items".
        const Value object = eval(*target.object, scope);
        std::optional<Value> method =
            object.is_object() ? std::nullopt : bound_method(object, target.name);
        callee = method ? std::move(*method) : get_attribute(object, target.name);
    } else {
        callee = eval(target, scope);
    }
    CallArgs args = eval_args(e.args, scope);
    if (caller != nullptr) args.keywords.emplace_back("caller", *caller);
    return call_value(callee, args);
}

Value Interpreter::eval_filter(const Expr &e, Scope &scope, const Value *input) {
    // The filter chain's innermost operand is null in {% filter %} and {% set x | f %}: `input`.
    Value operand;
    if (e.object) {
        operand = e.object->kind == ExprKind::filter ? eval_filter(*e.object, scope, input)
                                                     : eval(*e.object, scope);
    } else if (input != nullptr) {
        operand = *input;
    }
    CallArgs args = eval_args(e.args, scope);
    try {
        Value result = apply_filter(e.name, operand, args);
        if (result.is_string()) budget_.charge_bytes(result.str().size());
        return result;
    } catch (const RenderFailure &failure) {
        throw TemplateError(failure.what(), e.at.line, e.at.column, failure.raised());
    }
}

}  // namespace loom::engine::jinja
