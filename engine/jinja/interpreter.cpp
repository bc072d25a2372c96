#include "engine/jinja/interpreter.h"

#include <fmt/format.h>

#include "engine/jinja/builtins.h"
#include "engine/jinja/namespace.h"
#include "engine/jinja/parser.h"

namespace loom::engine::jinja {
namespace {

// Whether `name` is read anywhere in the statements: a macro takes extra positional arguments
// only when its body reads `varargs`, extra keyword arguments only when it reads `kwargs`.
bool reads_name(const Expr *e, const std::string &name) {
    if (e == nullptr) return false;
    if (e->kind == ExprKind::name && e->name == name) return true;
    if (reads_name(e->object.get(), name) || reads_name(e->index.get(), name) ||
        reads_name(e->other.get(), name) || reads_name(e->args.star.get(), name) ||
        reads_name(e->args.star_star.get(), name)) {
        return true;
    }
    for (const ExprPtr &item : e->items) {
        if (reads_name(item.get(), name)) return true;
    }
    for (const ExprPtr &arg : e->args.positional) {
        if (reads_name(arg.get(), name)) return true;
    }
    for (const auto &kw : e->args.keywords) {
        if (reads_name(kw.second.get(), name)) return true;
    }
    return false;
}

bool reads_name(const Body &body, const std::string &name) {
    for (const StmtPtr &s : body) {
        if (reads_name(s->expr.get(), name) || reads_name(s->filter.get(), name) ||
            reads_name(s->body, name) || reads_name(s->else_body, name)) {
            return true;
        }
        for (const IfBranch &b : s->branches) {
            if (reads_name(b.test.get(), name) || reads_name(b.body, name)) return true;
        }
        for (const Param &p : s->params) {
            if (reads_name(p.default_value.get(), name)) return true;
        }
        for (const auto &a : s->assignments) {
            if (reads_name(a.second.get(), name)) return true;
        }
    }
    return false;
}

// The `loop` variable of a for loop: Jinja2's LoopContext over the (filtered) items.
class LoopObject : public Object {
  public:
    LoopObject(std::vector<Value> items, int depth0, std::function<Value(CallArgs &)> recurse)
        : items_(std::move(items)), depth0_(depth0), recurse_(std::move(recurse)) {}

    void set_index(size_t index0) { index0_ = index0; }
    std::string type_name() const override { return "LoopContext"; }
    bool is_callable() const override { return bool(recurse_); }
    Value call(CallArgs &args) override {
        if (!recurse_) render_fail("the loop is not recursive: declare it `for ... recursive`");
        return recurse_(args);
    }
    std::string repr(Budget &) const override {
        return fmt::format("<LoopContext {}/{}>", index0_ + 1, items_.size());
    }

    std::optional<Value> attribute(const std::string &name) override {
        const auto n = int64_t(items_.size()), i = int64_t(index0_);
        if (name == "index") return Value(i + 1);
        if (name == "index0") return Value(i);
        if (name == "revindex") return Value(n - i);
        if (name == "revindex0") return Value(n - i - 1);
        if (name == "first") return Value(i == 0);
        if (name == "last") return Value(i == n - 1);
        if (name == "length") return Value(n);
        if (name == "depth") return Value(depth0_ + 1);
        if (name == "depth0") return Value(depth0_);
        if (name == "previtem") {
            return i > 0 ? items_[size_t(i - 1)] : Value::undefined("there is no previous item");
        }
        if (name == "nextitem") {
            return i + 1 < n ? items_[size_t(i + 1)] : Value::undefined("there is no next item");
        }
        if (name == "cycle") {
            return Value::function("cycle", [i](CallArgs &args) {
                if (args.positional.empty()) render_fail("no items for cycling given");
                return args.positional[size_t(i) % args.positional.size()];
            });
        }
        if (name == "changed") {
            return Value::function("changed", [last = last_changed_](CallArgs &args) {
                const Value now = Value::list(args.positional);
                const bool changed = !*last || !equals(**last, now, args.budget);
                *last = now;
                return Value(changed);
            });
        }
        return std::nullopt;
    }

  private:
    std::vector<Value> items_;
    size_t index0_ = 0;
    int depth0_;
    std::function<Value(CallArgs &)> recurse_;
    // What loop.changed() last saw; shared with the functions it hands out, which may outlive
    // the loop in a namespace.
    std::shared_ptr<std::optional<Value>> last_changed_ = std::make_shared<std::optional<Value>>();
};

}  // namespace

const Value *Scope::find(const std::string &name) const {
    for (const Scope *s = this; s != nullptr; s = s->parent_.get()) {
        const auto it = s->vars_.find(name);
        if (it != s->vars_.end()) return &it->second;
    }
    return nullptr;
}

Interpreter::Interpreter(const RenderLimits &limits) : limits_(limits), budget_(limits.max_steps) {}

Interpreter::Nesting::Nesting(Interpreter &i) : interpreter(i) {
    if (++interpreter.nesting_ > kMaxRenderNesting) {
        --interpreter.nesting_;
        render_fail(
            fmt::format("the render nests more than {} levels deep (the bound on "
                        "statements and expressions within calls)",
                        kMaxRenderNesting));
    }
}

std::string Interpreter::run(const Program &program,
                             const std::vector<std::pair<std::string, Value>> &variables) {
    auto globals = std::make_shared<Scope>(nullptr);
    for (auto &[name, value] : global_functions()) globals->set(name, std::move(value));
    for (const auto &[name, value] : variables) globals->set(name, value);
    // The template's own top-level variables and macros live apart from what it was given.
    auto top = std::make_shared<Scope>(globals);
    std::string output;
    out_ = &output;
    exec(program.body, top);
    return output;
}

void Interpreter::write(std::string_view text) {
    if (int64_t(out_->size() + text.size()) > limits_.max_output_bytes) {
        render_fail(fmt::format("the output would pass {} bytes (the bound on a render's output)",
                                limits_.max_output_bytes));
    }
    budget_.charge_bytes(text.size());
    out_->append(text);
}

void Interpreter::count_iteration() {
    if (++iterations_ > limits_.max_loop_iterations) {
        render_fail(
            fmt::format("the template runs more than {} loop iterations (the bound on a "
                        "render's loops)",
                        limits_.max_loop_iterations));
    }
}

std::string Interpreter::capture(const Body &body, const ScopePtr &scope) {
    std::string text;
    std::string *outer = std::exchange(out_, &text);
    try {
        exec(body, scope);
    } catch (...) {
        out_ = outer;
        throw;
    }
    out_ = outer;
    return text;
}

Interpreter::Flow Interpreter::exec(const Body &body, const ScopePtr &scope) {
    for (const StmtPtr &stmt : body) {
        const Flow flow = exec(*stmt, scope);
        if (flow != Flow::next) return flow;
    }
    return Flow::next;
}

Interpreter::Flow Interpreter::exec(const Stmt &stmt, const ScopePtr &scope) {
    try {
        const Nesting nesting(*this);
        budget_.charge(1);
        switch (stmt.kind) {
            case StmtKind::data:
                write(stmt.text);
                break;
            case StmtKind::print:
                write(to_str(eval(*stmt.expr, *scope), budget_));
                break;
            case StmtKind::if_: {
                for (const IfBranch &branch : stmt.branches) {
                    if (truthy(eval(*branch.test, *scope))) return exec(branch.body, scope);
                }
                return exec(stmt.else_body, scope);
            }
            case StmtKind::for_:
                exec_for(stmt, eval(*stmt.expr, *scope), scope, 0);
                break;
            case StmtKind::set:
                assign(stmt.target, eval(*stmt.expr, *scope), *scope);
                break;
            case StmtKind::set_block: {
                Value text(capture(stmt.body, std::make_shared<Scope>(scope)));
                if (stmt.filter) text = eval_filter(*stmt.filter, *scope, &text);
                assign(stmt.target, text, *scope);
                break;
            }
            case StmtKind::macro:
                scope->set(stmt.text, make_macro(stmt, scope, stmt.text));
                break;
            case StmtKind::call_block:
                exec_call_block(stmt, scope);
                break;
            case StmtKind::filter_block: {
                const Value text(capture(stmt.body, std::make_shared<Scope>(scope)));
                write(to_str(eval_filter(*stmt.expr, *scope, &text), budget_));
                break;
            }
            case StmtKind::with: {
                auto inner = std::make_shared<Scope>(scope);
                for (const auto &[target, value] : stmt.assignments) {
                    assign(target, eval(*value, *scope), *inner);
                }
                return exec(stmt.body, inner);
            }
            case StmtKind::scope:
                exec(stmt.body, std::make_shared<Scope>(scope));
                break;
            case StmtKind::break_:
                return Flow::break_loop;
            case StmtKind::continue_:
                return Flow::continue_loop;
        }
    } catch (const RenderFailure &e) {
        throw TemplateError(e.what(), stmt.at.line, stmt.at.column, e.raised());
    }
    return Flow::next;
}

Interpreter::Flow Interpreter::exec_for(const Stmt &stmt, const Value &iterable,
                                        const ScopePtr &scope, int depth0) {
    if (iterable.is_none() || iterable.is_number() || iterable.is_function() ||
        iterable.is_object()) {
        render_fail(fmt::format("'{}' object is not iterable", iterable.type_name()));
    }
    std::vector<Value> items = iterate(iterable);
    if (stmt.filter) {
        // `for x in xs if test`: the test sees the target, not `loop`; loop counts what passes.
        std::vector<Value> kept;
        for (Value &item : items) {
            count_iteration();
            Scope test_scope(scope);
            assign(stmt.target, item, test_scope);
            if (truthy(eval(*stmt.filter, test_scope))) kept.push_back(std::move(item));
        }
        items = std::move(kept);
    }
    std::function<Value(CallArgs &)> recurse;
    if (stmt.recursive) {
        // The scope only weakly: a namespace in it may hold this loop (no cycle, no leak).
        recurse = [this, &stmt, weak = std::weak_ptr<Scope>(scope), depth0](CallArgs &args) {
            if (args.positional.size() != 1 || !args.keywords.empty()) {
                render_fail("loop() takes exactly one iterable");
            }
            const ScopePtr scope = weak.lock();
            if (!scope) render_fail("loop() is called after its loop ended");
            if (++call_depth_ > limits_.max_call_depth) {
                --call_depth_;
                render_fail(
                    fmt::format("recursive loops nest more than {} deep (the bound on "
                                "recursion)",
                                limits_.max_call_depth));
            }
            std::string text;
            std::string *outer = std::exchange(out_, &text);
            try {
                exec_for(stmt, args.positional[0], scope, depth0 + 1);
            } catch (...) {
                out_ = outer;
                --call_depth_;
                throw;
            }
            out_ = outer;
            --call_depth_;
            return Value(std::move(text));
        };
    }
    const size_t n = items.size();
    auto loop = std::make_shared<LoopObject>(items, depth0, std::move(recurse));
    const Value loop_value = Value::object(loop);
    for (size_t i = 0; i < n; ++i) {
        count_iteration();
        auto iteration = std::make_shared<Scope>(scope);
        loop->set_index(i);
        assign(stmt.target, items[i], *iteration);
        iteration->set("loop", loop_value);
        if (exec(stmt.body, iteration) == Flow::break_loop) break;
    }
    if (n == 0) return exec(stmt.else_body, scope);
    return Flow::next;
}

void Interpreter::assign(const Target &target, const Value &value, Scope &scope) {
    switch (target.kind) {
        case Target::Kind::name:
            scope.set(target.name, value);
            return;
        case Target::Kind::tuple: {
            if (value.is_none() || value.is_number() || value.is_undefined()) {
                render_fail(fmt::format("cannot unpack non-iterable {} object", value.type_name()));
            }
            const std::vector<Value> items = iterate(value);
            if (items.size() > target.items.size()) {
                render_fail(
                    fmt::format("too many values to unpack (expected {})", target.items.size()));
            }
            if (items.size() < target.items.size()) {
                render_fail(fmt::format("not enough values to unpack (expected {}, got {})",
                                        target.items.size(), items.size()));
            }
            for (size_t i = 0; i < items.size(); ++i) assign(target.items[i], items[i], scope);
            return;
        }
        case Target::Kind::attribute: {
            const Value *ns = scope.find(target.name);
            if (ns == nullptr || !ns->is_namespace()) {
                render_fail(fmt::format("cannot assign attribute on non-namespace object '{}'",
                                        target.name));
            }
            static_cast<Namespace &>(ns->obj()).set_attribute(target.attribute, value);
            return;
        }
    }
}

Value Interpreter::make_macro(const Stmt &stmt, const ScopePtr &scope, const std::string &name) {
    std::weak_ptr<Scope> closure = scope;
    return Value::function(name, [this, &stmt, closure, name](CallArgs &args) {
        return call_macro(stmt, closure, name, args);
    });
}

Value Interpreter::call_macro(const Stmt &stmt, const std::weak_ptr<Scope> &closure,
                              const std::string &name, CallArgs &args) {
    ScopePtr defined_in = closure.lock();
    if (!defined_in) render_fail(fmt::format("macro '{}' is called after its scope ended", name));
    if (call_depth_ >= limits_.max_call_depth) {
        render_fail(fmt::format("macro calls nest more than {} deep (the bound on recursion)",
                                limits_.max_call_depth));
    }
    auto scope = std::make_shared<Scope>(defined_in);
    const std::vector<Param> &params = stmt.params;
    std::vector<bool> given(params.size(), false);
    std::vector<Value> varargs;
    Dict kwargs;
    for (size_t i = 0; i < args.positional.size(); ++i) {
        if (i < params.size()) {
            scope->set(params[i].name, args.positional[i]);
            given[i] = true;
        } else {
            varargs.push_back(args.positional[i]);
        }
    }
    const bool takes_varargs = reads_name(stmt.body, "varargs");
    const bool takes_kwargs = reads_name(stmt.body, "kwargs");
    if (!varargs.empty() && !takes_varargs) {
        render_fail(
            fmt::format("macro '{}' takes not more than {} argument(s)", name, params.size()));
    }
    for (const auto &keyword : args.keywords) {
        const std::string &key = keyword.first;
        const Value &value = keyword.second;
        const auto it = std::find_if(params.begin(), params.end(),
                                     [&](const Param &p) { return p.name == key; });
        if (it != params.end()) {
            const size_t i = size_t(it - params.begin());
            if (given[i]) {
                render_fail(
                    fmt::format("macro '{}' got multiple values for argument '{}'", name, key));
            }
            scope->set(key, value);
            given[i] = true;
        } else if (key == "caller") {
            scope->set("caller", value);
        } else if (takes_kwargs) {
            kwargs.set(Value(key), value);
        } else {
            render_fail(fmt::format("macro '{}' takes no keyword argument '{}'", name, key));
        }
    }
    // Defaults are evaluated at the call, in the macro's scope: they may read earlier parameters.
    for (size_t i = 0; i < params.size(); ++i) {
        if (given[i]) continue;
        scope->set(params[i].name, params[i].default_value
                                       ? eval(*params[i].default_value, *scope)
                                       : Value::undefined(fmt::format(
                                             "parameter '{}' was not provided", params[i].name)));
    }
    scope->set("varargs", Value::tuple(std::move(varargs)));
    scope->set("kwargs", Value::dict(std::move(kwargs)));
    ++call_depth_;
    std::string text;
    try {
        text = capture(stmt.body, scope);
    } catch (...) {
        --call_depth_;
        throw;
    }
    --call_depth_;
    return Value(std::move(text));
}

void Interpreter::exec_call_block(const Stmt &stmt, const ScopePtr &scope) {
    // caller() renders the block's body, as a macro defined here with the block's parameters.
    const Value caller = make_macro(stmt, scope, "caller");
    write(to_str(eval_call(*stmt.expr, *scope, &caller), budget_));
}

Template::Template(std::string_view source)
    : program_(std::make_shared<const Program>(parse(source))) {}

std::string Template::render(const std::vector<std::pair<std::string, Value>> &variables,
                             const RenderLimits &limits) const {
    Interpreter interpreter(limits);
    try {
        return interpreter.run(*program_, variables);
    } catch (const RenderFailure &e) {  // outside any statement: cannot happen, but keep it clean
        throw TemplateError(e.what(), 1, 1, e.raised());
    }
}

}  // namespace loom::engine::jinja
