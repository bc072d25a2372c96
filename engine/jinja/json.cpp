#include "engine/jinja/json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/jinja/text.h"
#include "loom/error.h"

namespace loom::engine::jinja {
namespace {

void append_json_string(std::string &out, std::string_view s, bool ensure_ascii) {
    out += '"';
    for (size_t i = 0; i < s.size();) {
        const CodePoint cp = decode_code_point(s, i);
        const uint32_t c = cp.value;
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\b':
                out += "\\b";
                break;
            case '\f':
                out += "\\f";
                break;
            default:
                if (c < 0x20) {
                    out += fmt::format("\\u{:04x}", c);
                } else if (ensure_ascii && c >= 0x80 && !(cp.length == 1)) {
                    if (c >= 0x10000) {
                        const uint32_t v = c - 0x10000;
                        out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (v >> 10),
                                           0xDC00 + (v & 0x3FF));
                    } else {
                        out += fmt::format("\\u{:04x}", c);
                    }
                } else {
                    out += s.substr(i, cp.length);
                }
        }
        i += cp.length;
    }
    out += '"';
}

std::string float_json(double x) {
    if (std::isnan(x)) return "NaN";
    if (std::isinf(x)) return x < 0 ? "-Infinity" : "Infinity";
    return float_repr(x);
}

class JsonWriter {
  public:
    JsonWriter(const JsonOptions &options, Budget &budget)
        : options_(options),
          budget_(budget),
          item_separator_(options.item_separator.value_or(options.indent ? "," : ", ")) {}

    void write(const Value &v, int level) {
        budget_.charge(1);
        if (out_.size() > kMaxStringBytes) {
            render_fail(fmt::format("tojson would be longer than {} bytes", kMaxStringBytes));
        }
        switch (v.kind()) {
            case Value::Kind::undefined:  // Jinja2 fails; @huggingface/jinja renders null
            case Value::Kind::none:
                out_ += "null";
                break;
            case Value::Kind::boolean:
                out_ += v.as_bool() ? "true" : "false";
                break;
            case Value::Kind::integer:
                out_ += fmt::format("{}", v.as_int());
                break;
            case Value::Kind::floating:
                out_ += float_json(v.as_float());
                break;
            case Value::Kind::string:
                budget_.charge_bytes(v.str().size());
                append_json_string(out_, v.str(), options_.ensure_ascii);
                break;
            case Value::Kind::list:
                write_list(v.items(), level);
                break;
            case Value::Kind::dict:
                write_dict(v.dict(), level);
                break;
            default:
                render_fail(
                    fmt::format("Object of type {} is not JSON serializable", v.type_name()));
        }
    }

    std::string take() { return std::move(out_); }

  private:
    void newline(int level) {
        if (!options_.indent) return;
        out_ += '\n';
        for (int i = 0; i < level; ++i) out_ += *options_.indent;
    }

    void write_list(const std::vector<Value> &items, int level) {
        if (items.empty()) {
            out_ += "[]";
            return;
        }
        out_ += '[';
        for (size_t i = 0; i < items.size(); ++i) {
            if (i > 0) out_ += item_separator_;
            newline(level + 1);
            write(items[i], level + 1);
        }
        newline(level);
        out_ += ']';
    }

    std::string key_text(const Value &key) {
        switch (key.kind()) {
            case Value::Kind::string:
                return key.str();
            case Value::Kind::boolean:
                return key.as_bool() ? "true" : "false";
            case Value::Kind::integer:
                return fmt::format("{}", key.as_int());
            case Value::Kind::floating:
                return float_json(key.as_float());
            case Value::Kind::none:
                return "null";
            default:
                render_fail(fmt::format("keys must be str, int, float, bool or None, not {}",
                                        key.type_name()));
        }
    }

    void write_dict(const Dict &dict, int level) {
        if (dict.empty()) {
            out_ += "{}";
            return;
        }
        std::vector<const std::pair<Value, Value> *> entries;
        for (const auto &entry : dict.entries()) entries.push_back(&entry);
        if (options_.sort_keys) {
            budget_.charge(int64_t(entries.size()));
            std::stable_sort(entries.begin(), entries.end(), [&](const auto *a, const auto *b) {
                return less_than(a->first, b->first, budget_);
            });
        }
        out_ += '{';
        for (size_t i = 0; i < entries.size(); ++i) {
            if (i > 0) out_ += item_separator_;
            newline(level + 1);
            append_json_string(out_, key_text(entries[i]->first), options_.ensure_ascii);
            out_ += options_.key_separator;
            write(entries[i]->second, level + 1);
        }
        newline(level);
        out_ += '}';
    }

    const JsonOptions &options_;
    Budget &budget_;
    std::string item_separator_;
    std::string out_;
};

Value from_json(const nlohmann::ordered_json &j, int depth) {
    if (depth > kMaxValueDepth) fail("jinja", "the JSON nests more than {} deep", kMaxValueDepth);
    switch (j.type()) {
        case nlohmann::ordered_json::value_t::null:
            return Value::none();
        case nlohmann::ordered_json::value_t::boolean:
            return Value(j.get<bool>());
        case nlohmann::ordered_json::value_t::number_integer:
            return Value(j.get<int64_t>());
        case nlohmann::ordered_json::value_t::number_unsigned: {
            const auto u = j.get<uint64_t>();
            return u <= uint64_t(INT64_MAX) ? Value(int64_t(u)) : Value(double(u));
        }
        case nlohmann::ordered_json::value_t::number_float:
            return Value(j.get<double>());
        case nlohmann::ordered_json::value_t::string:
            return Value(j.get<std::string>());
        case nlohmann::ordered_json::value_t::array: {
            std::vector<Value> items;
            items.reserve(j.size());
            for (const auto &item : j) items.push_back(from_json(item, depth + 1));
            return Value::list(std::move(items));
        }
        case nlohmann::ordered_json::value_t::object: {
            Dict dict;
            for (const auto &[key, value] : j.items())
                dict.set(Value(key), from_json(value, depth + 1));
            return Value::dict(std::move(dict));
        }
        default:
            fail("jinja", "unsupported JSON value");
    }
}

}  // namespace

std::string to_json(const Value &v, const JsonOptions &options, Budget &budget) {
    JsonWriter writer(options, budget);
    writer.write(v, 0);
    return writer.take();
}

Value parse_json(std::string_view text) {
    nlohmann::ordered_json j;
    try {
        j = nlohmann::ordered_json::parse(text);
    } catch (const nlohmann::json::exception &e) {
        fail("jinja", "not valid JSON: {}", e.what());
    }
    try {
        return from_json(j, 1);
    } catch (const RenderFailure &e) {  // past the bounds on one value
        fail("jinja", "{}", e.what());
    }
}

}  // namespace loom::engine::jinja
