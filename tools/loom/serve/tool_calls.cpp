#include "tools/loom/serve/tool_calls.h"

#include <fmt/format.h>

#include "loom/error.h"
#include "tools/loom/serve/text_tags.h"

namespace loom::serve {
namespace {

constexpr std::string_view kOpen = "<tool_call>";
constexpr std::string_view kClose = "</tool_call>";

// {"name": "...", "arguments": {...}} (arguments may also come as the JSON text of an object).
std::optional<ToolCall> parse_call(std::string_view text) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    const auto name = j.find("name");
    const auto arguments = j.find("arguments");
    if (name == j.end() || !name->is_string() || name->get<std::string>().empty() ||
        arguments == j.end()) {
        return std::nullopt;
    }
    if (arguments->is_object()) return ToolCall{name->get<std::string>(), arguments->dump()};
    if (!arguments->is_string()) return std::nullopt;
    const nlohmann::json parsed =
        nlohmann::json::parse(arguments->get<std::string>(), nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
    return ToolCall{name->get<std::string>(), parsed.dump()};
}

// The JSON Schema of one call of `function`: its name, and its parameters as the arguments.
nlohmann::json call_schema(const nlohmann::json &function) {
    const auto parameters = function.find("parameters");
    return {{"type", "object"},
            {"properties",
             {{"name", {{"const", function["name"]}}},
              {"arguments", parameters != function.end() && !parameters->is_null()
                                ? *parameters
                                : nlohmann::json{{"type", "object"}}}}},
            {"required", {"name", "arguments"}}};
}

}  // namespace

ToolCallForm tool_call_form(std::string_view template_source) {
    const bool hermes = template_source.find(kOpen) != std::string_view::npos &&
                        template_source.find("<function-name>") != std::string_view::npos;
    return hermes ? ToolCallForm::hermes : ToolCallForm::none;
}

ToolCallParser::Parts ToolCallParser::push(std::string_view text) {
    Parts out;
    if (form_ == ToolCallForm::none) {
        out.content = text;
        return out;
    }
    held_ += text;
    for (;;) {
        if (!in_call_) {
            const size_t open = held_.find(kOpen);
            if (open == std::string::npos) {
                const size_t keep = partial_tag_at_end(held_, kOpen);
                out.content += held_.substr(0, held_.size() - keep);
                held_.erase(0, held_.size() - keep);
                return out;
            }
            out.content += held_.substr(0, open);
            held_.erase(0, open + kOpen.size());
            in_call_ = true;
            continue;
        }
        const size_t close = held_.find(kClose);
        if (close == std::string::npos) return out;  // the block is still being written
        if (std::optional<ToolCall> call = parse_call(std::string_view(held_).substr(0, close))) {
            out.calls.push_back(std::move(*call));
        } else {
            out.content += std::string(kOpen) + held_.substr(0, close + kClose.size());
        }
        held_.erase(0, close + kClose.size());
        in_call_ = false;
    }
}

ToolCallParser::Parts ToolCallParser::finish() {
    Parts out;
    out.content = (in_call_ ? std::string(kOpen) : std::string()) + held_;
    held_.clear();
    in_call_ = false;
    return out;
}

nlohmann::json tool_calls_json(const std::vector<ToolCall> &calls, size_t first_index,
                               bool with_index) {
    nlohmann::json out = nlohmann::json::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        nlohmann::json call = {
            {"id", calls[i].id},
            {"type", "function"},
            {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}};
        if (with_index) call["index"] = first_index + i;
        out.push_back(std::move(call));
    }
    return out;
}

engine::grammar::Grammar tool_call_grammar(ToolCallForm form, const nlohmann::json &tools,
                                           const std::string &name) {
    if (form != ToolCallForm::hermes) {
        fail("tools",
             "the model's chat template teaches no tool call form Loom knows (Hermes's "
             "<tool_call> JSON), so tool_choice cannot require a call");
    }
    nlohmann::json any = nlohmann::json::array();
    for (size_t i = 0; i < tools.size(); ++i) {
        const nlohmann::json &function = tools[i]["function"];
        if (!name.empty() && function["name"] != name) continue;
        const nlohmann::json schema = call_schema(function);
        try {  // each alone first, so that a refusal names its tool
            engine::grammar::json_schema_to_gbnf(schema.dump());
        } catch (const Error &e) {
            fail("tools", "tools[{}].function.parameters: {}", i, e.what());
        }
        any.push_back(schema);
    }
    if (any.empty()) fail("tools", "tool_choice names '{}', which is not among the tools", name);
    const nlohmann::json schema = any.size() == 1 ? any[0] : nlohmann::json{{"anyOf", any}};
    // The schema's grammar starts at `root`; the block wraps it under a start rule of its own.
    const std::string gbnf = engine::grammar::json_schema_to_gbnf(schema.dump());
    constexpr std::string_view kStart = "tool-call-block";
    if (gbnf.find(fmt::format("\n{} ::=", kStart)) != std::string::npos) {
        fail("tools", "a tool's schema gives a rule named {}", kStart);
    }
    return engine::grammar::parse_gbnf(
        fmt::format("{} ::= \"<tool_call>\\n\" root \"\\n</tool_call>\"\n{}", kStart, gbnf),
        kStart);
}

}  // namespace loom::serve
