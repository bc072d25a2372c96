// gpt-oss's harmony answers (tools/loom/serve/harmony.h): the channels apart, calls read back as
// the real template writes them, every cut of the text alike, and the grammar of a required call.
#include <gtest/gtest.h>

#include "engine/chat/jinja_chat.h"
#include "engine/grammar/matcher.h"
#include "tests/serve/shared_template.h"
#include "tests/serve/tool_grammar_support.h"
#include "tools/loom/serve/harmony.h"

namespace loom::serve {
namespace {

struct Result {
    std::string content, reasoning;
    std::vector<std::pair<std::string, std::string>> calls;
    bool operator==(const Result &) const = default;
};

Result parse(const std::vector<std::string> &pieces, bool parse_calls = true) {
    HarmonyParser parser(parse_calls);
    Result out;
    auto add = [&](HarmonyParser::Parts parts) {
        out.content += parts.content;
        out.reasoning += parts.reasoning;
        for (const ToolCall &c : parts.calls) out.calls.emplace_back(c.name, c.arguments);
    };
    for (const std::string &p : pieces) add(parser.push(p));
    add(parser.finish());
    return out;
}

void expect_any_cut_alike(const std::string &text, bool parse_calls) {
    const Result whole = parse({text}, parse_calls);
    for (size_t cut = 0; cut <= text.size(); ++cut) {
        ASSERT_EQ(parse({text.substr(0, cut), text.substr(cut)}, parse_calls), whole) << cut;
    }
}

TEST(Harmony, ChannelsAndCalls) {
    const struct {
        std::string text;
        bool parse_calls;
        Result want;
    } cases[] = {
        {"<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
         "<|message|>Answer.",
         true,
         {"Answer.", "Think.", {}}},
        {"<|channel|>final<|message|>Done.<|return|>", true, {"Done.", "", {}}},
        // The recipient after the channel, with <|constrain|>, as the model writes it; the
        // call's <|call|> ends the generation, so the text ends with the arguments.
        {"<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>"
         "commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\": \"Paris\"}",
         true,
         {"", "Need the weather.", {{"get_weather", R"({"city":"Paris"})"}}}},
        // A preamble to nobody is content; two calls one after the other.
        {"<|channel|>commentary<|message|>Looking.<|end|><|start|>assistant to=functions.a"
         "<|channel|>commentary json<|message|>{}<|call|><|start|>assistant to=functions.b"
         "<|channel|>commentary json<|message|>{\"x\": 1}",
         true,
         {"Looking.", "", {{"a", "{}"}, {"b", R"({"x":1})"}}}},
        // Calls not asked for, and arguments that are no object, stay as written.
        {"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}",
         false,
         {"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}", "", {}}},
        {"<|channel|>commentary to=functions.f<|message|>[1]",
         true,
         {"<|channel|>commentary to=functions.f<|message|>[1]", "", {}}},
        // Not harmony at all, or a header that never ends.
        {"Hello there.", true, {"Hello there.", "", {}}},
        {"<|channel|>final", true, {"<|channel|>final", "", {}}},
        {"<|chan", true, {"<|chan", "", {}}},
        {"", true, {}},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.text);
        EXPECT_EQ(parse({c.text}, c.parse_calls), c.want);
        expect_any_cut_alike(c.text, c.parse_calls);
    }
}

using testing::shared_template;

// The call gpt-oss's own template writes for an assistant turn, after the generation prompt's
// "<|start|>assistant" and up to its <|call|> (the end token), is read back as that call.
TEST(Harmony, TheTemplatesCallReadsBack) {
    const std::string source = shared_template("openai-gpt-oss-120b");
    ASSERT_EQ(tool_call_form(source), ToolCallForm::harmony);
    const engine::JinjaChatTemplate chat(source, "<|bos|>", "<|eos|>");
    const auto messages = engine::chat_messages_from_json(R"([
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]}])");
    const auto tools = engine::chat_tools_from_json(R"([{"type": "function", "function": {
        "name": "get_weather", "description": "The weather.", "parameters": {"type": "object",
        "properties": {"city": {"type": "string", "description": "A city."}}}}}])");
    const std::string turns =
        chat.render({.messages = messages, .tools = tools, .add_generation_prompt = false});
    const size_t at = turns.rfind("<|start|>assistant");
    ASSERT_NE(at, std::string::npos) << turns;
    std::string turn = turns.substr(at + 18);
    turn = turn.substr(0, turn.find("<|call|>"));
    SCOPED_TRACE(turn);
    EXPECT_EQ(parse({turn}), (Result{"", "", {{"get_weather", R"({"city":"Paris"})"}}}));
    expect_any_cut_alike(turn, true);
}

TEST(Harmony, TheGrammarOfARequiredCall) {
    const nlohmann::json tools = testing::weather_and_now_tools();
    const auto grammar = tool_call_grammar(ToolCallForm::harmony, tools, "get_weather");
    const std::string call =
        "<|channel|>commentary to=functions.get_weather <|constrain|>json"
        "<|message|>{\"city\": \"Paris\"}";
    EXPECT_TRUE(testing::whole_sentence(grammar, call));
    EXPECT_EQ(parse({call}), (Result{"", "", {{"get_weather", R"({"city":"Paris"})"}}}));
    EXPECT_FALSE(engine::grammar::Matcher(grammar).allows(
        "<|channel|>commentary to=functions.now <|constrain|>json<|message|>"));
    EXPECT_THROW(ToolCallParser{ToolCallForm::harmony}, Error);
}

}  // namespace
}  // namespace loom::serve
