#pragma once
// Tool calls in a chat answer: found in the text the model writes, in the form its template
// teaches it, and returned as OpenAI's message.tool_calls (delta.tool_calls when streamed).
//
// The forms (what a template teaches is read from its source, tool_call_form):
//   hermes        <tool_call>{"name": N, "arguments": {...}}</tool_call>, once per call (Hermes,
//                 Qwen 2.5 / 3, Granite 4)
//   llama3_json   {"name": N, "parameters": {...}} as the whole answer, or after <|python_tag|>
//                 (Llama 3.1 / 3.2 / 3.3)
//   mistral_list  [TOOL_CALLS][{"name": N, "arguments": {...}}, ...] (Mistral Nemo, Small 3.1)
//   mistral_args  [TOOL_CALLS]N[ARGS]{...}, once per call ([CALL_ID]id may sit before [ARGS])
//                 (Mistral Small 3.2, Magistral, Devstral)
//   granite       <|tool_call|>[{"name": N, "arguments": {...}}, ...] (Granite 3.x)
//   deepseek_r1   <｜tool▁calls▁begin｜> then per call <｜tool▁call▁begin｜>function<｜tool▁sep｜>N
//                 ```json {...} ```<｜tool▁call▁end｜>, then <｜tool▁calls▁end｜> (DeepSeek R1, V3)
//   deepseek_v31  the same with <｜tool▁call▁begin｜>N<｜tool▁sep｜>{...}<｜tool▁call▁end｜>
//   command_r     Action: ```json [{"tool_name": N, "parameters": {...}}, ...] ``` (Command R+)
//   command_r7b   <|START_ACTION|>[{"tool_name": N, "parameters": {...}}, ...]<|END_ACTION|>
//   qwen3_coder   <tool_call><function=N><parameter=K>value</parameter>...</function></tool_call>
//   glm           <tool_call>N<arg_key>K</arg_key><arg_value>value</arg_value>...</tool_call>
//   minimax_m2    <minimax:tool_call><invoke name="N"><parameter name="K">value</parameter>...
//                 </invoke>...</minimax:tool_call> (MiniMax M2)
//                 (these three write values as text: typed by the tool's schema, a string where
//                 it says so, else JSON; a required call's grammar writes the required parameters,
//                 then any of the optional ones, in the order listed)
//   kimi_k2       <|tool_calls_section_begin|> then per call <|tool_call_begin|>functions.N:I
//                 <|tool_call_argument_begin|>{...}<|tool_call_end|>, then
//                 <|tool_calls_section_end|> (Kimi K2; "functions.N:I" is the call's id)
//   nemotron_v2   <TOOLCALL>[{"name": N, "arguments": {...}}, ...]</TOOLCALL> (Nemotron Nano 2)
//   functionary_v32  messages to recipients: all\ntext>>>N\n{...}>>>... (Functionary v3.2; the
//                 prompt writes the first ">>>"; functionary.h reads these answers)
//   harmony       gpt-oss's messages, a call one to functions.N on the commentary channel with
//                 the arguments as its body (harmony.h reads these answers, reasoning too)
// Their markers are special tokens in most of these vocabularies, which generated text shows
// only when asked: tool_call_markers lists them so that the server renders those tokens.
//
// tool_choice "required" or a named function constrain the answer with a grammar (one call of
// one of the tools in the form, its arguments valid under the tool's JSON Schema), so that even a
// small model writes a call that parses.
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "loom/engine.h"

namespace loom::serve {

enum class ToolCallForm {
    none,
    hermes,
    llama3_json,
    mistral_list,
    mistral_args,
    granite,
    deepseek_r1,
    deepseek_v31,
    command_r,
    command_r7b,
    harmony,
    qwen3_coder,
    glm,
    minimax_m2,
    kimi_k2,
    nemotron_v2,
    functionary_v32,
};

// The form a chat template teaches (ToolCallForm::none: the answer is left as text).
ToolCallForm tool_call_form(std::string_view template_source);
std::string_view tool_call_form_name(ToolCallForm form);
// The texts of the special tokens a form writes; generated text must show them to be parsed.
std::span<const std::string_view> tool_call_markers(ToolCallForm form);

struct ToolCall {
    std::string name;
    std::string arguments;  // JSON text of an object
    std::string id;         // the model's own (Kimi K2), else given by the server ("call_...")
};

// The compact JSON text of `text` if it is a JSON object, or the JSON text of one (as some models
// write arguments).
std::optional<std::string> json_object_text(std::string_view text);

// A new call's id: "call_" and 16 hex digits, or for the Mistral forms nine letters and digits
// (their templates refuse any other id when the call comes back in the next request).
std::string new_tool_call_id(ToolCallForm form);

// OpenAI's message.tool_calls / delta.tool_calls entries; `first_index` numbers them in a stream.
nlohmann::json tool_calls_json(const std::vector<ToolCall> &calls, size_t first_index,
                               bool with_index);

struct ToolCallSyntax;  // how a form writes its calls (tool_calls.cpp)

// Splits streamed answer text into content and calls. A piece that may begin a form's opening
// is held back until the next tells; calls are held until their block closes (in the forms
// without a closing marker, until the answer ends). A block that holds no calls as the form
// writes them (a name and object arguments) stays in the content as written, as does one never
// closed.
class ToolCallParser {
  public:
    // Not for ToolCallForm::harmony nor functionary_v32 (HarmonyParser and FunctionaryParser read
    // those answers). `tools`: the request's,
    // which type the XML forms' values.
    explicit ToolCallParser(ToolCallForm form, nlohmann::json tools = nlohmann::json::array());

    struct Parts {
        std::string content;
        std::vector<ToolCall> calls;
    };
    Parts push(std::string_view text);
    Parts finish();

  private:
    Parts take_block(std::string_view block) const;
    const ToolCallSyntax *syntax_;  // null: no form, all is content
    nlohmann::json tools_;
    bool at_start_ = true;   // nothing but blanks shown so far
    bool in_block_ = false;  // held_ is a block, opened with opened_with_
    std::string opened_with_;
    std::string held_;
};

// The grammar for tool_choice "required" (`name` empty: any of the tools) or one named function,
// in `form`: one call block whose JSON names the function and whose arguments follow its
// `parameters` schema (an object when it has none); with `close_reasoning` (the prompt opened a
// <think> block) a "</think>" first, as llama.cpp's grammars write it. `tools` is the request's
// checked list. loom::Error for a form without calls, or a schema the converter refuses, naming
// the tool.
engine::grammar::Grammar tool_call_grammar(ToolCallForm form, const nlohmann::json &tools,
                                           const std::string &name, bool close_reasoning = false);

}  // namespace loom::serve
