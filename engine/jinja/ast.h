#pragma once
// The syntax tree of a template: expressions and statements, each with the place it starts.
// Jinja2's node set, less what chat templates cannot use (extends, include, import, block).
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/jinja/error.h"
#include "engine/jinja/value.h"

namespace loom::engine::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
    literal,    // value
    name,       // name
    list,       // items
    tuple,      // items
    dict,       // pairs (items: key, value, key, value...)
    get_attr,   // object.name
    get_item,   // object[index]
    slice,      // [start:stop:step] inside get_item; items: start, stop, step (each may be null)
    call,       // callee(args)
    filter,     // operand | name(args); operand null in {% filter %} and {% set x | f %}
    test,       // operand is name(args)
    unary,      // op operand: "not", "-", "+"
    binary,     // left op right: "+", "-", "*", "/", "//", "%", "**", "and", "or"
    concat,     // items joined by ~
    compare,    // first, then (op, operand) pairs: "==", "!=", "<", "<=", ">", ">=", "in", "notin"
    condition,  // then if test else otherwise (otherwise may be null: undefined)
};

// A call's arguments as written: f(a, b, key=c, *rest, **named).
struct ArgsExpr {
    std::vector<ExprPtr> positional;
    std::vector<std::pair<std::string, ExprPtr>> keywords;
    ExprPtr star;       // *rest, or null
    ExprPtr star_star;  // **named, or null
};

struct Expr {
    ExprKind kind;
    SourceLocation at;
    Value value;                 // literal
    std::string name;            // name, get_attr, filter, test; op of unary and binary
    ExprPtr object;              // get_attr, get_item, call (callee), filter, test, unary (operand)
    ExprPtr index;               // get_item; binary: right operand; condition: test
    ExprPtr other;               // condition: the else branch
    std::vector<ExprPtr> items;  // list, tuple, dict, slice, concat, compare (operands after first)
    std::vector<std::string> ops;  // compare: the operators, one per operand after the first
    ArgsExpr args;                 // call, filter, test
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Where {% for %} and {% set %} store: a name, a tuple of targets, or a namespace attribute.
struct Target {
    enum class Kind { name, tuple, attribute } kind = Kind::name;
    std::string name;           // the variable (for attribute: the namespace's variable)
    std::string attribute;      // attribute
    std::vector<Target> items;  // tuple
    SourceLocation at;
};

struct Param {
    std::string name;
    ExprPtr default_value;  // or null
};

enum class StmtKind {
    data,          // text
    print,         // {{ expr }}
    if_,           // branches (test, body)..., else_body
    for_,          // target in expr [if filter] [recursive]: body; else_body
    set,           // target = expr
    set_block,     // {% set target | filter %}body{% endset %}
    macro,         // {% macro name(params) %}body
    call_block,    // {% call(params) expr %}body: expr's call gets `caller`
    filter_block,  // {% filter expr %}body: expr is a filter chain over the body's text
    with,          // {% with targets = values %}body
    scope,         // body as it is ({% generation %})
    break_,
    continue_,
};

struct IfBranch {
    ExprPtr test;
    Body body;
};

struct Stmt {
    StmtKind kind;
    SourceLocation at;
    std::string text;  // data; macro: name
    ExprPtr expr;      // print, for (the iterable), set, call_block (the call), filter_block
    ExprPtr filter;    // for: the `if` filter; set_block: the filter chain (or null)
    Target target;     // for, set, set_block
    std::vector<IfBranch> branches;                       // if
    std::vector<Param> params;                            // macro, call_block
    std::vector<std::pair<Target, ExprPtr>> assignments;  // with
    bool recursive = false;                               // for
    Body body;
    Body else_body;  // if, for
};

struct Program {
    Body body;
};

}  // namespace loom::engine::jinja
