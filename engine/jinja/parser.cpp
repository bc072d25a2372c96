#include "engine/jinja/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>

#include "engine/jinja/lexer.h"

namespace loom::engine::jinja {
namespace {

std::string describe(const Token &t) {
    switch (t.type) {
        case TokenType::data:
            return "template data";
        case TokenType::variable_begin:
            return "begin of print statement";
        case TokenType::variable_end:
            return "end of print statement";
        case TokenType::block_begin:
            return "begin of statement block";
        case TokenType::block_end:
            return "end of statement block";
        case TokenType::eof:
            return "end of template";
        case TokenType::string:
            return "string";
        case TokenType::integer:
            return "integer";
        case TokenType::floating:
            return "float";
        default:
            return t.text;
    }
}

ExprPtr make_expr(ExprKind kind, SourceLocation at) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->at = at;
    return e;
}

StmtPtr make_stmt(StmtKind kind, SourceLocation at) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->at = at;
    return s;
}

class Parser {
  public:
    explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

    Program run() {
        Program program;
        program.body = subparse({});
        if (current().type != TokenType::eof)
            fail(fmt::format("unexpected '{}'", describe(current())));
        return program;
    }

  private:
    // Counts one level of nesting for as long as it lives.
    struct Nesting {
        explicit Nesting(Parser &p) : parser(p) {
            if (++parser.depth_ > kMaxSyntaxDepth) {
                parser.fail(
                    fmt::format("the template nests more than {} levels deep", kMaxSyntaxDepth));
            }
        }
        ~Nesting() { --parser.depth_; }
        Parser &parser;
    };

    const Token &current() const { return tokens_[pos_]; }
    const Token &look() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
    void advance() {
        if (pos_ + 1 < tokens_.size()) ++pos_;
    }
    const Token &next() {
        const Token &t = current();
        advance();
        return t;
    }

    [[noreturn]] void fail(const std::string &message) const {
        syntax_error(message, current().at);
    }

    bool is_op(const char *op) const {
        return current().type == TokenType::op && current().text == op;
    }
    bool is_name(const char *name) const {
        return current().type == TokenType::name && current().text == name;
    }
    bool skip_op(const char *op) {
        if (!is_op(op)) return false;
        advance();
        return true;
    }
    bool skip_name(const char *name) {
        if (!is_name(name)) return false;
        advance();
        return true;
    }
    void expect_op(const char *op) {
        if (!skip_op(op)) fail(fmt::format("expected '{}', got '{}'", op, describe(current())));
    }
    std::string expect_name() {
        if (current().type != TokenType::name) {
            fail(fmt::format("expected a name, got '{}'", describe(current())));
        }
        return next().text;
    }
    void expect(TokenType type) {
        if (current().type != type) {
            const Token wanted{type, "", 0, 0, {}};
            fail(fmt::format("expected '{}', got '{}'", describe(wanted), describe(current())));
        }
        advance();
    }

    // Statements and data up to a block whose tag is one of `end_tags` (left current), or eof.
    Body subparse(std::initializer_list<const char *> end_tags) {
        Nesting nesting(*this);
        Body body;
        while (current().type != TokenType::eof) {
            const Token &t = current();
            if (t.type == TokenType::data) {
                auto s = make_stmt(StmtKind::data, t.at);
                s->text = t.text;
                body.push_back(std::move(s));
                advance();
            } else if (t.type == TokenType::variable_begin) {
                auto s = make_stmt(StmtKind::print, t.at);
                advance();
                s->expr = parse_tuple(true, {});
                expect(TokenType::variable_end);
                body.push_back(std::move(s));
            } else if (t.type == TokenType::block_begin) {
                advance();
                for (const char *end : end_tags) {
                    if (is_name(end)) return body;
                }
                body.push_back(parse_statement());
                expect(TokenType::block_end);
            } else {
                fail(fmt::format("unexpected '{}'", describe(t)));
            }
        }
        return body;
    }

    // `%}`, the body up to one of `end_tags` (current at that tag's name; with drop_end past it).
    Body parse_body(std::initializer_list<const char *> end_tags, bool drop_end) {
        skip_op(":");
        expect(TokenType::block_end);
        Body body = subparse(end_tags);
        if (current().type == TokenType::eof) {
            std::string names;
            for (const char *end : end_tags)
                names += fmt::format("{}'{}'", names.empty() ? "" : " or ", end);
            fail(fmt::format("unexpected end of template: Jinja was looking for {}", names));
        }
        if (drop_end) advance();
        return body;
    }

    StmtPtr parse_statement() {
        const Token &t = current();
        if (t.type != TokenType::name) fail("tag name expected");
        const std::string tag = t.text;
        const SourceLocation at = t.at;
        if (tag == "for") return parse_for();
        if (tag == "if") return parse_if();
        if (tag == "set") return parse_set();
        if (tag == "macro") return parse_macro();
        if (tag == "call") return parse_call_block();
        if (tag == "filter") return parse_filter_block();
        if (tag == "with") return parse_with();
        if (tag == "print") {
            advance();
            auto s = make_stmt(StmtKind::print, at);
            s->expr = parse_tuple(true, {});
            return s;
        }
        if (tag == "generation") {
            advance();
            auto s = make_stmt(StmtKind::scope, at);
            s->body = parse_body({"endgeneration"}, true);
            return s;
        }
        if (tag == "break" || tag == "continue") {
            if (loop_depth_ == 0) fail(fmt::format("'{}' outside of a loop", tag));
            advance();
            return make_stmt(tag == "break" ? StmtKind::break_ : StmtKind::continue_, at);
        }
        fail(fmt::format("encountered unknown tag '{}'", tag));
    }

    StmtPtr parse_for() {
        auto s = make_stmt(StmtKind::for_, next().at);
        s->target = parse_assign_target(true, false, "in");
        if (!skip_name("in")) fail(fmt::format("expected 'in', got '{}'", describe(current())));
        s->expr = parse_tuple(false, {"recursive"});
        if (skip_name("if")) s->filter = parse_expression(true);
        s->recursive = skip_name("recursive");
        ++loop_depth_;
        s->body = parse_body({"endfor", "else"}, false);
        --loop_depth_;
        // The else branch runs outside the loop: break there is no loop control.
        if (next().text == "else") s->else_body = parse_body({"endfor"}, true);
        return s;
    }

    StmtPtr parse_if() {
        auto s = make_stmt(StmtKind::if_, next().at);
        while (true) {
            IfBranch branch;
            branch.test = parse_tuple(false, {});
            branch.body = parse_body({"elif", "else", "endif"}, false);
            s->branches.push_back(std::move(branch));
            const std::string tag = next().text;
            if (tag == "elif") continue;
            if (tag == "else") s->else_body = parse_body({"endif"}, true);
            break;
        }
        return s;
    }

    StmtPtr parse_set() {
        const SourceLocation at = next().at;
        Target target = parse_assign_target(true, true, nullptr);
        if (skip_op("=")) {
            auto s = make_stmt(StmtKind::set, at);
            s->target = std::move(target);
            s->expr = parse_tuple(true, {});
            return s;
        }
        auto s = make_stmt(StmtKind::set_block, at);
        s->target = std::move(target);
        if (is_op("|")) s->filter = parse_filters(nullptr, false);
        s->body = parse_body({"endset"}, true);
        return s;
    }

    std::vector<Param> parse_signature() {
        std::vector<Param> params;
        expect_op("(");
        while (!is_op(")")) {
            if (!params.empty()) expect_op(",");
            Param p;
            p.name = expect_name();
            if (skip_op("=")) {
                p.default_value = parse_expression(true);
            } else if (!params.empty() && params.back().default_value) {
                fail("non-default argument follows default argument");
            }
            params.push_back(std::move(p));
        }
        expect_op(")");
        return params;
    }

    StmtPtr parse_macro() {
        auto s = make_stmt(StmtKind::macro, next().at);
        s->text = expect_name();
        s->params = parse_signature();
        // A macro's body is a function of its own: break and continue there control no loop.
        const int loops = std::exchange(loop_depth_, 0);
        s->body = parse_body({"endmacro"}, true);
        loop_depth_ = loops;
        return s;
    }

    StmtPtr parse_call_block() {
        auto s = make_stmt(StmtKind::call_block, next().at);
        if (is_op("(")) s->params = parse_signature();
        s->expr = parse_expression(true);
        if (s->expr->kind != ExprKind::call) syntax_error("expected call", s->at);
        const int loops = std::exchange(loop_depth_, 0);
        s->body = parse_body({"endcall"}, true);
        loop_depth_ = loops;
        return s;
    }

    StmtPtr parse_filter_block() {
        auto s = make_stmt(StmtKind::filter_block, next().at);
        s->expr = parse_filters(nullptr, true);
        s->body = parse_body({"endfilter"}, true);
        return s;
    }

    StmtPtr parse_with() {
        auto s = make_stmt(StmtKind::with, next().at);
        while (current().type != TokenType::block_end) {
            if (!s->assignments.empty()) expect_op(",");
            Target target = parse_assign_target(true, false, nullptr);
            expect_op("=");
            s->assignments.emplace_back(std::move(target), parse_expression(true));
        }
        s->body = parse_body({"endwith"}, true);
        return s;
    }

    // A name, `ns.attr` (with_namespace) or a tuple of names; `end_name` ends a tuple ("in").
    Target parse_assign_target(bool with_tuple, bool with_namespace, const char *end_name) {
        Target target;
        target.at = current().at;
        if (with_namespace && current().type == TokenType::name && look().type == TokenType::op &&
            look().text == ".") {
            target.kind = Target::Kind::attribute;
            target.name = next().text;
            advance();  // the dot
            target.attribute = expect_name();
            return target;
        }
        std::vector<Target> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) expect_op(",");
            if (current().type == TokenType::block_end || is_op(")") ||
                (end_name != nullptr && is_name(end_name))) {
                break;
            }
            Target item;
            item.at = current().at;
            if (skip_op("(")) {
                item = parse_assign_target(true, false, nullptr);
                expect_op(")");
            } else {
                item.name = expect_name();
                if (item.name == "true" || item.name == "false" || item.name == "none" ||
                    item.name == "True" || item.name == "False" || item.name == "None") {
                    syntax_error(fmt::format("can't assign to '{}'", item.name), item.at);
                }
            }
            items.push_back(std::move(item));
            if (!with_tuple || !is_op(",")) break;
            is_tuple = true;
        }
        if (items.empty()) fail(fmt::format("expected a name, got '{}'", describe(current())));
        if (!is_tuple) return std::move(items.front());
        target.kind = Target::Kind::tuple;
        target.items = std::move(items);
        return target;
    }

    // Comma-separated expressions: one is itself, several (or a trailing comma) a tuple.
    ExprPtr parse_tuple(bool with_condition, std::initializer_list<const char *> end_names,
                        bool explicit_parentheses = false) {
        const SourceLocation at = current().at;
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) expect_op(",");
            bool end = current().type == TokenType::block_end ||
                       current().type == TokenType::variable_end || is_op(")");
            for (const char *name : end_names) end = end || is_name(name);
            if (end) break;
            items.push_back(parse_expression(with_condition));
            if (!is_op(",")) break;
            is_tuple = true;
        }
        if (!is_tuple) {
            if (!items.empty()) return std::move(items.front());
            if (!explicit_parentheses) {
                fail(fmt::format("expected an expression, got '{}'", describe(current())));
            }
        }
        auto e = make_expr(ExprKind::tuple, at);
        e->items = std::move(items);
        return e;
    }

    ExprPtr parse_expression(bool with_condition) {
        Nesting nesting(*this);
        return with_condition ? parse_condition() : parse_or();
    }

    ExprPtr parse_condition() {
        ExprPtr expr = parse_or();
        while (is_name("if")) {
            auto e = make_expr(ExprKind::condition, next().at);
            e->index = parse_or();
            if (skip_name("else")) e->other = parse_condition();
            e->object = std::move(expr);
            expr = std::move(e);
        }
        return expr;
    }

    ExprPtr binary(const std::string &op, ExprPtr left, ExprPtr right, SourceLocation at) {
        auto e = make_expr(ExprKind::binary, at);
        e->name = op;
        e->object = std::move(left);
        e->index = std::move(right);
        return e;
    }

    ExprPtr parse_or() {
        ExprPtr left = parse_and();
        while (is_name("or")) {
            const SourceLocation at = next().at;
            left = binary("or", std::move(left), parse_and(), at);
        }
        return left;
    }

    ExprPtr parse_and() {
        ExprPtr left = parse_not();
        while (is_name("and")) {
            const SourceLocation at = next().at;
            left = binary("and", std::move(left), parse_not(), at);
        }
        return left;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            Nesting nesting(*this);
            auto e = make_expr(ExprKind::unary, next().at);
            e->name = "not";
            e->object = parse_not();
            return e;
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        const SourceLocation at = current().at;
        ExprPtr first = parse_math1();
        std::vector<std::string> ops;
        std::vector<ExprPtr> operands;
        while (true) {
            static constexpr std::string_view kOps[] = {"==", "!=", "<", "<=", ">", ">="};
            if (current().type == TokenType::op &&
                std::find(std::begin(kOps), std::end(kOps), current().text) != std::end(kOps)) {
                ops.push_back(next().text);
            } else if (skip_name("in")) {
                ops.push_back("in");
            } else if (is_name("not") && look().type == TokenType::name && look().text == "in") {
                advance();
                advance();
                ops.push_back("notin");
            } else {
                break;
            }
            operands.push_back(parse_math1());
        }
        if (ops.empty()) return first;
        auto e = make_expr(ExprKind::compare, at);
        e->object = std::move(first);
        e->ops = std::move(ops);
        e->items = std::move(operands);
        return e;
    }

    ExprPtr parse_math1() {
        ExprPtr left = parse_concat();
        while (is_op("+") || is_op("-")) {
            const Token &t = next();
            left = binary(t.text, std::move(left), parse_concat(), t.at);
        }
        return left;
    }

    ExprPtr parse_concat() {
        const SourceLocation at = current().at;
        ExprPtr first = parse_math2();
        if (!is_op("~")) return first;
        auto e = make_expr(ExprKind::concat, at);
        e->items.push_back(std::move(first));
        while (skip_op("~")) e->items.push_back(parse_math2());
        return e;
    }

    ExprPtr parse_math2() {
        ExprPtr left = parse_pow();
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            const Token &t = next();
            left = binary(t.text, std::move(left), parse_pow(), t.at);
        }
        return left;
    }

    ExprPtr parse_pow() {
        ExprPtr left = parse_unary(true);
        while (is_op("**")) {
            const SourceLocation at = next().at;
            left = binary("**", std::move(left), parse_unary(true), at);
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        Nesting nesting(*this);
        ExprPtr node;
        if (is_op("-") || is_op("+")) {
            node = make_expr(ExprKind::unary, current().at);
            node->name = next().text;
            node->object = parse_unary(false);
        } else {
            node = parse_primary();
        }
        node = parse_postfix(std::move(node));
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    ExprPtr parse_primary() {
        const Token &t = current();
        if (t.type == TokenType::name) {
            advance();
            auto e = make_expr(ExprKind::literal, t.at);
            if (t.text == "true" || t.text == "True") {
                e->value = Value(true);
            } else if (t.text == "false" || t.text == "False") {
                e->value = Value(false);
            } else if (t.text == "none" || t.text == "None") {
                e->value = Value::none();
            } else {
                e->kind = ExprKind::name;
                e->name = t.text;
            }
            return e;
        }
        if (t.type == TokenType::string) {
            // Adjacent strings join: "a" "b" is "ab".
            auto e = make_expr(ExprKind::literal, t.at);
            std::string text;
            while (current().type == TokenType::string) text += next().text;
            e->value = Value(std::move(text));
            return e;
        }
        if (t.type == TokenType::integer || t.type == TokenType::floating) {
            auto e = make_expr(ExprKind::literal, t.at);
            e->value = t.type == TokenType::integer ? Value(t.integer) : Value(t.number);
            advance();
            return e;
        }
        if (is_op("(")) {
            advance();
            ExprPtr e = parse_tuple(true, {}, true);
            expect_op(")");
            return e;
        }
        if (is_op("[")) return parse_list();
        if (is_op("{")) return parse_dict();
        fail(fmt::format("unexpected '{}'", describe(t)));
    }

    ExprPtr parse_list() {
        auto e = make_expr(ExprKind::list, next().at);
        while (!is_op("]")) {
            if (!e->items.empty()) expect_op(",");
            if (is_op("]")) break;
            e->items.push_back(parse_expression(true));
        }
        expect_op("]");
        return e;
    }

    ExprPtr parse_dict() {
        auto e = make_expr(ExprKind::dict, next().at);
        while (!is_op("}")) {
            if (!e->items.empty()) expect_op(",");
            if (is_op("}")) break;
            e->items.push_back(parse_expression(true));
            expect_op(":");
            e->items.push_back(parse_expression(true));
        }
        expect_op("}");
        return e;
    }

    ExprPtr parse_postfix(ExprPtr node) {
        while (true) {
            if (is_op(".") || is_op("[")) {
                node = parse_subscript(std::move(node));
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        while (true) {
            if (is_op("|")) {
                node = parse_filters(std::move(node), false);
            } else if (is_name("is")) {
                node = parse_test(std::move(node));
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr node) {
        const Token &t = next();
        if (t.text == ".") {
            const Token &attr = current();
            if (attr.type == TokenType::name) {
                auto e = make_expr(ExprKind::get_attr, t.at);
                e->name = next().text;
                e->object = std::move(node);
                return e;
            }
            if (attr.type != TokenType::integer) fail("expected name or number");
            auto e = make_expr(ExprKind::get_item, t.at);
            e->object = std::move(node);
            e->index = make_expr(ExprKind::literal, attr.at);
            e->index->value = Value(attr.integer);
            advance();
            return e;
        }
        auto e = make_expr(ExprKind::get_item, t.at);
        std::vector<ExprPtr> args;
        while (!is_op("]")) {
            if (!args.empty()) expect_op(",");
            args.push_back(parse_subscribed());
        }
        expect_op("]");
        if (args.empty()) syntax_error("expected subscript expression", t.at);
        e->object = std::move(node);
        if (args.size() == 1) {
            e->index = std::move(args.front());
        } else {
            e->index = make_expr(ExprKind::tuple, t.at);
            e->index->items = std::move(args);
        }
        return e;
    }

    // An index or a slice [start:stop:step], each part optional.
    ExprPtr parse_subscribed() {
        const SourceLocation at = current().at;
        ExprPtr start;
        if (!is_op(":")) {
            start = parse_expression(true);
            if (!is_op(":")) return start;
        }
        advance();  // the first colon
        auto e = make_expr(ExprKind::slice, at);
        e->items.push_back(std::move(start));
        const auto part_ends = [&] { return is_op("]") || is_op(",") || is_op(":"); };
        e->items.push_back(part_ends() ? nullptr : parse_expression(true));
        ExprPtr step;
        if (skip_op(":") && !is_op("]") && !is_op(",")) step = parse_expression(true);
        e->items.push_back(std::move(step));
        return e;
    }

    ArgsExpr parse_args() {
        ArgsExpr args;
        expect_op("(");
        bool need_comma = false;
        while (!is_op(")")) {
            if (need_comma) {
                expect_op(",");
                if (is_op(")")) break;
            }
            const auto ensure = [&](bool ok) {
                if (!ok) fail("invalid syntax for function call expression");
            };
            if (skip_op("*")) {
                ensure(!args.star && !args.star_star);
                args.star = parse_expression(true);
            } else if (skip_op("**")) {
                ensure(!args.star_star);
                args.star_star = parse_expression(true);
            } else if (current().type == TokenType::name && look().type == TokenType::op &&
                       look().text == "=") {
                ensure(!args.star_star);
                std::string key = next().text;
                advance();  // =
                args.keywords.emplace_back(std::move(key), parse_expression(true));
            } else {
                ensure(!args.star && !args.star_star && args.keywords.empty());
                args.positional.push_back(parse_expression(true));
            }
            need_comma = true;
        }
        expect_op(")");
        return args;
    }

    ExprPtr parse_call(ExprPtr node) {
        // The call's place is where its callee starts: `raise_exception(...)` fails there.
        auto e = make_expr(ExprKind::call, node->at);
        e->args = parse_args();
        e->object = std::move(node);
        return e;
    }

    // `| name(args) | name...`; `inline_first`: the first filter has no pipe ({% filter %}).
    ExprPtr parse_filters(ExprPtr node, bool inline_first) {
        while (is_op("|") || inline_first) {
            if (!inline_first) advance();
            inline_first = false;
            auto e = make_expr(ExprKind::filter, current().at);
            e->name = expect_name();
            while (skip_op(".")) e->name += "." + expect_name();
            if (is_op("(")) e->args = parse_args();
            e->object = std::move(node);
            node = std::move(e);
        }
        return node;
    }

    ExprPtr parse_test(ExprPtr node) {
        const SourceLocation at = next().at;  // "is"
        const bool negated = skip_name("not");
        auto e = make_expr(ExprKind::test, at);
        e->name = expect_name();
        while (skip_op(".")) e->name += "." + expect_name();
        const Token &t = current();
        if (is_op("(")) {
            e->args = parse_args();
        } else if ((t.type == TokenType::name || t.type == TokenType::string ||
                    t.type == TokenType::integer || t.type == TokenType::floating || is_op("[") ||
                    is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
            // One argument without parentheses: `x is divisibleby 3`, `x is sameas none`.
            if (is_name("is")) fail("you cannot chain multiple tests with is");
            e->args.positional.push_back(parse_postfix(parse_primary()));
        }
        e->object = std::move(node);
        if (!negated) return e;
        auto n = make_expr(ExprKind::unary, at);
        n->name = "not";
        n->object = std::move(e);
        return n;
    }

    std::vector<Token> tokens_;
    size_t pos_ = 0;
    int depth_ = 0;
    int loop_depth_ = 0;
};

}  // namespace

Program parse(std::string_view source) {
    return Parser(tokenize(source)).run();
}

}  // namespace loom::engine::jinja
