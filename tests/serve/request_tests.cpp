// parse_completion_request: OpenAI bodies into jobs, and a 400 naming the field for bad ones.
#include <gtest/gtest.h>

#include <limits>
#include <map>

#include "tools/loom/serve/request.h"

namespace loom::serve {
namespace {

using json = nlohmann::json;

// The RequestError a body raises: its status and param.
std::pair<int, std::string> error_of(const json &body, bool chat = false) {
    try {
        parse_completion_request(body, chat);
    } catch (const RequestError &e) {
        return {e.status(), e.param()};
    }
    return {0, ""};
}

TEST(CompletionRequest, ReadsTheSamplingFields) {
    const auto r = parse_completion_request(json::parse(R"({
        "model": "x", "prompt": "Once", "temperature": 0, "top_p": 0.5, "top_k": 7,
        "min_p": 0.1, "max_tokens": 12, "stop": ["a", "b"], "seed": 42, "stream": true,
        "presence_penalty": 0.5, "frequency_penalty": -0.5, "logprobs": 3, "user": "ignored",
        "cache_prompt": false})"),
                                            false);
    EXPECT_EQ(r.prompt, "Once");
    EXPECT_EQ(r.sampling.temperature, 0.0f);
    EXPECT_EQ(r.sampling.top_p, 0.5f);
    EXPECT_EQ(r.sampling.top_k, 7);
    EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
    EXPECT_EQ(r.sampling.seed, 42u);
    EXPECT_EQ(r.sampling.presence_penalty, 0.5f);
    EXPECT_EQ(r.sampling.frequency_penalty, -0.5f);
    EXPECT_EQ(r.max_tokens, 12);
    EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(r.stream);
    EXPECT_TRUE(r.logprobs);
    EXPECT_EQ(r.top_logprobs, 3);
    EXPECT_FALSE(r.cache_prompt);
    EXPECT_TRUE(parse_completion_request(json::parse(R"({"prompt": "a"})"), false).cache_prompt);
}

TEST(CompletionRequest, ReadsChatMessages) {
    const auto r = parse_completion_request(json::parse(R"({
        "messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": [{"type": "text", "text": "Hi"},
                                                  {"type": "text", "text": " there"}]}],
        "logprobs": true, "top_logprobs": 2, "max_completion_tokens": 5, "stop": "x"})"),
                                            true);
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[0].role, "system");
    EXPECT_EQ(r.messages[1].content, "Hi there");
    EXPECT_TRUE(r.logprobs);
    EXPECT_EQ(r.top_logprobs, 2);
    EXPECT_EQ(r.max_tokens, 5);
    EXPECT_EQ(r.stop, (std::vector<std::string>{"x"}));
}

TEST(CompletionRequest, ToolCallsAndTools) {
    const std::string body = R"({
        "messages": [{"role": "developer", "content": "Use tools."},
                     {"role": "user", "content": "Weather?"},
                     {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                      "function": {"name": "w", "arguments": "{\"z\": 1, \"a\": 2}"}}]},
                     {"role": "tool", "tool_call_id": "c1", "content": "18C"}],
        "tools": [{"type": "function", "function": {"name": "w",
                   "parameters": {"type": "object", "properties": {"z": {}, "a": {}}}}}]})";
    const auto r = parse_completion_request(json::parse(body), true);
    ASSERT_EQ(r.messages.size(), 4u);
    EXPECT_EQ(r.messages[0].role, "system");
    EXPECT_EQ(r.messages[2].content, "");  // tool calls without content
    EXPECT_EQ(r.messages[3].role, "tool");
    // The template's view: the body's key order, arguments parsed, developer as system.
    const engine::ChatRender chat = chat_inputs(body);
    engine::jinja::Budget budget(10000);
    EXPECT_EQ(engine::jinja::to_str(chat.messages.items()[0], budget),
              "{'role': 'system', 'content': 'Use tools.'}");
    EXPECT_EQ(engine::jinja::to_str(chat.messages.items()[2].dict().find("tool_calls")->items()[0],
                                    budget),
              "{'id': 'c1', 'type': 'function', 'function': {'name': 'w', 'arguments': {'z': 1, "
              "'a': 2}}}");
    EXPECT_EQ(engine::jinja::to_str(chat.tools, budget),
              "[{'type': 'function', 'function': {'name': 'w', 'parameters': {'type': 'object', "
              "'properties': {'z': {}, 'a': {}}}}}]");
    EXPECT_TRUE(chat_inputs(R"({"messages": [{"role": "user", "content": "x"}]})").tools.is_none());
    EXPECT_EQ(error_of(json::parse(R"({"messages": [{"role": "user", "content": "x"}],
                                       "tools": {}})"),
                       true),
              std::make_pair(400, std::string("tools")));
    EXPECT_EQ(error_of(json::parse(R"({"messages": [{"role": "user", "tool_calls": []}]})"), true),
              std::make_pair(400, std::string("messages[0].tool_calls")));
}

TEST(CompletionRequest, NamesTheFieldAtFault) {
    const std::pair<int, std::string> none{0, ""};
    EXPECT_EQ(error_of(json::array()), std::make_pair(400, std::string()));
    EXPECT_EQ(error_of(json::object()), std::make_pair(400, std::string("prompt")));
    EXPECT_EQ(error_of({{"prompt", 3}}), std::make_pair(400, std::string("prompt")));
    EXPECT_EQ(error_of({{"prompt", "a"}, {"temperature", "hot"}}),
              std::make_pair(400, std::string("temperature")));
    EXPECT_EQ(error_of({{"prompt", "a"}, {"temperature", 3.5}}),
              std::make_pair(400, std::string("temperature")));
    EXPECT_EQ(error_of({{"prompt", "a"}, {"max_tokens", 0}}),
              std::make_pair(400, std::string("max_tokens")));
    EXPECT_EQ(error_of({{"prompt", "a"}, {"max_tokens", 1.5}}),
              std::make_pair(400, std::string("max_tokens")));
    EXPECT_EQ(error_of({{"prompt", "a"}, {"top_k", -1}}),
              std::make_pair(400, std::string("top_k")));
    EXPECT_EQ(error_of({{"prompt", "a"}, {"stop", {1}}}), std::make_pair(400, std::string("stop")));
    EXPECT_EQ(error_of({{"prompt", "a"}, {"stop", {"1", "2", "3", "4", "5"}}}),
              std::make_pair(400, std::string("stop")));
    EXPECT_EQ(error_of({{"prompt", "a"}, {"n", kMaxAnswers + 1}}),
              std::make_pair(400, std::string("n")));
    EXPECT_EQ(error_of({{"prompt", "a"}, {"n", 0}}), std::make_pair(400, std::string("n")));
    EXPECT_EQ(error_of({{"prompt", "a"}, {"stream", "yes"}}),
              std::make_pair(400, std::string("stream")));
    EXPECT_EQ(error_of({{"prompt", "a"}, {"logprobs", 9}}),
              std::make_pair(400, std::string("logprobs")));
    EXPECT_EQ(error_of({{"messages", json::array()}}, true),
              std::make_pair(400, std::string("messages")));
    EXPECT_EQ(error_of({{"messages", {{{"role", "robot"}, {"content", "x"}}}}}, true),
              std::make_pair(400, std::string("messages[0].role")));
    EXPECT_EQ(error_of({{"messages", {{{"role", "user"}}}}}, true),
              std::make_pair(400, std::string("messages[0].content")));
    EXPECT_EQ(
        error_of({{"messages", {{{"role", "user"}, {"content", "x"}}}}, {"top_logprobs", 2}}, true),
        std::make_pair(400, std::string("top_logprobs")));
    EXPECT_EQ(error_of({{"prompt", "a"}, {"cache_prompt", 1}}),
              std::make_pair(400, std::string("cache_prompt")));
    EXPECT_EQ(error_of({{"prompt", "fine"}, {"temperature", nullptr}}), none);
}

// llama-server's typical_p and n_probs, OpenAI's stream_options and logit_bias (and llama-server's
// list form of it, with texts and false for a ban).
TEST(CompletionRequest, ReadsTheOtherSamplingFields) {
    const auto r = parse_completion_request(json::parse(R"({
        "prompt": "a", "typical_p": 0.3, "n_probs": 4, "stream": true,
        "stream_options": {"include_usage": true},
        "logit_bias": {"15": -100, "2": 7.5, "hello": 1}})"),
                                            false);
    EXPECT_FLOAT_EQ(r.sampling.typical_p, 0.3f);
    EXPECT_TRUE(r.logprobs);
    EXPECT_EQ(r.top_logprobs, 4);
    EXPECT_TRUE(r.include_usage);
    ASSERT_EQ(r.logit_bias.size(), 3u);
    std::map<std::string, float> by_key;
    for (const LogitBias &b : r.logit_bias) {
        by_key[b.token >= 0 ? std::to_string(b.token) : "text:" + b.text] = b.bias;
    }
    EXPECT_EQ(by_key,
              (std::map<std::string, float>{{"15", -100.0f}, {"2", 7.5f}, {"text:hello", 1.0f}}));

    const auto listed = parse_completion_request(
        json::parse(R"({"prompt": "a", "logit_bias": [[5, false], ["cat", -2]]})"), false);
    ASSERT_EQ(listed.logit_bias.size(), 2u);
    EXPECT_EQ(listed.logit_bias[0].token, 5);
    EXPECT_EQ(listed.logit_bias[0].bias, -std::numeric_limits<float>::infinity());
    EXPECT_EQ(listed.logit_bias[1].text, "cat");
    EXPECT_EQ(listed.logit_bias[1].bias, -2.0f);
    EXPECT_FALSE(parse_completion_request(json::parse(R"({"prompt": "a", "stream": true})"), false)
                     .include_usage);
}

TEST(CompletionRequest, NamesTheOtherFieldsAtFault) {
    for (const char *body :
         {R"({"prompt": "a", "typical_p": 1.5})", R"({"prompt": "a", "n_probs": 21})",
          R"({"prompt": "a", "n_probs": "x"})"}) {
        const auto [status, param] = error_of(json::parse(body));
        EXPECT_EQ(status, 400) << body;
        EXPECT_TRUE(param == "typical_p" || param == "n_probs") << body;
    }
    for (const char *bias : {R"({"1": 101})", R"({"1": "x"})", R"([[1]])", R"([[1, true]])",
                             R"([[[1], 1]])", R"(7)", R"({"": 1})", R"([[-3, 1]])"}) {
        const json body = {{"prompt", "a"}, {"logit_bias", json::parse(bias)}};
        EXPECT_EQ(error_of(body), std::make_pair(400, std::string("logit_bias"))) << bias;
    }
    EXPECT_EQ(
        error_of(json::parse(R"({"prompt": "a", "stream_options": {"include_usage": true}})")),
        std::make_pair(400, std::string("stream_options")));
    EXPECT_EQ(error_of(json::parse(R"({"prompt": "a", "stream": true, "stream_options": 1})")),
              std::make_pair(400, std::string("stream_options")));
    EXPECT_EQ(error_of(json::parse(
                  R"({"prompt": "a", "stream": true, "stream_options": {"include_usage": 1}})")),
              std::make_pair(400, std::string("stream_options.include_usage")));
}

// tools and tool_choice of the wrong shapes are 400s naming them (the fuzzer's first find here:
// a "type" that was not a string escaped as a nlohmann type_error).
TEST(CompletionRequest, NamesBadToolsAndToolChoice) {
    const std::string user = R"("messages": [{"role": "user", "content": "x"}])";
    const std::string f = R"("tools": [{"type": "function", "function": {"name": "f"}}])";
    for (const std::string &fields : std::vector<std::string>{
             R"("tools": [{"type": 1, "function": {"name": "f"}}])",
             R"("tools": [{"type": "function", "function": {"name": 7}}])",
             R"("tools": [{"type": "function", "function": {"name": ""}}])",
             R"("tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}])",
             f + R"(, "tool_choice": {"type": {}})",
             f + R"(, "tool_choice": {"type": "function", "function": {"name": []}})",
             f + R"(, "tool_choice": {"type": "function", "function": {"name": "g"}})",
             f + R"(, "tool_choice": "sometimes")", std::string(R"("tool_choice": "required")"),
             std::string(R"("tool_choice": 5)")}) {
        const std::string body = "{" + user + ", " + fields + "}";
        const auto [status, param] = error_of(json::parse(body), true);
        EXPECT_EQ(status, 400) << body;
        EXPECT_TRUE(param.starts_with("tools") || param == "tool_choice") << body << ": " << param;
    }
    const auto named = parse_completion_request(
        json::parse("{" + user + ", " + f +
                    R"(, "tool_choice": {"type": "function", "function": {"name": "f"}}})"),
        true);
    EXPECT_EQ(named.tool_choice, "function");
    EXPECT_EQ(named.tool_choice_name, "f");
    EXPECT_EQ(named.tools.size(), 1u);
}

TEST(JsonBody, MalformedJsonIsA400) {
    try {
        parse_json_body("{\"prompt\": ");
        FAIL();
    } catch (const RequestError &e) {
        EXPECT_EQ(e.status(), 400);
        EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
    }
}

TEST(JsonBody, NumbersBeyondDoubleAndOddPartsAre400s) {
    for (const std::string body :
         {"{\"prompt\": \"x\", \"temperature\": 1e999}", "{\"a\": -1e999}"}) {
        try {
            parse_json_body(body);
            ADD_FAILURE() << "accepted " << body;
        } catch (const RequestError &e) {
            EXPECT_EQ(e.status(), 400);
        }
    }
    EXPECT_EQ(error_of(json::parse(R"({"messages": [{"role": "user",
                                        "content": [{"type": 1, "text": "x"}]}]})"),
                       true),
              std::make_pair(400, std::string("messages[0].content")));
}

TEST(JsonBody, InvalidUtf8IsA400) {
    for (const std::string body : {"{\"prompt\": \"\xff\"}", "{\"prompt\": \"\xc3\"}",
                                   "{\"prompt\": \"\xed\xa0\x80\"}",  // a surrogate
                                   "{\"prompt\": \"\xc0\xaf\"}"}) {   // overlong '/'
        try {
            parse_json_body(body);
            ADD_FAILURE() << "accepted " << body;
        } catch (const RequestError &e) {
            EXPECT_EQ(e.status(), 400);
            EXPECT_NE(std::string(e.what()).find("UTF-8"), std::string::npos);
        }
    }
    EXPECT_EQ(
        parse_json_body("{\"prompt\": \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}")["prompt"],
        "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

// output_grammar: the constraint a body names, as a grammar; a 400 naming the field otherwise.
bool grammar_accepts(const std::optional<engine::grammar::Grammar> &g, std::string_view text) {
    engine::grammar::Matcher m(*g);
    if (!m.allows(text)) return false;
    m.accept(text);
    return m.can_end();
}

std::pair<int, std::string> grammar_error_of(const std::string &body) {
    try {
        output_grammar(body);
    } catch (const RequestError &e) {
        return {e.status(), e.param()};
    }
    return {0, ""};
}

TEST(OutputGrammar, ReadsEachWayOfConstrainingTheOutput) {
    EXPECT_FALSE(output_grammar(R"({"prompt": "a"})").has_value());
    EXPECT_FALSE(
        output_grammar(R"({"prompt": "a", "response_format": {"type": "text"}})").has_value());
    EXPECT_FALSE(output_grammar(R"({"prompt": "a", "grammar": null})").has_value());

    const auto object = output_grammar(R"({"response_format": {"type": "json_object"}})");
    ASSERT_TRUE(object.has_value());
    EXPECT_TRUE(grammar_accepts(object, R"({"a": [1, "x"]})"));
    EXPECT_FALSE(grammar_accepts(object, "[1]"));

    // The schema's properties in the body's order, not sorted.
    const auto schema = output_grammar(R"({"response_format": {"type": "json_schema", "json_schema":
        {"name": "p", "schema": {"type": "object", "properties": {"z": {"type": "integer"},
        "a": {"type": "integer"}}, "required": ["z", "a"]}}}})");
    ASSERT_TRUE(schema.has_value());
    EXPECT_TRUE(grammar_accepts(schema, R"({"z": 1, "a": 2})"));
    EXPECT_FALSE(grammar_accepts(schema, R"({"a": 2, "z": 1})"));

    const auto llama = output_grammar(R"({"json_schema": {"type": "boolean"}})");
    EXPECT_TRUE(grammar_accepts(llama, "true"));
    const auto gbnf = output_grammar(R"({"grammar": "root ::= [0-9]+"})");
    EXPECT_TRUE(grammar_accepts(gbnf, "42"));
    EXPECT_FALSE(grammar_accepts(gbnf, "4a"));
}

TEST(OutputGrammar, NamesTheFieldAtFault) {
    using P = std::pair<int, std::string>;
    EXPECT_EQ(grammar_error_of(R"({"json_schema": {}, "grammar": "root ::= \"a\""})"),
              P(400, "grammar"));
    EXPECT_EQ(
        grammar_error_of(R"({"response_format": {"type": "json_object"}, "json_schema": {}})"),
        P(400, "json_schema"));
    EXPECT_EQ(grammar_error_of(R"({"response_format": {"type": "xml"}})"),
              P(400, "response_format"));
    EXPECT_EQ(grammar_error_of(R"({"response_format": {"type": "json_schema"}})"),
              P(400, "response_format"));
    EXPECT_EQ(grammar_error_of(R"({"json_schema": {"type": "string", "pattern": "\\1"}})"),
              P(400, "json_schema"));
    EXPECT_EQ(grammar_error_of(R"({"json_schema": 3})"), P(400, "json_schema"));
    EXPECT_EQ(grammar_error_of(R"({"grammar": "root ::= missing"})"), P(400, "grammar"));
    EXPECT_EQ(grammar_error_of(R"({"grammar": 7})"), P(400, "grammar"));
    EXPECT_EQ(
        grammar_error_of(
            R"({"response_format": {"type": "json_schema", "json_schema": {"schema": {"not": {}}}}})"),
        P(400, "response_format.json_schema.schema"));
}

}  // namespace
}  // namespace loom::serve
