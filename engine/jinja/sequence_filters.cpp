// Jinja2's filters over sequences and dicts. Where Jinja2 returns a generator (map, select,
// reject, selectattr, rejectattr, unique, reverse) these return a list: the same items when
// iterated, joined or piped into |list, and a length where Jinja2 would refuse len().
#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

#include "engine/jinja/builtins.h"
#include "engine/jinja/filter_table.h"
#include "engine/jinja/text.h"

namespace loom::engine::jinja {
namespace {

// Jinja2's make_attrgetter: "a.b.0" steps through items (item first, then attribute), digits as
// integer indexes; an int attribute is one index.
class AttributePath {
  public:
    AttributePath(const Value *attribute, Budget &budget) : budget_(budget) {
        if (attribute == nullptr || attribute->is_none()) return;
        if (attribute->is_int()) {
            parts_.push_back(*attribute);
            return;
        }
        for (const std::string &part : split(text_of(*attribute, budget), &kDot, -1, false)) {
            const bool digits =
                !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
            parts_.push_back(digits && part.size() < 18 ? Value(int64_t(std::stoll(part)))
                                                        : Value(part));
        }
    }
    Value operator()(Value item) const {
        for (const Value &part : parts_) item = get_item(item, part, budget_);
        return item;
    }

  private:
    static inline const std::string kDot = ".";
    std::vector<Value> parts_;
    Budget &budget_;
};

Value lowered(const Value &v, bool case_sensitive) {
    return !case_sensitive && v.is_string() ? Value(to_lower(v.str())) : v;
}

bool flag(const Value *v) {
    return v != nullptr && truthy(*v);
}

// Python's sorted(): stable, by <, over keys computed once.
std::vector<Value> sorted_by(std::vector<Value> items, const std::vector<Value> &keys, bool reverse,
                             Budget &budget) {
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    budget.charge(int64_t(items.size()));
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return reverse ? less_than(keys[b], keys[a], budget) : less_than(keys[a], keys[b], budget);
    });
    std::vector<Value> out;
    out.reserve(items.size());
    for (const size_t i : order) out.push_back(std::move(items[i]));
    return out;
}

Value filter_sort(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "sort", {"reverse", "case_sensitive", "attribute"});
    const bool case_sensitive = flag(a.get(1));
    std::vector<Value> items = iterate(input);
    // "age,name": a tuple of each attribute's value as the key.
    std::vector<AttributePath> paths;
    if (const Value *attribute = a.get(2); attribute && attribute->is_string()) {
        static const std::string kComma = ",";
        for (const std::string &part : split(attribute->str(), &kComma, -1, false)) {
            const Value name(part);
            paths.emplace_back(&name, args.budget);
        }
    } else {
        paths.emplace_back(attribute, args.budget);
    }
    std::vector<Value> keys;
    keys.reserve(items.size());
    for (const Value &item : items) {
        if (paths.size() == 1) {
            keys.push_back(lowered(paths[0](item), case_sensitive));
        } else {
            std::vector<Value> key;
            for (const AttributePath &path : paths)
                key.push_back(lowered(path(item), case_sensitive));
            keys.push_back(Value::tuple(std::move(key)));
        }
    }
    return Value::list(sorted_by(std::move(items), keys, flag(a.get(0)), args.budget));
}

Value filter_dictsort(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "dictsort", {"case_sensitive", "by", "reverse"});
    if (!input.is_dict()) render_fail("dictsort needs a mapping");
    const std::string by = a.get(1) ? text_of(*a.get(1), args.budget) : "key";
    if (by != "key" && by != "value")
        render_fail("You can only sort by either \"key\" or \"value\"");
    std::vector<Value> items, keys;
    for (const auto &[k, v] : input.dict().entries()) {
        items.push_back(Value::tuple({k, v}));
        keys.push_back(lowered(by == "key" ? k : v, flag(a.get(0))));
    }
    return Value::list(sorted_by(std::move(items), keys, flag(a.get(2)), args.budget));
}

Value filter_unique(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "unique", {"case_sensitive", "attribute"});
    const AttributePath path(a.get(1), args.budget);
    std::unordered_set<std::string> seen;
    std::vector<Value> out;
    for (Value &item : iterate(input)) {
        if (seen.insert(hash_key(lowered(path(item), flag(a.get(0))))).second)
            out.push_back(std::move(item));
    }
    return Value::list(std::move(out));
}

Value min_or_max(const Value &input, CallArgs &args, bool max) {
    const BoundArgs a(args, max ? "max" : "min", {"case_sensitive", "attribute"});
    const AttributePath path(a.get(1), args.budget);
    const std::vector<Value> items = iterate(input);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    Value best_key = lowered(path(items[0]), flag(a.get(0)));
    for (size_t i = 1; i < items.size(); ++i) {
        Value key = lowered(path(items[i]), flag(a.get(0)));
        if (max ? less_than(best_key, key, args.budget) : less_than(key, best_key, args.budget)) {
            best = i;
            best_key = std::move(key);
        }
    }
    return items[best];
}

Value filter_sum(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "sum", {"attribute", "start"});
    const AttributePath path(a.get(0), args.budget);
    Value total = a.get_or(1, Value(0));
    for (const Value &item : iterate(input)) total = binary_op("+", total, path(item), args.budget);
    return total;
}

Value filter_join(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "join", {"d", "attribute"});
    const std::string separator = a.get(0) ? text_of(*a.get(0), args.budget) : "";
    const AttributePath path(a.get(1), args.budget);
    std::string out;
    bool first = true;
    for (const Value &item : iterate(input)) {
        if (!first) out += separator;
        first = false;
        out += text_of(path(item), args.budget);
        if (out.size() > kMaxStringBytes) render_fail("the joined string is too long");
    }
    return Value(std::move(out));
}

Value filter_first(const Value &input, CallArgs &args) {
    BoundArgs(args, "first", {});
    if (input.is_list()) {
        return input.items().empty() ? Value::undefined("No first item, sequence was empty.")
                                     : input.items().front();
    }
    const std::vector<Value> items = iterate(input);
    return items.empty() ? Value::undefined("No first item, sequence was empty.") : items.front();
}

Value filter_last(const Value &input, CallArgs &args) {
    BoundArgs(args, "last", {});
    if (input.is_list()) {
        return input.items().empty() ? Value::undefined("No last item, sequence was empty.")
                                     : input.items().back();
    }
    const std::vector<Value> items = iterate(input);
    return items.empty() ? Value::undefined("No last item, sequence was empty.") : items.back();
}

Value filter_list(const Value &input, CallArgs &args) {
    BoundArgs(args, "list", {});
    return Value::list(iterate(input));
}

Value filter_reverse(const Value &input, CallArgs &args) {
    BoundArgs(args, "reverse", {});
    if (input.is_string()) return slice(input, Value::none(), Value::none(), Value(-1));
    std::vector<Value> items = iterate(input);
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
}

Value filter_items(const Value &input, CallArgs &args) {
    BoundArgs(args, "items", {});
    if (input.is_undefined()) return Value::list({});
    if (!input.is_dict()) render_fail("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto &[k, v] : input.dict().entries()) out.push_back(Value::tuple({k, v}));
    return Value::list(std::move(out));
}

// map('filter', args...) or map(attribute='a.b', default=x). Like select and reject, it gives
// nothing for a false input (none, undefined, empty) without looking at its arguments: Jinja2's
// generators start with `if value:`.
Value filter_map(const Value &input, CallArgs &args) {
    if (!truthy(input)) return Value::list({});
    std::vector<Value> items = iterate(input);
    const auto attribute = std::find_if(args.keywords.begin(), args.keywords.end(),
                                        [](const auto &kw) { return kw.first == "attribute"; });
    if (args.positional.empty() && attribute != args.keywords.end()) {
        const BoundArgs a(args, "map", {"attribute", "default"});
        const AttributePath path(a.get(0), args.budget);
        const Value *fallback = a.get(1);
        for (Value &item : items) {
            item = path(item);
            if (fallback && item.is_undefined()) item = *fallback;
        }
        return Value::list(std::move(items));
    }
    if (args.positional.empty() || !args.positional[0].is_string())
        render_fail("map requires a filter argument");
    const std::string name = args.positional[0].str();
    CallArgs rest{std::vector<Value>(args.positional.begin() + 1, args.positional.end()),
                  args.keywords, args.budget};
    for (Value &item : items) {
        CallArgs call{rest.positional, rest.keywords, args.budget};
        item = apply_filter(name, item, call);
    }
    return Value::list(std::move(items));
}

// select / reject ('test', args...): without a test, by truth.
Value select_or_reject(const Value &input, CallArgs &args, bool select, bool by_attribute) {
    if (!truthy(input)) return Value::list({});
    size_t first_test_arg = 0;
    std::optional<AttributePath> path;
    Value attribute_name;
    if (by_attribute) {
        if (args.positional.empty()) render_fail("selectattr/rejectattr need an attribute");
        attribute_name = args.positional[0];
        path.emplace(&attribute_name, args.budget);
        first_test_arg = 1;
    }
    std::string test;
    std::vector<Value> test_args;
    if (args.positional.size() > first_test_arg) {
        test = text_of(args.positional[first_test_arg], args.budget);
        test_args.assign(args.positional.begin() + long(first_test_arg) + 1, args.positional.end());
    }
    std::vector<Value> out;
    for (Value &item : iterate(input)) {
        const Value subject = path ? (*path)(item) : item;
        bool passes;
        if (test.empty()) {
            passes = truthy(subject);
        } else {
            CallArgs call{test_args, args.keywords, args.budget};
            passes = apply_test(test, subject, call);
        }
        if (passes == select) out.push_back(std::move(item));
    }
    return Value::list(std::move(out));
}

Value filter_batch(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "batch", {"linecount", "fill_with"});
    if (a.get(0) == nullptr || !a.get(0)->is_int() || a.get(0)->as_int() <= 0) {
        render_fail("batch() needs a positive line count");
    }
    const size_t per = size_t(a.get(0)->as_int());
    std::vector<Value> rows, row;
    for (Value &item : iterate(input)) {
        row.push_back(std::move(item));
        if (row.size() == per) rows.push_back(Value::list(std::exchange(row, {})));
    }
    if (!row.empty()) {
        if (const Value *fill = a.get(1); fill && !fill->is_none()) {
            while (row.size() < per) row.push_back(*fill);
        }
        rows.push_back(Value::list(std::move(row)));
    }
    return Value::list(std::move(rows));
}

Value filter_slice(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "slice", {"slices", "fill_with"});
    if (a.get(0) == nullptr || !a.get(0)->is_int() || a.get(0)->as_int() <= 0) {
        render_fail("slice() needs a positive number of slices");
    }
    const std::vector<Value> items = iterate(input);
    if (a.get(0)->as_int() > kMaxValueElements) render_fail("slice() has too many slices");
    const size_t slices = size_t(a.get(0)->as_int()), per = items.size() / slices,
                 extra = items.size() % slices;
    const Value *fill = a.get(1);
    // Jinja2's columns: the first `extra` slices take one item more; with fill_with, the others
    // are topped up with it.
    std::vector<Value> out;
    size_t offset = 0;
    for (size_t i = 0; i < slices; ++i) {
        const size_t start = offset + i * per;
        if (i < extra) ++offset;
        const size_t end = offset + (i + 1) * per;
        std::vector<Value> column(items.begin() + long(start), items.begin() + long(end));
        if (fill && !fill->is_none() && i >= extra) column.push_back(*fill);
        out.push_back(Value::list(std::move(column)));
    }
    return Value::list(std::move(out));
}

Value filter_groupby(const Value &input, CallArgs &args) {
    const BoundArgs a(args, "groupby", {"attribute", "default", "case_sensitive"});
    const AttributePath path(a.get(0), args.budget);
    std::vector<Value> items = iterate(input), keys;
    for (const Value &item : items) {
        Value key = path(item);
        if (key.is_undefined() && a.get(1)) key = *a.get(1);
        keys.push_back(lowered(key, flag(a.get(2))));
    }
    std::vector<size_t> order(items.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return less_than(keys[x], keys[y], args.budget); });
    std::vector<Value> groups, members;
    for (size_t k = 0; k < order.size(); ++k) {
        members.push_back(items[order[k]]);
        if (k + 1 == order.size() || !equals(keys[order[k]], keys[order[k + 1]], args.budget)) {
            groups.push_back(
                Value::tuple({keys[order[k]], Value::list(std::exchange(members, {}))}));
        }
    }
    return Value::list(std::move(groups));
}

}  // namespace

void add_sequence_filters(FilterTable &table) {
    table.insert({
        {"sort", filter_sort},
        {"dictsort", filter_dictsort},
        {"unique", filter_unique},
        {"min", [](const Value &v, CallArgs &a) { return min_or_max(v, a, false); }},
        {"max", [](const Value &v, CallArgs &a) { return min_or_max(v, a, true); }},
        {"sum", filter_sum},
        {"join", filter_join},
        {"first", filter_first},
        {"last", filter_last},
        {"list", filter_list},
        {"reverse", filter_reverse},
        {"items", filter_items},
        {"map", filter_map},
        {"select", [](const Value &v, CallArgs &a) { return select_or_reject(v, a, true, false); }},
        {"reject",
         [](const Value &v, CallArgs &a) { return select_or_reject(v, a, false, false); }},
        {"selectattr",
         [](const Value &v, CallArgs &a) { return select_or_reject(v, a, true, true); }},
        {"rejectattr",
         [](const Value &v, CallArgs &a) { return select_or_reject(v, a, false, true); }},
        {"batch", filter_batch},
        {"slice", filter_slice},
        {"groupby", filter_groupby},
    });
}

}  // namespace loom::engine::jinja
