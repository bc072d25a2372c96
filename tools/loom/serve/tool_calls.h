#pragma once
// Tool calls in a chat answer: found in the text the model writes, in the form its template
// teaches it, and returned as OpenAI's message.tool_calls (delta.tool_calls when streamed).
//
// One form so far, Hermes's (NousResearch Hermes, Qwen 2.5 and 3, Granite 4): each call is a JSON
// object {"name": ..., "arguments": {...}} between <tool_call> and </tool_call>. A template
// teaches it when it holds "<tool_call>" and the placeholder "<function-name>"; templates with
// other forms inside the same tags (Qwen3-Coder's <function=...>, GLM's <arg_key>) do not.
//
// tool_choice "required" or a named function constrain the answer with a grammar (one call of
// one of the tools, its arguments valid under the tool's JSON Schema), so that even a small model
// writes a call that parses.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/engine.h"

namespace loom::serve {

enum class ToolCallForm { none, hermes };

// The form a chat template teaches (ToolCallForm::none: the answer is left as text).
ToolCallForm tool_call_form(std::string_view template_source);

struct ToolCall {
    std::string name;
    std::string arguments;  // JSON text of an object
    std::string id;         // given by the server ("call_...")
};

// OpenAI's message.tool_calls / delta.tool_calls entries; `first_index` numbers them in a stream.
nlohmann::json tool_calls_json(const std::vector<ToolCall> &calls, size_t first_index,
                               bool with_index);

// Splits streamed answer text into content and calls. A piece that may begin a tag is held back
// until the next tells; a call block is held until it closes. A block whose JSON is not a call
// (not an object with a string "name" and object "arguments") stays in the content as written,
// as does one never closed.
class ToolCallParser {
  public:
    explicit ToolCallParser(ToolCallForm form) : form_(form) {}

    struct Parts {
        std::string content;
        std::vector<ToolCall> calls;
    };
    Parts push(std::string_view text);
    Parts finish();

  private:
    ToolCallForm form_;
    bool in_call_ = false;
    std::string held_;
};

// The grammar for tool_choice "required" (`name` empty: any of the tools) or one named function,
// in `form`: one call block whose JSON names the function and whose arguments follow its
// `parameters` schema (an object when it has none). `tools` is the request's checked list.
// loom::Error for a schema the converter refuses, naming the tool.
engine::grammar::Grammar tool_call_grammar(ToolCallForm form, const nlohmann::json &tools,
                                           const std::string &name);

}  // namespace loom::serve
