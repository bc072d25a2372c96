// The global functions (range, dict, namespace, cycler, joiner), the two transformers passes
// (raise_exception, strftime_now), and the namespace object.
#include <fmt/format.h>

#include <memory>

#include "engine/jinja/builtins.h"
#include "engine/jinja/namespace.h"

namespace loom::engine::jinja {

std::optional<Value> Namespace::attribute(const std::string &name) {
    if (const Value *v = attributes_.find(name)) return *v;
    return std::nullopt;
}

std::string Namespace::repr(Budget &budget) const {
    return "<Namespace " + jinja::repr(Value::dict(attributes_), budget) + ">";
}

void Namespace::set_attribute(const std::string &name, Value value) {
    if (value.is_namespace()) render_fail("a namespace cannot hold a namespace");
    attributes_.set(Value(name), std::move(value));
}

namespace {

// dict(mapping or pairs, **kwargs) and namespace(...)'s arguments, in order.
Dict dict_of(const CallArgs &args, const char *function) {
    Dict out;
    if (args.positional.size() > 1) {
        render_fail(fmt::format("{}() takes at most 1 positional argument", function));
    }
    if (!args.positional.empty()) {
        const Value &source = args.positional[0];
        if (source.is_dict()) {
            for (const auto &[k, v] : source.dict().entries()) out.set(k, v);
        } else {
            for (const Value &pair : iterate(source)) {
                if (!pair.is_list() || pair.items().size() != 2) {
                    render_fail(fmt::format("{}() takes a mapping or pairs", function));
                }
                out.set(pair.items()[0], pair.items()[1]);
            }
        }
    }
    for (const auto &[k, v] : args.keywords) out.set(Value(k), v);
    return out;
}

Value range_function(CallArgs &args) {
    if (!args.keywords.empty()) render_fail("range() takes no keyword arguments");
    std::vector<int64_t> bounds;
    for (const Value &v : args.positional) {
        if (!v.is_int() && !v.is_bool()) {
            render_fail(
                fmt::format("'{}' object cannot be interpreted as an integer", v.type_name()));
        }
        bounds.push_back(v.to_int());
    }
    if (bounds.empty() || bounds.size() > 3) render_fail("range expected 1 to 3 arguments");
    const int64_t start = bounds.size() == 1 ? 0 : bounds[0];
    const int64_t stop = bounds.size() == 1 ? bounds[0] : bounds[1];
    const int64_t step = bounds.size() == 3 ? bounds[2] : 1;
    if (step == 0) render_fail("range() arg 3 must not be zero");
    // The count in 128 bits: stop - start may not fit 64.
    const __int128 span = step > 0 ? __int128(stop) - start : __int128(start) - stop;
    const __int128 magnitude = step > 0 ? __int128(step) : -__int128(step);
    const __int128 count = span <= 0 ? 0 : (span + magnitude - 1) / magnitude;
    if (count > kMaxValueElements) {
        render_fail(fmt::format("range() would hold more than {} numbers", kMaxValueElements));
    }
    args.budget.charge(int64_t(count));
    std::vector<Value> out;
    out.reserve(size_t(count));
    for (int64_t i = 0; i < int64_t(count); ++i)
        out.emplace_back(int64_t(start + __int128(i) * step));
    return Value::list(std::move(out));
}

// cycler(a, b, c): .next() gives a, b, c, a...; .current the one next() gives next; .reset().
class Cycler : public Object {
  public:
    explicit Cycler(std::vector<Value> items)
        : state_(std::make_shared<State>(State{std::move(items), 0})) {}
    std::string type_name() const override { return "Cycler"; }
    std::optional<Value> attribute(const std::string &name) override {
        if (name == "current") return state_->items[state_->position];
        if (name == "next") {
            return Value::function("next", [state = state_](CallArgs &) {
                Value v = state->items[state->position];
                state->position = (state->position + 1) % state->items.size();
                return v;
            });
        }
        if (name == "reset") {
            return Value::function("reset", [state = state_](CallArgs &) {
                state->position = 0;
                return Value::none();
            });
        }
        return std::nullopt;
    }

  private:
    struct State {
        std::vector<Value> items;
        size_t position;
    };
    std::shared_ptr<State> state_;
};

}  // namespace

std::vector<std::pair<std::string, Value>> global_functions() {
    return {
        {"range", Value::function("range", range_function)},
        {"dict", Value::function(
                     "dict", [](CallArgs &args) { return Value::dict(dict_of(args, "dict")); })},
        {"namespace", Value::function("namespace",
                                      [](CallArgs &args) {
                                          auto ns = std::make_shared<Namespace>();
                                          const Dict attributes = dict_of(args, "namespace");
                                          for (const auto &[k, v] : attributes.entries()) {
                                              if (!k.is_string())
                                                  render_fail("namespace() keys must be strings");
                                              ns->set_attribute(k.str(), v);
                                          }
                                          return Value::object(std::move(ns));
                                      })},
        {"cycler", Value::function("cycler",
                                   [](CallArgs &args) {
                                       if (args.positional.empty())
                                           render_fail("cycler() needs at least one item");
                                       return Value::object(
                                           std::make_shared<Cycler>(args.positional));
                                   })},
        {"joiner", Value::function("joiner",
                                   [](CallArgs &args) {
                                       const BoundArgs a(args, "joiner", {"sep"});
                                       const Value sep = a.get_or(0, Value(", "));
                                       auto used = std::make_shared<bool>(false);
                                       return Value::function("joiner", [sep, used](CallArgs &) {
                                           if (!*used) {
                                               *used = true;
                                               return Value("");
                                           }
                                           return sep;
                                       });
                                   })},
    };
}

Value raise_exception_function() {
    return Value::function("raise_exception", [](CallArgs &args) -> Value {
        const BoundArgs a(args, "raise_exception", {"message"});
        throw RenderFailure(a.get(0) ? to_str(*a.get(0), args.budget) : "", true);
    });
}

Value strftime_now_function(std::tm now) {
    return Value::function("strftime_now", [now](CallArgs &args) {
        const BoundArgs a(args, "strftime_now", {"format"});
        if (a.get(0) == nullptr || !a.get(0)->is_string())
            render_fail("strftime_now() needs a format string");
        const std::string &format = a.get(0)->str();
        if (format.size() > 4096) render_fail("strftime_now() format is too long");
        // strftime gives 0 for an empty result and for a buffer too small: grow it a few times.
        for (size_t size = 256; size <= (size_t(1) << 20); size *= 8) {
            std::string out(size, '\0');
            const size_t n = std::strftime(out.data(), out.size(), format.c_str(), &now);
            if (n > 0 || format.empty()) {
                out.resize(n);
                return Value(std::move(out));
            }
        }
        return Value("");
    });
}

}  // namespace loom::engine::jinja
