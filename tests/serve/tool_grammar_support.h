#pragma once
// What the tests of the required-call grammars share: two tools (get_weather with a required
// string city, and now without parameters), and whether a grammar takes a text whole.
#include <nlohmann/json.hpp>
#include <string>

#include "engine/grammar/matcher.h"

namespace loom::serve::testing {

inline nlohmann::json weather_and_now_tools() {
    return nlohmann::json::parse(R"([
        {"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "now"}}])");
}

inline bool whole_sentence(const engine::grammar::Grammar &g, const std::string &text) {
    engine::grammar::Matcher m(g);
    if (!m.allows(text)) return false;
    m.accept(text);
    return m.can_end();
}

}  // namespace loom::serve::testing
