// Functionary v3.2's answers: the real template's own rendering of an assistant turn (text and
// calls) read back as that text and those calls, what models write beside it, every cut of the
// text alike, and the grammar of a required call read back by the same parser.
#include "tools/loom/serve/functionary.h"

#include <gtest/gtest.h>

#include "engine/chat/jinja_chat.h"
#include "engine/grammar/matcher.h"
#include "loom/error.h"
#include "tests/serve/shared_template.h"
#include "tests/serve/tool_grammar_support.h"

namespace loom::serve {
namespace {

using Calls = std::vector<std::pair<std::string, std::string>>;
using Result = std::pair<std::string, Calls>;

Result parse(const std::vector<std::string> &pieces, bool parse_calls = true) {
    FunctionaryParser parser(parse_calls);
    Result out;
    const auto add = [&](FunctionaryParser::Parts parts) {
        out.first += parts.content;
        for (const ToolCall &c : parts.calls) out.second.emplace_back(c.name, c.arguments);
    };
    for (const std::string &p : pieces) add(parser.push(p));
    add(parser.finish());
    return out;
}

void expect_any_cut_alike(const std::string &text, bool parse_calls = true) {
    const Result whole = parse({text}, parse_calls);
    for (size_t cut = 0; cut <= text.size(); ++cut) {
        ASSERT_EQ(parse({text.substr(0, cut), text.substr(cut)}, parse_calls), whole) << cut;
    }
}

TEST(Functionary, TheTemplatesOwnTurnReadsBack) {
    const std::string source = testing::shared_template("meetkai-functionary-medium-v3.2");
    EXPECT_EQ(tool_call_form_name(tool_call_form(source)), "functionary_v32");
    const engine::JinjaChatTemplate chat(source, "<|bos|>", "<|eos|>");
    const char *kTools = R"([{"type": "function", "function": {"name": "get_weather",
        "description": "The weather.", "parameters": {"type": "object",
        "properties": {"city": {"type": "string"}}, "required": ["city"]}}}])";
    const nlohmann::json user = {{"role", "user"}, {"content", "Weather?"}};
    const nlohmann::json assistant = {
        {"role", "assistant"},
        {"content", "Let me look."},
        {"tool_calls",
         {{{"id", "a"},
           {"type", "function"},
           {"function", {{"name", "get_weather"}, {"arguments", R"({"city": "Paris"})"}}}},
          {{"id", "b"},
           {"type", "function"},
           {"function", {{"name", "get_weather"}, {"arguments", R"({"city": "Rome"})"}}}}}}};
    const auto render = [&](const nlohmann::json &messages, bool generation_prompt) {
        return chat.render({.messages = engine::chat_messages_from_json(messages.dump()),
                            .tools = engine::chat_tools_from_json(kTools),
                            .add_generation_prompt = generation_prompt});
    };
    const std::string prompt = render(nlohmann::json::array({user}), true);
    ASSERT_TRUE(prompt.ends_with(">>>")) << prompt;
    const std::string turns = render(nlohmann::json::array({user, assistant}), false);
    ASSERT_EQ(turns.substr(0, prompt.size()), prompt);
    std::string turn = turns.substr(prompt.size());
    turn = turn.substr(0, turn.find("<|eot_id|>"));
    SCOPED_TRACE(turn);
    EXPECT_EQ(
        parse({turn}),
        (Result{"Let me look.",
                {{"get_weather", R"({"city":"Paris"})"}, {"get_weather", R"({"city":"Rome"})"}}}));
    expect_any_cut_alike(turn);
}

TEST(Functionary, TheMessagesAsModelsWriteThem) {
    const struct {
        std::string text, content;
        Calls calls;
        bool parse_calls = true;
    } cases[] = {
        {"all\nHello there.", "Hello there.", {}},
        {"f\n{\"x\": 1}>>>all\nDone.", "Done.", {{"f", R"({"x":1})"}}},
        {"f\n{\"x\": 1}>>>g\n{}", "", {{"f", R"({"x":1})"}, {"g", "{}"}}},
        // A call whose body is no object stays as written; the next message is read as ever.
        {"f\nnot json>>>all\nok", "f\nnot jsonok", {}},
        {"all\nA>>>f\n[1]", "A>>>f\n[1]", {}},
        // A first line that is no recipient: all of it is text.
        {"Hello there, friend.\n>>>f\n{}", "Hello there, friend.\n>>>f\n{}", {}},
        {"Hi", "Hi", {}},
        // Text using ">" is not a new message.
        {"all\na > b >> c", "a > b >> c", {}},
        // Calls not parsed: messages to functions are text as written.
        {"all\nA>>>f\n{}", "A>>>f\n{}", {}, false},
        {"f\n{}", "f\n{}", {}, false},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.text);
        EXPECT_EQ(parse({c.text}, c.parse_calls), (Result{c.content, c.calls}));
        expect_any_cut_alike(c.text, c.parse_calls);
    }
}

TEST(Functionary, TheGrammarOfARequiredCall) {
    const nlohmann::json tools = testing::weather_and_now_tools();
    const auto grammar = tool_call_grammar(ToolCallForm::functionary_v32, tools, "");
    const auto sentence = [&](const std::string &text) {
        return testing::whole_sentence(grammar, text);
    };
    const std::string call = "get_weather\n{\"city\": \"Paris\"}";
    EXPECT_TRUE(sentence(call));
    EXPECT_TRUE(sentence("now\n{}"));
    EXPECT_FALSE(sentence("all\nHello"));
    EXPECT_FALSE(sentence("get_weather\n{}"));
    EXPECT_EQ(parse({call}), (Result{"", {{"get_weather", R"({"city":"Paris"})"}}}));
    EXPECT_THROW(ToolCallParser{ToolCallForm::functionary_v32}, Error);
}

}  // namespace
}  // namespace loom::serve
