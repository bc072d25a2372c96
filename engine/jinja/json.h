#pragma once
// JSON in and out of template values. Out: the `tojson` filter as transformers defines it,
// json.dumps(x, ensure_ascii=False, indent=..., separators=..., sort_keys=...), byte for byte:
// ", " and ": " between items by default ("," and ": " with an indent), floats as Python prints
// them, non-ASCII kept unless ensure_ascii. In: a JSON text as values with the keys in their
// order (messages and tools as a client sent them).
#include <optional>
#include <string>
#include <string_view>

#include "engine/jinja/value.h"

namespace loom::engine::jinja {

struct JsonOptions {
    std::optional<std::string> indent;          // per level; std::nullopt: all on one line
    std::optional<std::string> item_separator;  // default ", " (",": with an indent)
    std::string key_separator = ": ";
    bool sort_keys = false;
    bool ensure_ascii = false;
};

// RenderFailure for what JSON cannot hold (undefined, functions, objects) and for keys that are
// not str, int, float, bool or none.
std::string to_json(const Value &v, const JsonOptions &options, Budget &budget);

// loom::Error ("[jinja] ...") for text that is not JSON or nests deeper than kMaxValueDepth.
// Integers that fit 64 bits are ints, other numbers floats.
Value parse_json(std::string_view text);

}  // namespace loom::engine::jinja
