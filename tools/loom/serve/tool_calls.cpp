#include "tools/loom/serve/tool_calls.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <algorithm>
#include <array>
#include <random>

#include "loom/error.h"
#include "tools/loom/serve/text_tags.h"

namespace loom::serve {

using Calls = std::optional<std::vector<ToolCall>>;

namespace {

constexpr std::string_view kBlanks = " \t\r\n";

std::string_view trim(std::string_view s) {
    const size_t b = s.find_first_not_of(kBlanks);
    if (b == std::string_view::npos) return {};
    return s.substr(b, s.find_last_not_of(kBlanks) - b + 1);
}

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

// An object's text, or an object given as the JSON text of one (as some models write
// arguments), as compact JSON text.
std::optional<std::string> object_text(const nlohmann::json &j) {
    if (j.is_object()) return j.dump();
    if (!j.is_string()) return std::nullopt;
    const nlohmann::json parsed = nlohmann::json::parse(j.get<std::string>(), nullptr, false);
    if (parsed.is_discarded() || !parsed.is_object()) return std::nullopt;
    return parsed.dump();
}

// A call written as a JSON object: a non-empty string under `name_key`, object arguments under
// `args_key`.
std::optional<ToolCall> call_from(const nlohmann::json &j, const char *name_key,
                                  const char *args_key) {
    if (!j.is_object()) return std::nullopt;
    const auto name = j.find(name_key);
    const auto arguments = j.find(args_key);
    if (name == j.end() || !name->is_string() || name->get<std::string>().empty() ||
        arguments == j.end()) {
        return std::nullopt;
    }
    std::optional<std::string> args = object_text(*arguments);
    if (!args) return std::nullopt;
    return ToolCall{name->get<std::string>(), std::move(*args)};
}

// A non-empty JSON list of calls written as objects.
Calls calls_from_list(std::string_view text, const char *name_key, const char *args_key) {
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_array() || j.empty()) return std::nullopt;
    std::vector<ToolCall> calls;
    for (const nlohmann::json &item : j) {
        std::optional<ToolCall> call = call_from(item, name_key, args_key);
        if (!call) return std::nullopt;
        calls.push_back(std::move(*call));
    }
    return calls;
}

// JSON values one after another, apart by blanks or ';' ({...}; {...}): where each ends is found
// by its brackets outside strings, then each is parsed whole.
std::optional<std::vector<nlohmann::json>> json_values(std::string_view text) {
    std::vector<nlohmann::json> values;
    size_t i = 0;
    for (;;) {
        while (i < text.size() && (kBlanks.find(text[i]) != std::string_view::npos ||
                                   (text[i] == ';' && !values.empty()))) {
            ++i;
        }
        if (i == text.size()) break;
        if (text[i] != '{' && text[i] != '[') return std::nullopt;
        int depth = 0;
        bool in_string = false;
        size_t end = i;
        for (; end < text.size(); ++end) {
            const char c = text[end];
            if (in_string) {
                if (c == '\\')
                    ++end;
                else if (c == '"')
                    in_string = false;
            } else if (c == '"') {
                in_string = true;
            } else if (c == '{' || c == '[') {
                ++depth;
            } else if ((c == '}' || c == ']') && --depth == 0) {
                break;
            }
        }
        if (end >= text.size()) return std::nullopt;
        nlohmann::json j = nlohmann::json::parse(text.substr(i, end + 1 - i), nullptr, false);
        if (j.is_discarded()) return std::nullopt;
        values.push_back(std::move(j));
        i = end + 1;
    }
    if (values.empty()) return std::nullopt;
    return values;
}

// Text between a ```json (or ```) fence and its closing ```, or the text itself unfenced.
std::string_view unfenced(std::string_view text) {
    text = trim(text);
    if (!starts_with(text, "```")) return text;
    text.remove_prefix(3);
    if (starts_with(text, "json")) text.remove_prefix(4);
    if (text.size() >= 3 && text.substr(text.size() - 3) == "```") text.remove_suffix(3);
    return trim(text);
}

// The body parsers: a block's text (between its opening and closing markers) to its calls.

Calls parse_hermes(std::string_view body) {
    std::optional<ToolCall> call =
        call_from(nlohmann::json::parse(body, nullptr, false), "name", "arguments");
    if (!call) return std::nullopt;
    return std::vector<ToolCall>{std::move(*call)};
}

Calls parse_llama3(std::string_view body) {
    const auto values = json_values(body);
    if (!values) return std::nullopt;
    std::vector<ToolCall> calls;
    for (const nlohmann::json &j : *values) {
        std::optional<ToolCall> call = call_from(j, "name", "parameters");
        if (!call) call = call_from(j, "name", "arguments");
        if (!call) return std::nullopt;
        calls.push_back(std::move(*call));
    }
    return calls;
}

Calls parse_name_arguments_list(std::string_view body) {
    return calls_from_list(body, "name", "arguments");
}

Calls parse_command_r(std::string_view body) {
    return calls_from_list(unfenced(body), "tool_name", "parameters");
}

Calls parse_command_r7b(std::string_view body) {
    return calls_from_list(body, "tool_name", "parameters");
}

// get_weather[ARGS]{...}[TOOL_CALLS]other[CALL_ID]abcdefghi[ARGS]{...}
Calls parse_mistral_args(std::string_view body) {
    constexpr std::string_view kNext = "[TOOL_CALLS]", kArgs = "[ARGS]", kId = "[CALL_ID]";
    std::vector<ToolCall> calls;
    for (;;) {
        const size_t next = body.find(kNext);
        const std::string_view call = body.substr(0, next);
        const size_t args = call.find(kArgs);
        if (args == std::string_view::npos) return std::nullopt;
        std::string_view name = call.substr(0, args);
        name = trim(name.substr(0, name.find(kId)));
        std::optional<std::string> arguments = json_object_text(call.substr(args + kArgs.size()));
        if (name.empty() || !arguments) return std::nullopt;
        calls.push_back(ToolCall{std::string(name), std::move(*arguments)});
        if (next == std::string_view::npos) return calls;
        body.remove_prefix(next + kNext.size());
    }
}

// Text between `open` (at the start of `s`, after blanks) and `close`, consumed from `s`.
std::optional<std::string_view> take_between(std::string_view &s, std::string_view open,
                                             std::string_view close) {
    s = trim(s);
    if (!starts_with(s, open)) return std::nullopt;
    s.remove_prefix(open.size());
    const size_t end = s.find(close);
    if (end == std::string_view::npos) return std::nullopt;
    const std::string_view inside = s.substr(0, end);
    s.remove_prefix(end + close.size());
    return inside;
}

// Per call <｜tool▁call▁begin｜>LEFT<｜tool▁sep｜>RIGHT<｜tool▁call▁end｜>; R1 writes the type as
// LEFT and "name\n```json\n{...}\n```" as RIGHT, V3.1 the name and the arguments.
Calls parse_deepseek(std::string_view body, bool r1) {
    constexpr std::string_view kBegin = "<｜tool▁call▁begin｜>", kSep = "<｜tool▁sep｜>",
                               kEnd = "<｜tool▁call▁end｜>";
    std::vector<ToolCall> calls;
    while (!trim(body).empty()) {
        const auto call = take_between(body, kBegin, kEnd);
        if (!call) return std::nullopt;
        const size_t sep = call->find(kSep);
        if (sep == std::string_view::npos) return std::nullopt;
        std::string_view name = trim(call->substr(0, sep));
        std::string_view arguments = call->substr(sep + kSep.size());
        if (r1) {
            const size_t line = arguments.find('\n');
            if (line == std::string_view::npos) return std::nullopt;
            name = trim(arguments.substr(0, line));
            arguments = unfenced(arguments.substr(line + 1));
        }
        std::optional<std::string> args = json_object_text(arguments);
        if (name.empty() || !args) return std::nullopt;
        calls.push_back(ToolCall{std::string(name), std::move(*args)});
    }
    if (calls.empty()) return std::nullopt;
    return calls;
}

Calls parse_deepseek_r1(std::string_view body) {
    return parse_deepseek(body, true);
}
Calls parse_deepseek_v31(std::string_view body) {
    return parse_deepseek(body, false);
}

// Whether a JSON Schema says its value is a string ("type": "string"; any other "type", such as
// a list of types, is read as JSON).
bool string_schema(const nlohmann::json &schema) {
    if (!schema.is_object()) return false;
    const auto type = schema.find("type");
    return type != schema.end() && type->is_string() && type->get<std::string>() == "string";
}

// The JSON Schema of parameter `key` of function `name` among the request's `tools`, if any.
const nlohmann::json *parameter_schema(const nlohmann::json &tools, std::string_view name,
                                       std::string_view key) {
    if (!tools.is_array()) return nullptr;
    for (const nlohmann::json &tool : tools) {
        const auto function = tool.find("function");
        if (function == tool.end() || !function->is_object() || !function->contains("name") ||
            (*function)["name"] != name) {
            continue;
        }
        const auto parameters = function->find("parameters");
        if (parameters == function->end() || !parameters->is_object()) return nullptr;
        const auto properties = parameters->find("properties");
        if (properties == parameters->end() || !properties->is_object()) return nullptr;
        const auto schema = properties->find(std::string(key));
        return schema == properties->end() ? nullptr : &*schema;
    }
    return nullptr;
}

// The XML forms' arguments as JSON text: their values are the model's raw bytes, which need not
// be UTF-8; a broken sequence becomes U+FFFD, as everywhere the server writes the model's text.
std::string arguments_text(const nlohmann::json &arguments) {
    return arguments.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A parameter the XML forms write as text: a string where its schema says so (or the text is no
// JSON), else the JSON value (Python's True / False / None too: Qwen3-Coder's template writes
// values with Python's str()).
nlohmann::json parameter_value(std::string_view text, const nlohmann::json *schema) {
    if (schema != nullptr && string_schema(*schema)) {
        return std::string(text);
    }
    const std::string_view t = trim(text);
    if (t == "True") return true;
    if (t == "False") return false;
    if (t == "None") return nullptr;
    nlohmann::json j = nlohmann::json::parse(t, nullptr, false);
    if (j.is_discarded()) return std::string(text);
    return j;
}

// Parameters KEY_OPEN key KEY_CLOSE value </parameter>, up to the tag `end` (taken from body
// with them); `value_lines`: each value on lines of its own between the tags.
std::optional<nlohmann::json> xml_parameters(std::string_view &body, std::string_view key_open,
                                             std::string_view key_close, std::string_view end,
                                             bool value_lines, std::string_view name,
                                             const nlohmann::json &tools) {
    constexpr std::string_view kValueEnd = "</parameter>";
    nlohmann::json arguments = nlohmann::json::object();
    for (;;) {
        body = trim(body);
        if (starts_with(body, end)) {
            body.remove_prefix(end.size());
            return arguments;
        }
        const auto key = take_between(body, key_open, key_close);
        const size_t value_end = key ? body.find(kValueEnd) : std::string_view::npos;
        if (value_end == std::string_view::npos) return std::nullopt;
        std::string_view value = body.substr(0, value_end);
        body.remove_prefix(value_end + kValueEnd.size());
        if (value_lines && starts_with(value, "\n")) value.remove_prefix(1);
        if (value_lines && value.ends_with('\n')) value.remove_suffix(1);
        arguments[std::string(trim(*key))] =
            parameter_value(value, parameter_schema(tools, name, trim(*key)));
    }
}

// <function=NAME>
// <parameter=KEY>
// VALUE
// </parameter>
// ...
// </function>
Calls parse_qwen3_coder(std::string_view body, const nlohmann::json &tools) {
    const auto name = take_between(body, "<function=", ">");
    if (!name || trim(*name).empty()) return std::nullopt;
    const auto arguments =
        xml_parameters(body, "<parameter=", ">", "</function>", true, trim(*name), tools);
    if (!arguments || !trim(body).empty()) return std::nullopt;
    return std::vector<ToolCall>{{std::string(trim(*name)), arguments_text(*arguments)}};
}

// NAME
// <arg_key>KEY</arg_key>
// <arg_value>VALUE</arg_value>
// ...
Calls parse_glm(std::string_view body, const nlohmann::json &tools) {
    const size_t name_end = std::min(body.find('\n'), body.find("<arg_key>"));
    const std::string_view name = trim(body.substr(0, name_end));
    if (name.empty() || name.find('<') != std::string_view::npos) return std::nullopt;
    body.remove_prefix(std::min(name_end, body.size()));
    nlohmann::json arguments = nlohmann::json::object();
    while (!trim(body).empty()) {
        const auto key = take_between(body, "<arg_key>", "</arg_key>");
        const auto value = key ? take_between(body, "<arg_value>", "</arg_value>") : std::nullopt;
        if (!value) return std::nullopt;
        arguments[std::string(trim(*key))] =
            parameter_value(*value, parameter_schema(tools, name, trim(*key)));
    }
    return std::vector<ToolCall>{{std::string(name), arguments_text(arguments)}};
}

// <invoke name="NAME">
// <parameter name="KEY">VALUE</parameter>
// ...
// </invoke>, once per call
Calls parse_minimax_m2(std::string_view body, const nlohmann::json &tools) {
    std::vector<ToolCall> calls;
    while (!trim(body).empty()) {
        const auto name = take_between(body, "<invoke name=\"", "\">");
        if (!name || trim(*name).empty()) return std::nullopt;
        const auto arguments = xml_parameters(body, "<parameter name=\"", "\">", "</invoke>", false,
                                              trim(*name), tools);
        if (!arguments) return std::nullopt;
        calls.push_back({std::string(trim(*name)), arguments_text(*arguments)});
    }
    if (calls.empty()) return std::nullopt;
    return calls;
}

// Per call <|tool_call_begin|>functions.NAME:INDEX<|tool_call_argument_begin|>{...}
// <|tool_call_end|>; "functions.NAME:INDEX" is also the call's id, which the template shows the
// model again beside the call's result.
Calls parse_kimi_k2(std::string_view body) {
    constexpr std::string_view kArguments = "<|tool_call_argument_begin|>";
    std::vector<ToolCall> calls;
    while (!trim(body).empty()) {
        const auto call = take_between(body, "<|tool_call_begin|>", "<|tool_call_end|>");
        const size_t sep = call ? call->find(kArguments) : std::string_view::npos;
        if (sep == std::string_view::npos) return std::nullopt;
        const std::string_view id = trim(call->substr(0, sep));
        std::string_view name = id;
        if (starts_with(name, "functions.")) name.remove_prefix(10);
        name = name.substr(0, name.rfind(':'));
        std::optional<std::string> args = json_object_text(call->substr(sep + kArguments.size()));
        if (name.empty() || !args) return std::nullopt;
        calls.push_back(ToolCall{std::string(name), std::move(*args), std::string(id)});
    }
    if (calls.empty()) return std::nullopt;
    return calls;
}

constexpr std::array<std::string_view, 6> kGlmMarkers{
    "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"};
constexpr std::array<std::string_view, 2> kHermesMarkers{"<tool_call>", "</tool_call>"};
constexpr std::array<std::string_view, 1> kLlama3Markers{"<|python_tag|>"};
constexpr std::array<std::string_view, 1> kMistralListMarkers{"[TOOL_CALLS]"};
constexpr std::array<std::string_view, 3> kMistralArgsMarkers{"[TOOL_CALLS]", "[ARGS]",
                                                              "[CALL_ID]"};
constexpr std::array<std::string_view, 1> kGraniteMarkers{"<|tool_call|>"};
constexpr std::array<std::string_view, 5> kDeepseekMarkers{
    "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>",
    "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"};
constexpr std::array<std::string_view, 2> kMinimaxMarkers{"<minimax:tool_call>",
                                                          "</minimax:tool_call>"};
constexpr std::array<std::string_view, 5> kKimiMarkers{
    "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
    "<|tool_call_argument_begin|>", "<|tool_call_end|>"};
constexpr std::array<std::string_view, 2> kNemotronMarkers{"<TOOLCALL>", "</TOOLCALL>"};
constexpr std::array<std::string_view, 2> kCommandR7bMarkers{"<|START_ACTION|>", "<|END_ACTION|>"};
constexpr std::array<std::string_view, 7> kHarmonyMarkers{
    "<|start|>",     "<|channel|>", "<|message|>", "<|end|>",
    "<|constrain|>", "<|return|>",  "<|call|>"};

}  // namespace

struct ToolCallSyntax {
    ToolCallForm form;
    std::string_view name;
    std::string_view open;                  // begins a block (not part of its body)
    std::string_view open_at_start;         // also begins one as the answer's first non-blank text,
                                            // and is the body's beginning (Llama 3's "{")
    std::string_view close;                 // ends it; empty: the answer's end does
    Calls (*parse)(std::string_view body);  // null: read by a parser of its own
    // One call as the grammar writes it: call_prefix with NAME replaced by the function's name
    // (JSON-escaped), the arguments, call_suffix.
    std::string_view call_prefix;
    std::string_view call_suffix;
    std::span<const std::string_view> markers;
    // Instead of `parse`, for the forms whose values the tools' schemas type (the XML ones).
    Calls (*parse_typed)(std::string_view body, const nlohmann::json &tools) = nullptr;
};

namespace {

using Syntax = ToolCallSyntax;

const std::array<Syntax, 16> kSyntaxes{{
    {ToolCallForm::hermes, "hermes", "<tool_call>", "", "</tool_call>", parse_hermes,
     "<tool_call>\n{\"name\": \"NAME\", \"arguments\": ", "}\n</tool_call>", kHermesMarkers},
    {ToolCallForm::llama3_json, "llama3_json", "<|python_tag|>", "{", "", parse_llama3,
     "{\"name\": \"NAME\", \"parameters\": ", "}", kLlama3Markers},
    {ToolCallForm::mistral_list, "mistral_list", "[TOOL_CALLS]", "", "", parse_name_arguments_list,
     "[TOOL_CALLS][{\"name\": \"NAME\", \"arguments\": ", "}]", kMistralListMarkers},
    {ToolCallForm::mistral_args, "mistral_args", "[TOOL_CALLS]", "", "", parse_mistral_args,
     "[TOOL_CALLS]NAME[ARGS]", "", kMistralArgsMarkers},
    {ToolCallForm::granite, "granite", "<|tool_call|>", "", "", parse_name_arguments_list,
     "<|tool_call|>[{\"name\": \"NAME\", \"arguments\": ", "}]", kGraniteMarkers},
    {ToolCallForm::deepseek_r1, "deepseek_r1", "<｜tool▁calls▁begin｜>", "", "<｜tool▁calls▁end｜>",
     parse_deepseek_r1,
     "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\n",
     "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>", kDeepseekMarkers},
    {ToolCallForm::deepseek_v31, "deepseek_v31", "<｜tool▁calls▁begin｜>", "",
     "<｜tool▁calls▁end｜>", parse_deepseek_v31,
     "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>",
     "<｜tool▁call▁end｜><｜tool▁calls▁end｜>", kDeepseekMarkers},
    {ToolCallForm::command_r,
     "command_r",
     "Action:",
     "",
     "",
     parse_command_r,
     "Action:\n```json\n[{\"tool_name\": \"NAME\", \"parameters\": ",
     "}]\n```",
     {}},
    {ToolCallForm::command_r7b, "command_r7b", "<|START_ACTION|>", "", "<|END_ACTION|>",
     parse_command_r7b, "<|START_ACTION|>[{\"tool_name\": \"NAME\", \"parameters\": ",
     "}]<|END_ACTION|>", kCommandR7bMarkers},
    // Their grammars are written around each parameter (tool_call_grammar).
    {ToolCallForm::qwen3_coder, "qwen3_coder", "<tool_call>", "", "</tool_call>", nullptr, "", "",
     kHermesMarkers, parse_qwen3_coder},
    {ToolCallForm::glm, "glm", "<tool_call>", "", "</tool_call>", nullptr, "", "", kGlmMarkers,
     parse_glm},
    {ToolCallForm::minimax_m2, "minimax_m2", "<minimax:tool_call>", "", "</minimax:tool_call>",
     nullptr, "", "", kMinimaxMarkers, parse_minimax_m2},
    {ToolCallForm::kimi_k2, "kimi_k2", "<|tool_calls_section_begin|>", "",
     "<|tool_calls_section_end|>", parse_kimi_k2,
     "<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>",
     "<|tool_call_end|><|tool_calls_section_end|>", kKimiMarkers},
    {ToolCallForm::nemotron_v2, "nemotron_v2", "<TOOLCALL>", "", "</TOOLCALL>",
     parse_name_arguments_list, "<TOOLCALL>[{\"name\": \"NAME\", \"arguments\": ", "}]</TOOLCALL>",
     kNemotronMarkers},
    // The generation prompt wrote the first message's ">>>": the answer begins with the
    // recipient (functionary.h reads these answers).
    {ToolCallForm::functionary_v32, "functionary_v32", "", "", "", nullptr, "NAME\n", "", {}},
    // The call's <|call|> ends the generation: the grammar lets it end after the arguments.
    {ToolCallForm::harmony, "harmony", "", "", "", nullptr,
     "<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>", "", kHarmonyMarkers},
}};

const Syntax *syntax_of(ToolCallForm form) {
    for (const Syntax &s : kSyntaxes) {
        if (s.form == form) return &s;
    }
    return nullptr;
}

std::string with_name(std::string_view frame, const std::string &name) {
    std::string out(frame);
    const std::string quoted = nlohmann::json(name).dump();
    const size_t at = out.find("NAME");
    if (at != std::string::npos) out.replace(at, 4, quoted.substr(1, quoted.size() - 2));
    return out;
}

}  // namespace

ToolCallForm tool_call_form(std::string_view source) {
    const auto has = [&](std::string_view s) { return source.find(s) != std::string_view::npos; };
    // The checks go from the most particular marker to the least: Hermes-style templates of
    // Llama 3 fine-tunes also hold Llama's headers, and "<tool_call>" is inside "<|tool_call|>"
    // only with the bars.
    if (has("<｜tool▁calls▁begin｜>")) {
        return has("['name'] + '<｜tool▁sep｜>'") ? ToolCallForm::deepseek_v31
                                                  : ToolCallForm::deepseek_r1;
    }
    if (has("[TOOL_CALLS]")) {
        return has("[ARGS]") ? ToolCallForm::mistral_args : ToolCallForm::mistral_list;
    }
    if (has("<|START_ACTION|>")) return ToolCallForm::command_r7b;
    if (has("<minimax:tool_call>")) return ToolCallForm::minimax_m2;
    if (has("<|tool_calls_section_begin|>")) return ToolCallForm::kimi_k2;
    if (has("<TOOLCALL>")) return ToolCallForm::nemotron_v2;
    // Qwen3-Coder's and GLM's XML inside <tool_call> (before Hermes's JSON in the same tags).
    if (has("<tool_call>") && has("<function=") && has("<parameter=")) {
        return ToolCallForm::qwen3_coder;
    }
    if (has("<tool_call>") && has("<arg_key>")) return ToolCallForm::glm;
    if (has("<|channel|>") && has("<|message|>") && has("<|start|>assistant")) {
        return ToolCallForm::harmony;
    }
    // Qwen3-Coder's <function=...> and GLM's <arg_key> use the same tags for other forms: only
    // the JSON one names the placeholder "<function-name>".
    if (has("<tool_call>") && has("<function-name>")) return ToolCallForm::hermes;
    if (has("<|tool_call|>")) return ToolCallForm::granite;
    if (has("Action:") && has("\"tool_name\"")) return ToolCallForm::command_r;
    // Functionary v3.2 (a Llama 3.1 fine-tune) writes its calls to recipients.
    if (has("'>>>all\\n'")) return ToolCallForm::functionary_v32;
    if (has("<|start_header_id|>ipython<|end_header_id|>")) return ToolCallForm::llama3_json;
    return ToolCallForm::none;
}

std::string_view tool_call_form_name(ToolCallForm form) {
    const Syntax *s = syntax_of(form);
    return s != nullptr ? s->name : "none";
}

std::span<const std::string_view> tool_call_markers(ToolCallForm form) {
    const Syntax *s = syntax_of(form);
    return s != nullptr ? s->markers : std::span<const std::string_view>();
}

ToolCallParser::ToolCallParser(ToolCallForm form, nlohmann::json tools)
    : syntax_(syntax_of(form)), tools_(std::move(tools)) {
    if (syntax_ != nullptr && syntax_->parse == nullptr && syntax_->parse_typed == nullptr) {
        fail("tools", "{} answers have a parser of their own", syntax_->name);
    }
}

ToolCallParser::Parts ToolCallParser::take_block(std::string_view block) const {
    Parts out;
    if (Calls calls = syntax_->parse_typed != nullptr ? syntax_->parse_typed(block, tools_)
                                                      : syntax_->parse(block)) {
        out.calls = std::move(*calls);
    } else {
        out.content = opened_with_ + std::string(block);
    }
    return out;
}

ToolCallParser::Parts ToolCallParser::push(std::string_view text) {
    Parts out;
    if (syntax_ == nullptr) {
        out.content = text;
        return out;
    }
    const auto add = [&](Parts parts) {
        out.content += parts.content;
        for (ToolCall &c : parts.calls) out.calls.push_back(std::move(c));
    };
    held_ += text;
    for (;;) {
        if (in_block_) {
            if (syntax_->close.empty()) return out;  // held to the answer's end
            const size_t close = held_.find(syntax_->close);
            if (close == std::string::npos) return out;  // the block is still being written
            Parts block = take_block(std::string_view(held_).substr(0, close));
            if (!block.content.empty()) block.content += syntax_->close;
            add(std::move(block));
            held_.erase(0, close + syntax_->close.size());
            in_block_ = false;
            continue;
        }
        if (at_start_ && !syntax_->open_at_start.empty()) {
            const size_t first = held_.find_first_not_of(kBlanks);
            if (first == std::string::npos) return out;  // blanks so far: the next piece tells
            const std::string_view rest = std::string_view(held_).substr(first);
            if (starts_with(rest, syntax_->open_at_start)) {
                out.content += held_.substr(0, first);
                held_.erase(0, first);
                in_block_ = true;
                opened_with_.clear();
                at_start_ = false;
                continue;
            }
            if (starts_with(syntax_->open_at_start, rest)) return out;
            at_start_ = false;
        }
        const size_t open = held_.find(syntax_->open);
        if (open == std::string::npos) {
            const size_t keep = partial_tag_at_end(held_, syntax_->open);
            out.content += held_.substr(0, held_.size() - keep);
            held_.erase(0, held_.size() - keep);
            if (held_.find_first_not_of(kBlanks) != std::string::npos ||
                out.content.find_first_not_of(kBlanks) != std::string::npos) {
                at_start_ = false;
            }
            return out;
        }
        out.content += held_.substr(0, open);
        held_.erase(0, open + syntax_->open.size());
        in_block_ = true;
        opened_with_ = syntax_->open;
        at_start_ = false;
    }
}

ToolCallParser::Parts ToolCallParser::finish() {
    Parts out;
    if (in_block_ && syntax_->close.empty()) {
        out = take_block(held_);
    } else {
        out.content = (in_block_ ? opened_with_ : std::string()) + held_;
    }
    held_.clear();
    in_block_ = false;
    return out;
}

std::optional<std::string> json_object_text(std::string_view text) {
    return object_text(nlohmann::json::parse(text, nullptr, false));
}

std::string new_tool_call_id(ToolCallForm form) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    if (form == ToolCallForm::mistral_list || form == ToolCallForm::mistral_args) {
        constexpr std::string_view kAlphabet =
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        std::string id(9, ' ');
        for (char &c : id) c = kAlphabet[rng() % kAlphabet.size()];
        return id;
    }
    return fmt::format("call_{:016x}", rng());
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

namespace {

// How the XML forms write a call, for their grammars: NAME and KEY put in.
struct XmlFrame {
    std::string_view open, param_open, param_close, close;
};
constexpr XmlFrame kQwen3CoderFrame{"<tool_call>\n<function=NAME>\n", "<parameter=KEY>\n",
                                    "\n</parameter>\n", "</function>\n</tool_call>"};
constexpr XmlFrame kGlmFrame{"<tool_call>NAME\n", "<arg_key>KEY</arg_key>\n<arg_value>",
                             "</arg_value>\n", "</tool_call>"};
constexpr XmlFrame kMinimaxFrame{"<minimax:tool_call>\n<invoke name=\"NAME\">\n",
                                 "<parameter name=\"KEY\">", "</parameter>\n",
                                 "</invoke>\n</minimax:tool_call>"};

std::string put(std::string_view frame, std::string_view placeholder, const std::string &value) {
    std::string out(frame);
    const size_t at = out.find(placeholder);
    if (at != std::string::npos) out.replace(at, placeholder.size(), value);
    return out;
}

// The grammar of one call's alternatives, each text with rules "part-<n>" that become parts[n].
struct CallGrammar {
    std::vector<std::string> alternatives;
    std::vector<engine::grammar::Grammar> parts;
    // A rule standing for the sentences of `schema`'s JSON, converted on its own.
    std::string json_part(const nlohmann::json &schema) {
        parts.push_back(
            engine::grammar::parse_gbnf(engine::grammar::json_schema_to_gbnf(schema.dump())));
        return fmt::format("part-{}", parts.size() - 1);
    }
    // `lead`: what may come before the call (a rule's right side, or empty).
    engine::grammar::Grammar build(std::string_view lead) const {
        std::string frame =
            fmt::format("tool-call ::= {} ( {} )\n", lead, fmt::join(alternatives, " | "));
        for (size_t i = 0; i < parts.size(); ++i) frame += fmt::format("part-{} ::= \"{{\"\n", i);
        engine::grammar::Grammar grammar = engine::grammar::parse_gbnf(frame, "tool-call");
        for (size_t i = 0; i < parts.size(); ++i) {
            engine::grammar::embed_grammar(grammar, fmt::format("part-{}", i), parts[i]);
        }
        return grammar;
    }
};

// A parameter's value as the XML forms write it: a string as its text (no '<', which would
// begin the closing tag; minLength / maxLength kept), its enum's or const's texts where it has
// one; anything else as JSON.
// loom::Error for a string whose other keywords a raw text cannot be held to.
std::string xml_value(CallGrammar &g, const nlohmann::json &schema) {
    if (!string_schema(schema)) return g.json_part(schema);
    for (const auto &[key, value] : schema.items()) {
        if (key != "type" && key != "description" && key != "title" && key != "enum" &&
            key != "const" && key != "minLength" && key != "maxLength") {
            fail("tools", "a string parameter with '{}' cannot be constrained in this form yet",
                 key);
        }
    }
    std::vector<std::string> texts;
    if (schema.contains("const")) {
        if (!schema["const"].is_string())
            fail("tools", "a string parameter whose const is no string");
        texts.push_back(schema["const"].get<std::string>());
    }
    for (const nlohmann::json &v : schema.value("enum", nlohmann::json::array())) {
        if (v.is_string()) texts.push_back(v.get<std::string>());
    }
    if (schema.contains("const") || schema.contains("enum")) {
        if (texts.empty()) fail("tools", "a string parameter whose enum holds no string");
        std::vector<std::string> literals;
        for (const std::string &t : texts) literals.push_back(engine::grammar::gbnf_literal(t));
        return "( " + fmt::format("{}", fmt::join(literals, " | ")) + " )";
    }
    // Lengths count characters, as the class reads one.
    const auto count = [&](const char *key, int64_t none) {
        const auto it = schema.find(key);
        if (it == schema.end()) return none;
        if (!it->is_number_unsigned() || it->get<uint64_t>() > 10000) {
            fail("tools", "'{}' must be a count of at most 10000", key);
        }
        return int64_t(it->get<uint64_t>());
    };
    const int64_t min = count("minLength", 0), max = count("maxLength", -1);
    if (min == 0 && max < 0) return "[^<]*";
    if (max >= 0 && max < min) fail("tools", "maxLength is below minLength");
    return max < 0 ? fmt::format("[^<]{{{},}}", min) : fmt::format("[^<]{{{},{}}}", min, max);
}

// One call of `function` in an XML form: its required parameters, in the order listed, then its
// optional ones that it writes.
std::string xml_call(CallGrammar &g, const XmlFrame &frame, const nlohmann::json &function) {
    const std::string name = function["name"].get<std::string>();
    const nlohmann::json parameters = function.value("parameters", nlohmann::json::object());
    const nlohmann::json properties = parameters.is_object()
                                          ? parameters.value("properties", nlohmann::json::object())
                                          : nlohmann::json::object();
    std::string out = engine::grammar::gbnf_literal(put(frame.open, "NAME", name));
    const nlohmann::json required = parameters.is_object()
                                        ? parameters.value("required", nlohmann::json::array())
                                        : nlohmann::json::array();
    const auto parameter = [&](const std::string &key, const std::string &value) {
        return engine::grammar::gbnf_literal(put(frame.param_open, "KEY", key)) + " " + value +
               " " + engine::grammar::gbnf_literal(frame.param_close);
    };
    std::vector<std::string> written;
    for (const nlohmann::json &key : required) {
        if (!key.is_string()) continue;
        const std::string k = key.get<std::string>();
        const nlohmann::json schema = properties.is_object() && properties.contains(k)
                                          ? properties[k]
                                          : nlohmann::json::object();
        out += " " + parameter(k, xml_value(g, schema));
        written.push_back(k);
    }
    // Then each optional one, in the order listed, or not. One whose schema cannot be held to
    // is left out: the call stays valid without it.
    for (const auto &[k, schema] : properties.items()) {
        if (std::find(written.begin(), written.end(), k) != written.end()) continue;
        try {
            out += " ( " + parameter(k, xml_value(g, schema)) + " )?";
        } catch (const Error &) {
        }
    }
    return out + " " + engine::grammar::gbnf_literal(frame.close);
}

}  // namespace

engine::grammar::Grammar tool_call_grammar(ToolCallForm form, const nlohmann::json &tools,
                                           const std::string &name, bool close_reasoning) {
    const Syntax *syntax = syntax_of(form);
    if (syntax == nullptr) {
        fail("tools",
             "the model's chat template teaches no tool call form Loom knows, so tool_choice "
             "cannot require a call");
    }
    const XmlFrame *xml = form == ToolCallForm::qwen3_coder  ? &kQwen3CoderFrame
                          : form == ToolCallForm::glm        ? &kGlmFrame
                          : form == ToolCallForm::minimax_m2 ? &kMinimaxFrame
                                                             : nullptr;
    // One alternative per tool: the form's frame around the grammar of the tool's parameters
    // (the XML forms: around each required parameter's value).
    CallGrammar g;
    for (size_t i = 0; i < tools.size(); ++i) {
        const nlohmann::json &function = tools[i]["function"];
        const std::string function_name = function["name"].get<std::string>();
        if (!name.empty() && function_name != name) continue;
        const auto parameters = function.find("parameters");
        const nlohmann::json schema = parameters != function.end() && !parameters->is_null()
                                          ? *parameters
                                          : nlohmann::json{{"type", "object"}};
        try {
            if (xml != nullptr) {
                g.alternatives.push_back(xml_call(g, *xml, function));
                continue;
            }
            const std::string arguments = g.json_part(schema);
            g.alternatives.push_back(fmt::format(
                "{} {} {}",
                engine::grammar::gbnf_literal(with_name(syntax->call_prefix, function_name)),
                arguments,
                syntax->call_suffix.empty() ? ""
                                            : engine::grammar::gbnf_literal(syntax->call_suffix)));
        } catch (const Error &e) {
            fail("tools", "tools[{}].function.parameters: {}", i, e.what());
        }
    }
    if (g.alternatives.empty()) {
        fail("tools", "tool_choice names '{}', which is not among the tools", name);
    }
    // The block the prompt opened closes first (and at once: a thought of unbounded length would
    // let a small model never reach the call), or the call would be read as reasoning.
    return g.build(close_reasoning ? R"("</think>" [ \t\n]{0,4})" : "");
}

}  // namespace loom::serve
