#pragma once
// The tree-walking interpreter behind Template::render (template.h). Scopes follow Jinja2's
// rules: a for loop's body gets a fresh scope on every iteration (what it sets is gone after the
// iteration), as do macros, caller blocks, {% with %}, {% set %} blocks and {% generation %};
// {% if %} has none. Names resolve through the enclosing scopes, up to the render's variables
// and the global functions.
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/jinja/ast.h"
#include "engine/jinja/template.h"

namespace loom::engine::jinja {

class Scope {
  public:
    explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
    const Value *find(const std::string &name) const;
    void set(const std::string &name, Value value) { vars_[name] = std::move(value); }

  private:
    std::shared_ptr<Scope> parent_;
    std::unordered_map<std::string, Value> vars_;
};
using ScopePtr = std::shared_ptr<Scope>;

// How deep statements and expressions may nest at run time, across macro calls: each level is a
// few frames of C++ stack (the parser bounds one template's nesting, kMaxSyntaxDepth, and
// RenderLimits the calls; this bounds their product).
inline constexpr int kMaxRenderNesting = 1000;

class Interpreter {
  public:
    explicit Interpreter(const RenderLimits &limits);
    std::string run(const Program &program,
                    const std::vector<std::pair<std::string, Value>> &variables);

  private:
    enum class Flow { next, break_loop, continue_loop };

    // One level of kMaxRenderNesting for as long as it lives.
    struct Nesting {
        explicit Nesting(Interpreter &interpreter);
        ~Nesting() { --interpreter.nesting_; }
        Interpreter &interpreter;
    };

    // Statements (interpreter.cpp).
    Flow exec(const Body &body, const ScopePtr &scope);
    Flow exec(const Stmt &stmt, const ScopePtr &scope);
    Flow exec_for(const Stmt &stmt, const Value &iterable, const ScopePtr &scope, int depth0);
    void exec_call_block(const Stmt &stmt, const ScopePtr &scope);
    void assign(const Target &target, const Value &value, Scope &scope);
    std::string capture(const Body &body, const ScopePtr &scope);
    void write(std::string_view text);
    void count_iteration();
    Value make_macro(const Stmt &stmt, const ScopePtr &scope, const std::string &name);
    Value call_macro(const Stmt &stmt, const std::weak_ptr<Scope> &closure, const std::string &name,
                     CallArgs &args);

    // Expressions (expressions.cpp).
    Value eval(const Expr &expr, Scope &scope);
    Value eval_node(const Expr &expr, Scope &scope);
    Value eval_call(const Expr &expr, Scope &scope, const Value *caller);
    Value eval_filter(const Expr &expr, Scope &scope, const Value *input);
    Value eval_compare(const Expr &expr, Scope &scope);
    CallArgs eval_args(const ArgsExpr &args, Scope &scope);
    Value call_value(const Value &callee, CallArgs &args);

    const RenderLimits &limits_;
    Budget budget_;
    std::string *out_ = nullptr;  // where text goes: the render's output or a capture
    int64_t iterations_ = 0;
    int call_depth_ = 0;
    int nesting_ = 0;
};

}  // namespace loom::engine::jinja
