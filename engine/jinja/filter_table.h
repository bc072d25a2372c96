#pragma once
// The filter table's parts: each file of filters adds its own (filters.cpp: text, numbers, JSON
// and the rest; sequence_filters.cpp: those over lists and dicts).
#include <string>
#include <unordered_map>

#include "engine/jinja/value.h"

namespace loom::engine::jinja {

using Filter = Value (*)(const Value &input, CallArgs &args);
using FilterTable = std::unordered_map<std::string, Filter>;

void add_sequence_filters(FilterTable &table);

// A filter's str argument (soft_str: undefined is "").
std::string text_of(const Value &v, Budget &budget);

}  // namespace loom::engine::jinja
