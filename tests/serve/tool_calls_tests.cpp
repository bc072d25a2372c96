// Tool calls in an answer: the form each shared template teaches, the streamed parser against a
// whole-text reference (std::regex over the answer) at every cut, and the grammar of a required
// call, which accepts exactly calls of the right function with valid arguments.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>

#include "engine/grammar/matcher.h"
#include "loom/error.h"
#include "tools/loom/serve/tool_calls.h"

namespace loom::serve {
namespace {

std::string shared_template(const std::string &name) {
    const std::filesystem::path path = std::filesystem::path(LOOM_SOURCE_DIR) / ".." / "shared" /
                                       "fixtures" / "chat-templates" / name / "template.jinja";
    std::ifstream in(path);
    if (!in) ADD_FAILURE() << "missing " << path << " (../shared beside the repository)";
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ToolCalls, FormOfTheSharedTemplates) {
    for (const char *name :
         {"Qwen-Qwen2.5-7B-Instruct", "Qwen-Qwen3-0.6B",
          "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "ibm-granite-granite-4.0"}) {
        EXPECT_EQ(tool_call_form(shared_template(name)), ToolCallForm::hermes) << name;
    }
    for (const char *name : {"Qwen3-Coder", "GLM-4.6", "meta-llama-Llama-3.1-8B-Instruct",
                             "mistralai-Mistral-Nemo-Instruct-2407", "openai-gpt-oss-120b"}) {
        EXPECT_EQ(tool_call_form(shared_template(name)), ToolCallForm::none) << name;
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

Result streamed(const std::vector<std::string> &pieces) {
    ToolCallParser parser(ToolCallForm::hermes);
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

bool whole_sentence(const engine::grammar::Grammar &g, const std::string &text) {
    engine::grammar::Matcher m(g);
    if (!m.allows(text)) return false;
    m.accept(text);
    return m.can_end();
}

TEST(ToolCalls, TheGrammarOfARequiredCall) {
    const nlohmann::json tools = nlohmann::json::parse(R"([
        {"type": "function", "function": {"name": "get_weather", "parameters": {
            "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "now"}}])");
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

    const nlohmann::json refused = nlohmann::json::parse(R"([{"type": "function", "function": {
        "name": "f", "parameters": {"type": "string", "pattern": "x+"}}}])");
    try {
        tool_call_grammar(ToolCallForm::hermes, refused, "");
        ADD_FAILURE() << "a refused schema was taken";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("tools[0].function.parameters"), std::string::npos)
            << e.what();
    }
    EXPECT_THROW(tool_call_grammar(ToolCallForm::none, tools, ""), Error);
}

}  // namespace
}  // namespace loom::serve
