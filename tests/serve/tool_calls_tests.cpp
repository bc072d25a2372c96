// Tool calls in an answer: the form each shared template teaches, the streamed parser against a
// whole-text reference (std::regex over the answer) at every cut, and the grammar of a required
// call, which accepts exactly calls of the right function with valid arguments.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>

#include "engine/chat/jinja_chat.h"
#include "engine/grammar/matcher.h"
#include "loom/error.h"
#include "tests/serve/shared_template.h"
#include "tests/serve/tool_grammar_support.h"
#include "tools/loom/serve/reasoning.h"
#include "tools/loom/serve/tool_calls.h"

namespace loom::serve {
namespace {

using testing::shared_template;

TEST(ToolCalls, FormOfTheSharedTemplates) {
    const std::pair<const char *, ToolCallForm> forms[] = {
        {"Qwen-Qwen2.5-7B-Instruct", ToolCallForm::hermes},
        {"Qwen-Qwen3-0.6B", ToolCallForm::hermes},
        {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", ToolCallForm::hermes},
        {"ibm-granite-granite-4.0", ToolCallForm::hermes},
        {"meta-llama-Llama-3.1-8B-Instruct", ToolCallForm::llama3_json},
        {"meta-llama-Llama-3.2-3B-Instruct", ToolCallForm::llama3_json},
        {"mistralai-Mistral-Nemo-Instruct-2407", ToolCallForm::mistral_list},
        {"Mistral-Small-3.2-24B-Instruct-2506", ToolCallForm::mistral_args},
        {"ibm-granite-granite-3.3-2B-Instruct", ToolCallForm::granite},
        {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", ToolCallForm::deepseek_r1},
        {"deepseek-ai-DeepSeek-V3.1", ToolCallForm::deepseek_v31},
        {"CohereForAI-c4ai-command-r-plus-tool_use", ToolCallForm::command_r},
        {"openai-gpt-oss-120b", ToolCallForm::harmony},
        {"Qwen3-Coder", ToolCallForm::qwen3_coder},
        {"GLM-4.6", ToolCallForm::glm},
        {"MiniMax-M2", ToolCallForm::minimax_m2},
        {"moonshotai-Kimi-K2", ToolCallForm::kimi_k2},
        {"NVIDIA-Nemotron-Nano-v2", ToolCallForm::nemotron_v2},
        // Templates that teach no form.
        {"google-gemma-2-2b-it", ToolCallForm::none},
        {"microsoft-Phi-3.5-mini-instruct", ToolCallForm::none},
    };
    for (const auto &[name, form] : forms) {
        EXPECT_EQ(tool_call_form_name(tool_call_form(shared_template(name))),
                  tool_call_form_name(form))
            << name;
    }
}

using Result = std::pair<std::string, std::vector<std::pair<std::string, std::string>>>;

// The whole answer: every <tool_call>...</tool_call> (shortest) whose JSON is an object with a
// string name and object (or object-text) arguments is a call; the rest, blocks that are not
// calls included, is content as written.
Result reference(const std::string &text) {
    Result out;
    static const std::regex block("<tool_call>([\\s\\S]*?)</tool_call>");
    size_t last = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), block);
         it != std::sregex_iterator(); ++it) {
        out.first += text.substr(last, size_t(it->position()) - last);
        last = size_t(it->position() + it->length());
        const auto j = nlohmann::json::parse((*it)[1].str(), nullptr, false);
        nlohmann::json args = j.is_object() && j.contains("arguments") ? j["arguments"] : nullptr;
        if (args.is_string()) args = nlohmann::json::parse(args.get<std::string>(), nullptr, false);
        if (j.is_object() && j.contains("name") && j["name"].is_string() &&
            !j["name"].get<std::string>().empty() && args.is_object()) {
            out.second.emplace_back(j["name"], args.dump());
        } else {
            out.first += it->str();
        }
    }
    out.first += text.substr(last);
    return out;
}

Result streamed(const std::vector<std::string> &pieces, ToolCallForm form = ToolCallForm::hermes,
                const nlohmann::json &tools = nlohmann::json::array()) {
    ToolCallParser parser(form, tools);
    Result out;
    auto add = [&](ToolCallParser::Parts parts) {
        out.first += parts.content;
        for (const ToolCall &c : parts.calls) out.second.emplace_back(c.name, c.arguments);
    };
    for (const std::string &p : pieces) add(parser.push(p));
    add(parser.finish());
    return out;
}

TEST(ToolCalls, AnyChunkingGivesTheWholeAnswersCalls) {
    const char *texts[] = {
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
        "\"Paris\"}}\n</tool_call>",
        "Let me look.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n"
        "<tool_call>{\"name\": \"b\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>",
        "<tool_call>not json</tool_call> then text",
        "<tool_call>{\"name\": \"a\", \"arguments\": [1]}</tool_call>",
        "<tool_call>{\"name\": \"never closed\", \"arguments\": {}}",
        "no calls at all",
        "<tool_ca",
        "a </tool_call> b <tool_call",
        "",
    };
    for (const char *t : texts) {
        const std::string text = t;
        SCOPED_TRACE(text);
        const Result want = reference(text);
        EXPECT_EQ(streamed({text}), want);
        for (size_t cut = 0; cut <= text.size(); ++cut) {
            EXPECT_EQ(streamed({text.substr(0, cut), text.substr(cut)}), want) << cut;
        }
    }
    const Result first = streamed({texts[0]});
    EXPECT_EQ(first.first, "");
    ASSERT_EQ(first.second.size(), 1u);
    EXPECT_EQ(first.second[0].first, "get_weather");
    EXPECT_EQ(first.second[0].second, R"({"city":"Paris"})");
    EXPECT_EQ(streamed({texts[1]}).second.size(), 2u);
    EXPECT_EQ(streamed({texts[4]}).first, texts[4]);  // nothing lost
}

using testing::whole_sentence;

TEST(ToolCalls, TheGrammarOfARequiredCall) {
    const nlohmann::json tools = testing::weather_and_now_tools();
    const auto any = tool_call_grammar(ToolCallForm::hermes, tools, "");
    const auto weather = tool_call_grammar(ToolCallForm::hermes, tools, "get_weather");
    const std::string paris =
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
        "\"Paris\"}}\n</tool_call>";
    const std::string now = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
    EXPECT_TRUE(whole_sentence(any, paris));
    EXPECT_TRUE(whole_sentence(any, now));
    EXPECT_TRUE(whole_sentence(weather, paris));
    EXPECT_FALSE(whole_sentence(weather, now));
    EXPECT_FALSE(whole_sentence(
        any, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {}}\n</tool_call>"));
    EXPECT_FALSE(whole_sentence(any, "Sure. " + paris));
    // What the grammar allows, the parser reads back as the same call.
    const Result parsed = streamed({paris});
    ASSERT_EQ(parsed.second.size(), 1u);
    EXPECT_EQ(parsed.second[0].second, R"({"city":"Paris"})");

    const nlohmann::json refused = nlohmann::json::parse(R"json([{"type": "function", "function": {
        "name": "f", "parameters": {"type": "string", "pattern": "(?=x)"}}}])json");
    try {
        tool_call_grammar(ToolCallForm::hermes, refused, "");
        ADD_FAILURE() << "a refused schema was taken";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("tools[0].function.parameters"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(tool_call_grammar(ToolCallForm::none, tools, ""), Error);
}

// Where the prompt opened a <think> block, a required call closes it first: the call would
// otherwise be read as reasoning. Closed at once, as llama.cpp's grammars do, so that no model
// can think past its token budget instead of calling.
TEST(ToolCalls, ARequiredCallClosesTheBlockThePromptOpened) {
    const nlohmann::json tools = nlohmann::json::parse(R"([{"type": "function", "function": {
        "name": "now", "parameters": {"type": "object", "properties": {}}}}])");
    const std::string call = "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_call>";
    const auto closing = tool_call_grammar(ToolCallForm::hermes, tools, "", true);
    EXPECT_FALSE(whole_sentence(closing, call));
    EXPECT_FALSE(whole_sentence(closing, "A thought.</think>" + call));
    const std::string answer = "</think>\n\n" + call;
    EXPECT_TRUE(whole_sentence(closing, answer));
    // As the server reads such an answer: no thought, the call.
    ReasoningSplit split(true);
    ReasoningSplit::Parts parts = split.push(answer);
    const ReasoningSplit::Parts rest = split.finish();
    EXPECT_EQ(parts.reasoning + rest.reasoning, "");
    EXPECT_EQ(streamed({parts.content + rest.content}).second,
              (std::vector<std::pair<std::string, std::string>>{{"now", "{}"}}));
    EXPECT_FALSE(whole_sentence(tool_call_grammar(ToolCallForm::hermes, tools, ""), answer));
}

// Every cut of `text` into two pieces gives what the whole text gives.
void expect_any_cut_alike(const std::string &text, ToolCallForm form) {
    const Result whole = streamed({text}, form);
    for (size_t cut = 0; cut <= text.size(); ++cut) {
        ASSERT_EQ(streamed({text.substr(0, cut), text.substr(cut)}, form), whole) << cut;
    }
}

using Calls = std::vector<std::pair<std::string, std::string>>;

// An assistant turn with `calls` rendered by a real template is read back as those calls: the
// template writes calls as the model learned to, so what it writes is what the model will.
// The turn is the text after the rendered prompt (the user's turn with the generation prompt),
// up to where the turn ends.
TEST(ToolCalls, CallsTheTemplatesWriteReadBack) {
    const char *kTools = R"([{"type": "function", "function": {"name": "get_weather",
        "description": "The weather in a city.", "parameters": {"type": "object",
        "properties": {"city": {"type": "string", "description": "The city."}},
        "required": ["city"]}}}])";
    const Calls one = {{"get_weather", R"({"city":"Paris"})"}};
    const Calls two = {{"get_weather", R"({"city":"Paris"})"},
                       {"get_weather", R"({"city":"Rome"})"}};
    struct Case {
        const char *name;
        bool several;  // the template writes more than one call per turn
    };
    const Case cases[] = {
        {"Qwen-Qwen2.5-7B-Instruct", true},
        {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", true},
        {"ibm-granite-granite-4.0", true},
        {"meta-llama-Llama-3.1-8B-Instruct", false},
        {"meta-llama-Llama-3.2-3B-Instruct", false},
        {"mistralai-Mistral-Nemo-Instruct-2407", true},
        {"Mistral-Small-3.2-24B-Instruct-2506", true},
        {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", true},
        {"deepseek-ai-DeepSeek-V3.1", true},
        {"CohereForAI-c4ai-command-r-plus-tool_use", true},
        {"moonshotai-Kimi-K2", true},
        {"NVIDIA-Nemotron-Nano-v2", true},
    };
    const char *kTurnEnds[] = {"<SPECIAL_12>",
                               "<|eot_id|>",
                               "<|eom_id|>",
                               "<|im_end|>",
                               "<|eos|>",
                               "<｜end▁of▁sentence｜>",
                               "<|END_OF_TURN_TOKEN|>",
                               "<|end_of_text|>",
                               "<|START_OF_TURN_TOKEN|>"};
    for (const Case &c : cases) {
        SCOPED_TRACE(c.name);
        const std::string source = shared_template(c.name);
        const ToolCallForm form = tool_call_form(source);
        const engine::JinjaChatTemplate chat(source, "<|bos|>", "<|eos|>");
        for (const Calls *want : {&one, &two}) {
            if (want == &two && !c.several) continue;
            nlohmann::json calls = nlohmann::json::array();
            for (size_t i = 0; i < want->size(); ++i) {
                calls.push_back(
                    {{"id", fmt::format("call{:05d}", i)},  // 9 characters: Mistral's
                     {"type", "function"},
                     {"function", {{"name", (*want)[i].first}, {"arguments", (*want)[i].second}}}});
            }
            const nlohmann::json user = {{"role", "user"}, {"content", "Weather?"}};
            const nlohmann::json assistant = {
                {"role", "assistant"}, {"content", ""}, {"tool_calls", calls}};
            const auto render = [&](const nlohmann::json &messages, bool generation_prompt) {
                return chat.render({.messages = engine::chat_messages_from_json(messages.dump()),
                                    .tools = engine::chat_tools_from_json(kTools),
                                    .add_generation_prompt = generation_prompt});
            };
            const std::string prompt = render(nlohmann::json::array({user}), true);
            const std::string turns = render(nlohmann::json::array({user, assistant}), false);
            size_t common = size_t(
                std::mismatch(prompt.begin(), prompt.end(), turns.begin(), turns.end()).first -
                prompt.begin());
            // A generation prompt that opens more than the turn does (R1's and Nemotron's
            // "<think>\n"): back to the beginning of the tag where they part.
            if (common < prompt.size()) common = turns.rfind('<', common - 1);
            std::string turn = turns.substr(common);
            for (const char *end : kTurnEnds) turn = turn.substr(0, turn.find(end));
            // Command R+ writes its instructions after the turns, so the prompt and the turns
            // part before the assistant's role marker.
            if (turn.starts_with("<|CHATBOT_TOKEN|>")) turn.erase(0, 17);
            SCOPED_TRACE(turn);
            const Result got = streamed({turn}, form);
            EXPECT_EQ(got.second, *want);
            // What is left is blanks or an empty thought (DeepSeek V3.1's <think></think>).
            std::string rest = got.first;
            if (rest.starts_with("<think></think>")) rest.erase(0, 15);
            EXPECT_EQ(rest.find_first_not_of(" \t\r\n"), std::string::npos) << got.first;
            expect_any_cut_alike(turn, form);
        }
    }
}

// The forms whose templates write no calls (Granite 3.3 only describes its form in words) or
// that are not among the shared templates, and the variants a model may write.
TEST(ToolCalls, TheFormsAsModelsWriteThem) {
    const struct {
        ToolCallForm form;
        std::string text, content;
        Calls calls;
    } cases[] = {
        {ToolCallForm::granite,
         R"(<|tool_call|>[{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}])",
         "",
         {{"a", R"({"x":1})"}, {"b", "{}"}}},
        {ToolCallForm::command_r7b,
         "Sure.<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"a\", \"parameters\": "
         "{\"x\": 1}}]<|END_ACTION|>",
         "Sure.",
         {{"a", R"({"x":1})"}}},
        {ToolCallForm::llama3_json,
         R"(<|python_tag|>{"name": "a", "parameters": {"x": 1}}; {"name": "b", "arguments": {}})",
         "",
         {{"a", R"({"x":1})"}, {"b", "{}"}}},
        {ToolCallForm::llama3_json,
         "  \n{\"name\": \"a\", \"parameters\": {}}",
         "  \n",
         {{"a", "{}"}}},
        // An answer that begins as JSON but is no call stays as written, as does JSON later on.
        {ToolCallForm::llama3_json, R"({"answer": 42})", R"({"answer": 42})", {}},
        {ToolCallForm::llama3_json,
         R"(It is {"name": "a", "parameters": {}})",
         R"(It is {"name": "a", "parameters": {}})",
         {}},
        {ToolCallForm::mistral_args,
         R"([TOOL_CALLS]a[CALL_ID]abcdefghi[ARGS]{"x": "[ARGS]"})",
         "",
         {{"a", R"({"x":"[ARGS]"})"}}},
        {ToolCallForm::mistral_args,
         "[TOOL_CALLS]a[ARGS]{\"x\": 1} and more",
         "[TOOL_CALLS]a[ARGS]{\"x\": 1} and more",
         {}},
        {ToolCallForm::mistral_list,
         R"(I will look. [TOOL_CALLS][{"name": "a", "arguments": "{\"x\": 2}"}])",
         "I will look. ",
         {{"a", R"({"x":2})"}}},
        {ToolCallForm::deepseek_r1,
         "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n```json\n{}\n```"
         "<｜tool▁call▁end｜>",  // never closed: stays text
         "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>a\n```json\n{}\n```"
         "<｜tool▁call▁end｜>",
         {}},
        {ToolCallForm::command_r,
         "Action: ```json\n[{\"tool_name\": \"a\", \"parameters\": {}}]\n```",
         "",
         {{"a", "{}"}}},
        {ToolCallForm::minimax_m2,
         "Both. <minimax:tool_call>\n<invoke name=\"a\">\n<parameter name=\"x\">1</parameter>\n"
         "</invoke>\n<invoke name=\"b\">\n</invoke>\n</minimax:tool_call>",
         "Both. ",
         {{"a", R"({"x":1})"}, {"b", "{}"}}},
        {ToolCallForm::minimax_m2,  // a parameter never closed: the block stays text
         "<minimax:tool_call><invoke name=\"a\"><parameter name=\"x\">1</invoke>"
         "</minimax:tool_call>",
         "<minimax:tool_call><invoke name=\"a\"><parameter name=\"x\">1</invoke>"
         "</minimax:tool_call>",
         {}},
        {ToolCallForm::glm,  // a value that is no UTF-8: its broken bytes become U+FFFD
         "<tool_call>a\n<arg_key>x</arg_key>\n<arg_value>\xff!</arg_value>\n</tool_call>",
         "",
         {{"a", "{\"x\":\"\xef\xbf\xbd!\"}"}}},
        {ToolCallForm::kimi_k2,
         "<|tool_calls_section_begin|><|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>"
         "{\"x\": 1}<|tool_call_end|><|tool_call_begin|>functions.b:1"
         "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
         "",
         {{"a", R"({"x":1})"}, {"b", "{}"}}},
        {ToolCallForm::kimi_k2,  // arguments that are no object: stays text
         "<|tool_calls_section_begin|><|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>"
         "[1]<|tool_call_end|><|tool_calls_section_end|>",
         "<|tool_calls_section_begin|><|tool_call_begin|>functions.a:0<|tool_call_argument_begin|>"
         "[1]<|tool_call_end|><|tool_calls_section_end|>",
         {}},
        {ToolCallForm::nemotron_v2,
         "Looking. <TOOLCALL>[{\"name\": \"a\", \"arguments\": {\"x\": 1}}]</TOOLCALL>",
         "Looking. ",
         {{"a", R"({"x":1})"}}},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.text);
        const Result got = streamed({c.text}, c.form);
        EXPECT_EQ(got.first, c.content);
        EXPECT_EQ(got.second, c.calls);
        expect_any_cut_alike(c.text, c.form);
    }
}

// In every form, the grammar of a required call takes one call of a tool with valid arguments,
// and what it takes the parser reads back as that call.
TEST(ToolCalls, EachFormsGrammarWritesCallsItsParserReads) {
    const nlohmann::json tools = testing::weather_and_now_tools();
    // The call as each form writes it, with the arguments' text put in.
    const std::pair<ToolCallForm, std::string> frames[] = {
        {ToolCallForm::hermes, "<tool_call>\n{\"name\": \"@N\", \"arguments\": @A}\n</tool_call>"},
        {ToolCallForm::llama3_json, "{\"name\": \"@N\", \"parameters\": @A}"},
        {ToolCallForm::mistral_list, "[TOOL_CALLS][{\"name\": \"@N\", \"arguments\": @A}]"},
        {ToolCallForm::mistral_args, "[TOOL_CALLS]@N[ARGS]@A"},
        {ToolCallForm::granite, "<|tool_call|>[{\"name\": \"@N\", \"arguments\": @A}]"},
        {ToolCallForm::deepseek_r1,
         "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>@N\n```json\n@A\n```"
         "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
        {ToolCallForm::deepseek_v31,
         "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>@N<｜tool▁sep｜>@A<｜tool▁call▁end｜>"
         "<｜tool▁calls▁end｜>"},
        {ToolCallForm::command_r,
         "Action:\n```json\n[{\"tool_name\": \"@N\", \"parameters\": @A}]\n```"},
        {ToolCallForm::command_r7b,
         "<|START_ACTION|>[{\"tool_name\": \"@N\", \"parameters\": @A}]<|END_ACTION|>"},
        {ToolCallForm::kimi_k2,
         "<|tool_calls_section_begin|><|tool_call_begin|>functions.@N:0"
         "<|tool_call_argument_begin|>@A<|tool_call_end|><|tool_calls_section_end|>"},
        {ToolCallForm::nemotron_v2, "<TOOLCALL>[{\"name\": \"@N\", \"arguments\": @A}]</TOOLCALL>"},
    };
    const auto call = [](std::string frame, const std::string &name, const std::string &args) {
        frame.replace(frame.find("@N"), 2, name);
        frame.replace(frame.find("@A"), 2, args);
        return frame;
    };
    for (const auto &[form, frame] : frames) {
        SCOPED_TRACE(std::string(tool_call_form_name(form)));
        const auto any = tool_call_grammar(form, tools, "");
        const auto weather = tool_call_grammar(form, tools, "get_weather");
        const std::string paris = call(frame, "get_weather", R"({"city": "Paris"})");
        const std::string now = call(frame, "now", "{}");
        EXPECT_TRUE(whole_sentence(any, paris));
        EXPECT_TRUE(whole_sentence(any, now));
        EXPECT_TRUE(whole_sentence(weather, paris));
        EXPECT_FALSE(whole_sentence(weather, now));
        EXPECT_FALSE(whole_sentence(any, call(frame, "get_weather", "{}")));
        EXPECT_FALSE(whole_sentence(any, call(frame, "get_weather", R"({"city": 1})")));
        EXPECT_FALSE(whole_sentence(any, "Sure. " + paris));
        EXPECT_EQ(streamed({paris}, form), Result("", {{"get_weather", R"({"city":"Paris"})"}}));
        EXPECT_EQ(streamed({now}, form), Result("", {{"now", "{}"}}));
        EXPECT_FALSE(tool_call_markers(form).empty() && form != ToolCallForm::command_r);
    }
}

// Kimi K2's calls carry their own ids ("functions.NAME:INDEX"), which its template shows the
// model beside each result: they are the calls' ids.
TEST(ToolCalls, KimiCallsKeepTheirIds) {
    ToolCallParser parser(ToolCallForm::kimi_k2);
    ToolCallParser::Parts parts = parser.push(
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:3"
        "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>");
    ASSERT_EQ(parts.calls.size(), 1u);
    EXPECT_EQ(parts.calls[0].name, "get_weather");
    EXPECT_EQ(parts.calls[0].id, "functions.get_weather:3");
}

// Mistral's templates refuse a call whose id is not nine letters and digits when it comes back.
TEST(ToolCalls, IdsTheTemplatesTake) {
    for (const ToolCallForm form : {ToolCallForm::mistral_list, ToolCallForm::mistral_args}) {
        const std::string id = new_tool_call_id(form);
        EXPECT_EQ(id.size(), 9u);
        EXPECT_TRUE(std::all_of(id.begin(), id.end(), [](char c) { return std::isalnum(c); }))
            << id;
        EXPECT_NE(new_tool_call_id(form), id);
    }
    const std::string id = new_tool_call_id(ToolCallForm::hermes);
    EXPECT_TRUE(id.starts_with("call_")) << id;
    EXPECT_NE(new_tool_call_id(ToolCallForm::hermes), id);
}

// Qwen3-Coder's and GLM's templates write each value as text (strings as they are, the rest as
// JSON or Python's str()): read back through the tools' schemas, the arguments are the same JSON.
TEST(ToolCalls, XmlFormsReadValuesByTheToolsSchemas) {
    const nlohmann::json tools = nlohmann::json::parse(R"([{"type": "function", "function": {
        "name": "get_weather", "description": "The weather.", "parameters": {"type": "object",
        "properties": {"city": {"type": "string", "description": "A city."},
                       "zip": {"type": "string", "description": "A code."},
                       "days": {"type": "integer", "description": "How many."},
                       "metric": {"type": "boolean", "description": "Units."},
                       "hours": {"type": "array", "items": {"type": "integer"},
                                 "description": "Hours."}}}}}])");
    const nlohmann::json arguments = nlohmann::json::parse(
        R"({"city": "Paris\nFrance", "zip": "75001", "days": 3, "metric": true, "hours": [9, 17]})");
    for (const char *name : {"Qwen3-Coder", "GLM-4.6", "MiniMax-M2"}) {
        SCOPED_TRACE(name);
        const std::string source = shared_template(name);
        const ToolCallForm form = tool_call_form(source);
        const engine::JinjaChatTemplate chat(source, "<|bos|>", "<|eos|>");
        const nlohmann::json messages = nlohmann::json::array(
            {{{"role", "user"}, {"content", "Weather?"}},
             {{"role", "assistant"},
              {"content", ""},
              {"tool_calls",
               {{{"id", "c1"},
                 {"type", "function"},
                 {"function", {{"name", "get_weather"}, {"arguments", arguments.dump()}}}}}}}});
        const std::string turns =
            chat.render({.messages = engine::chat_messages_from_json(messages.dump()),
                         .tools = engine::chat_tools_from_json(tools.dump()),
                         .add_generation_prompt = false});
        const std::string_view tag =
            form == ToolCallForm::minimax_m2 ? "minimax:tool_call>" : "tool_call>";
        const size_t open = turns.rfind("<" + std::string(tag));
        const size_t close = turns.rfind("</" + std::string(tag));
        ASSERT_TRUE(open != std::string::npos && close != std::string::npos) << turns;
        const std::string turn = turns.substr(open, close + tag.size() + 2 - open);
        SCOPED_TRACE(turn);
        const Result got = streamed({turn}, form, tools);
        ASSERT_EQ(got.second.size(), 1u) << got.first;
        EXPECT_EQ(got.second[0].first, "get_weather");
        EXPECT_EQ(nlohmann::json::parse(got.second[0].second), arguments);
        EXPECT_EQ(got.first, "");
        // Every cut alike.
        for (size_t cut = 0; cut <= turn.size(); ++cut) {
            ASSERT_EQ(streamed({turn.substr(0, cut), turn.substr(cut)}, form, tools), got) << cut;
        }
        // Without the schemas a value is JSON where it parses as JSON: "75001" a number.
        EXPECT_EQ(nlohmann::json::parse(streamed({turn}, form).second[0].second)["zip"], 75001);
    }
}

// The XML forms' required call: each required parameter in turn, a string as raw text (its enum's
// texts where it has one), anything else as JSON; read back as the same arguments.
TEST(ToolCalls, XmlFormsGrammarsWriteCallsTheirParsersRead) {
    const nlohmann::json tools = nlohmann::json::parse(R"([{"type": "function", "function": {
        "name": "get_weather", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["C", "F"]},
                       "days": {"type": "integer", "minimum": 1, "maximum": 7},
                       "note": {"type": "string"}},
        "required": ["city", "unit", "days"]}}}])");
    const std::pair<ToolCallForm, std::string> calls[] = {
        {ToolCallForm::qwen3_coder,
         "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
         "<parameter=unit>\nF\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n"
         "</tool_call>"},
        {ToolCallForm::glm,
         "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>New York</arg_value>\n"
         "<arg_key>unit</arg_key>\n<arg_value>F</arg_value>\n<arg_key>days</arg_key>\n"
         "<arg_value>3</arg_value>\n</tool_call>"},
        {ToolCallForm::minimax_m2,
         "<minimax:tool_call>\n<invoke name=\"get_weather\">\n<parameter name=\"city\">New York"
         "</parameter>\n<parameter name=\"unit\">F</parameter>\n<parameter name=\"days\">3"
         "</parameter>\n</invoke>\n</minimax:tool_call>"},
    };
    for (const auto &[form, text] : calls) {
        SCOPED_TRACE(text);
        const auto grammar = tool_call_grammar(form, tools, "get_weather");
        EXPECT_TRUE(whole_sentence(grammar, text));
        std::string bad_unit = text;
        bad_unit.replace(bad_unit.find(">F<") != std::string::npos ? bad_unit.find(">F<") + 1
                                                                   : bad_unit.find("\nF\n") + 1,
                         1, "K");
        EXPECT_FALSE(whole_sentence(grammar, bad_unit));
        std::string bad_days = text;
        bad_days.replace(bad_days.rfind('3'), 1, "9");
        EXPECT_FALSE(whole_sentence(grammar, bad_days));
        const Result got = streamed({text}, form, tools);
        ASSERT_EQ(got.second.size(), 1u);
        EXPECT_EQ(nlohmann::json::parse(got.second[0].second),
                  nlohmann::json::parse(R"({"city": "New York", "unit": "F", "days": 3})"));
        // The optional "note" may follow the required ones, not come before them.
        const std::string frame_close = form == ToolCallForm::qwen3_coder ? "</function>"
                                        : form == ToolCallForm::glm       ? "</tool_call>"
                                                                          : "</invoke>";
        const std::string note =
            form == ToolCallForm::qwen3_coder ? "<parameter=note>\nwindy\n</parameter>\n"
            : form == ToolCallForm::glm ? "<arg_key>note</arg_key>\n<arg_value>windy</arg_value>\n"
                                        : "<parameter name=\"note\">windy</parameter>\n";
        std::string with_note = text;
        with_note.insert(with_note.rfind(frame_close), note);
        EXPECT_TRUE(whole_sentence(grammar, with_note)) << with_note;
        EXPECT_EQ(nlohmann::json::parse(streamed({with_note}, form, tools).second.at(0).second),
                  nlohmann::json::parse(
                      R"({"city": "New York", "unit": "F", "days": 3, "note": "windy"})"));
        std::string note_first = text;
        note_first.insert(note_first.find(form == ToolCallForm::glm ? "<arg_key>" : "<parameter"),
                          note);
        EXPECT_FALSE(whole_sentence(grammar, note_first)) << note_first;
    }
    const nlohmann::json patterned = nlohmann::json::parse(R"([{"type": "function", "function": {
        "name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "string",
        "pattern": "^a+$"}}, "required": ["s"]}}}])");
    EXPECT_THROW(tool_call_grammar(ToolCallForm::glm, patterned, ""), Error);
    // An optional parameter whose schema cannot be held to is left out, not refused.
    nlohmann::json optional_pattern = patterned;
    optional_pattern[0]["function"]["parameters"]["required"] = nlohmann::json::array();
    const auto without = tool_call_grammar(ToolCallForm::glm, optional_pattern, "");
    EXPECT_TRUE(whole_sentence(without, "<tool_call>f\n</tool_call>"));
    EXPECT_FALSE(whole_sentence(
        without, "<tool_call>f\n<arg_key>s</arg_key>\n<arg_value>a</arg_value>\n</tool_call>"));
    // A list of types (or any "type" that is not "string") is written and read as JSON; a string
    // whose const is no string is refused (loom::Error, a 400), not thrown past the server.
    const nlohmann::json listed = nlohmann::json::parse(R"([{"type": "function", "function": {
        "name": "f", "parameters": {"type": "object", "properties": {"s": {"type": ["string",
        "null"]}}, "required": ["s"]}}}])");
    const auto grammar = tool_call_grammar(ToolCallForm::glm, listed, "");
    const std::string call =
        "<tool_call>f\n<arg_key>s</arg_key>\n<arg_value>null</arg_value>\n</tool_call>";
    EXPECT_TRUE(whole_sentence(grammar, call));
    EXPECT_EQ(streamed({call}, ToolCallForm::glm, listed).second,
              (std::vector<std::pair<std::string, std::string>>{{"f", R"({"s":null})"}}));
    const nlohmann::json bad_const = nlohmann::json::parse(R"([{"type": "function", "function": {
        "name": "f", "parameters": {"type": "object", "properties": {"s": {"type": "string",
        "const": 3}}, "required": ["s"]}}}])");
    EXPECT_THROW(tool_call_grammar(ToolCallForm::qwen3_coder, bad_const, ""), Error);
}

}  // namespace
}  // namespace loom::serve
