// The built-in chat formats: a fixed conversation rendered in each family's format (the strings
// llama.cpp's built-in templates give, written out by hand from each model's documented prompt
// format), and the formatter that picks between them and the model's own Jinja template.
#include "engine/chat/chat_template.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/chat/chat_formatter.h"
#include "engine/chat/jinja_chat.h"
#include "engine/vocab/vocab.h"

namespace loom::engine {
namespace {

const std::string kShared = std::string(LOOM_SOURCE_DIR) + "/../shared";

const std::vector<ChatMessage> kConversation = {
    {"system", "You are a helpful assistant"},
    {"user", "Hello"},
    {"assistant", "Hi there"},
    {"user", "Who are you"},
};

struct Rendering {
    ChatFamily family;
    std::string_view expected;  // with the generation prompt
};

const Rendering kRenderings[] = {
    {ChatFamily::chatml,
     "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>"
     "\n<|im_start|>assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n"
     "<|im_start|>assistant\n"},
    {ChatFamily::llama2,
     "[INST] You are a helpful assistant\nHello [/INST]Hi there</s>[INST] Who are you [/INST]"},
    {ChatFamily::llama2_sys,
     "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>[INST] "
     "Who are you [/INST]"},
    {ChatFamily::llama2_sys_bos,
     "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s><s>[INST] "
     "Who are you [/INST]"},
    {ChatFamily::llama2_sys_strip,
     "[INST] <<SYS>>\nYou are a helpful assistant\n<</SYS>>\n\nHello [/INST]Hi there</s>[INST] "
     "Who are you [/INST]"},
    {ChatFamily::llama3,
     "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\nHi there<|eot_id|>"
     "<|start_header_id|>user<|end_header_id|>\n\nWho are you<|eot_id|>"
     "<|start_header_id|>assistant<|end_header_id|>\n\n"},
    {ChatFamily::mistral_v1,
     " [INST] You are a helpful assistant\n\nHello [/INST] Hi there</s> [INST] Who are you "
     "[/INST]"},
    {ChatFamily::mistral_v3,
     "[INST] You are a helpful assistant\n\nHello[/INST] Hi there</s>[INST] Who are you[/INST]"},
    {ChatFamily::mistral_v3_tekken,
     "[INST]You are a helpful assistant\n\nHello[/INST]Hi there</s>[INST]Who are you[/INST]"},
    {ChatFamily::mistral_v7,
     "[SYSTEM_PROMPT] You are a helpful assistant[/SYSTEM_PROMPT][INST] Hello[/INST] Hi "
     "there</s>[INST] Who are you[/INST]"},
    {ChatFamily::mistral_v7_tekken,
     "[SYSTEM_PROMPT]You are a helpful assistant[/SYSTEM_PROMPT][INST]Hello[/INST]Hi "
     "there</s>[INST]Who are you[/INST]"},
    {ChatFamily::phi3,
     "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi "
     "there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n"},
    {ChatFamily::gemma,
     "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n"
     "<start_of_turn>model\nHi there<end_of_turn>\n<start_of_turn>user\nWho are "
     "you<end_of_turn>\n<start_of_turn>model\n"},
    {ChatFamily::zephyr,
     "<|system|>\nYou are a helpful assistant<|endoftext|>\n<|user|>\nHello<|endoftext|>\n"
     "<|assistant|>\nHi there<|endoftext|>\n<|user|>\nWho are you<|endoftext|>\n"
     "<|assistant|>\n"},
};

TEST(ChatTemplate, RendersAConversationInEachFamilysFormat) {
    for (const Rendering &r : kRenderings) {
        SCOPED_TRACE(std::string(chat_family_name(r.family)));
        EXPECT_EQ(render_chat(r.family, kConversation, true), r.expected);
    }
}

TEST(ChatTemplate, NamesRoundTrip) {
    for (const Rendering &r : kRenderings) {
        EXPECT_EQ(chat_family_from_name(chat_family_name(r.family)), r.family);
    }
    EXPECT_EQ(chat_family_name(ChatFamily::mistral_v7_tekken), "mistral-v7-tekken");
    EXPECT_EQ(chat_family_from_name("mistral"), std::nullopt);
    EXPECT_NE(chat_family_names().find("chatml, llama2, llama2-sys"), std::string::npos);
}

TEST(ChatTemplate, GenerationPromptIsTheOnlyDifference) {
    EXPECT_EQ(render_chat(ChatFamily::chatml, kConversation, false) + "<|im_start|>assistant\n",
              render_chat(ChatFamily::chatml, kConversation, true));
    EXPECT_EQ(render_chat(ChatFamily::gemma, kConversation, false) + "<start_of_turn>model\n",
              render_chat(ChatFamily::gemma, kConversation, true));
    // The [INST] formats end the prompt with [/INST] either way.
    EXPECT_EQ(render_chat(ChatFamily::mistral_v7, kConversation, false),
              render_chat(ChatFamily::mistral_v7, kConversation, true));
}

TEST(ChatTemplate, TrimsWhereTheFamilyDoes) {
    const std::vector<ChatMessage> padded = {{"user", " Hi "}, {"assistant", "  Hello  "}};
    EXPECT_EQ(render_chat(ChatFamily::llama3, padded, false),
              "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
              "<|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|>");
    EXPECT_EQ(render_chat(ChatFamily::mistral_v3, padded, false), "[INST]  Hi [/INST] Hello</s>");
    EXPECT_EQ(render_chat(ChatFamily::mistral_v1, padded, false),
              " [INST]  Hi  [/INST]   Hello  </s>");
    EXPECT_EQ(render_chat(ChatFamily::chatml, padded, false),
              "<|im_start|>user\n Hi <|im_end|>\n<|im_start|>assistant\n  Hello  <|im_end|>\n");
}

// The Phi-3 vocabulary carries its model's Jinja template: the formatter runs it by default, its
// prompt starts with the BOS text the template prints, and tokenized the BOS appears once and
// the special tokens are single tokens. It is the built-in phi3 format, with the BOS text.
TEST(ChatFormatter, RunsTheModelsJinjaTemplate) {
    const gguf::File file(kShared + "/models/vocab/ggml-vocab-phi-3.gguf");
    const Vocab vocab = Vocab::from_gguf(file);
    const ChatFormatter formatter = ChatFormatter::choose(file.metadata(), vocab, {});
    EXPECT_EQ(formatter.description(), "the model's Jinja template");
    EXPECT_TRUE(formatter.warning().empty());
    const std::vector<ChatMessage> chat = {{"user", "Hello"}, {"assistant", "Hi"}, {"user", "Who"}};
    const std::string prompt =
        formatter.render({.messages = chat_messages_value(chat), .add_generation_prompt = true});
    const std::string bos = vocab.token_text(vocab.bos());
    ASSERT_TRUE(prompt.starts_with(bos)) << prompt;
    EXPECT_EQ(prompt.substr(bos.size()), render_chat(ChatFamily::phi3, chat, true));
    const auto tokens = formatter.tokenize(vocab, prompt);
    ASSERT_GE(tokens.size(), 3u);
    EXPECT_EQ(tokens[0], vocab.bos());
    EXPECT_EQ(std::count(tokens.begin(), tokens.end(), vocab.bos()), 1);
    EXPECT_EQ(vocab.token_text(tokens[1]), "<|user|>");
    const auto is_assistant = [&](int32_t t) { return vocab.token_text(t) == "<|assistant|>"; };
    EXPECT_EQ(std::ranges::count_if(tokens, is_assistant), 2);
}

TEST(ChatFormatter, FallsBackToChatmlAndTakesChoices) {
    const gguf::File file(kShared + "/models/stories260K.gguf");
    const Vocab vocab = Vocab::from_gguf(file);
    const std::vector<ChatMessage> chat = {{"user", "Hi"}};
    const ChatFormatter fallback = ChatFormatter::choose(file.metadata(), vocab, {});
    EXPECT_NE(fallback.warning().find("has no chat template"), std::string::npos);
    EXPECT_EQ(fallback.render({.messages = chat_messages_value(chat)}),
              render_chat(ChatFamily::chatml, chat, true));
    const ChatFormatter llama3 =
        ChatFormatter::choose(file.metadata(), vocab, {.family_name = "llama3"});
    EXPECT_EQ(llama3.description(), "llama3 (built-in)");
    EXPECT_EQ(llama3.render({.messages = chat_messages_value(chat)}),
              render_chat(ChatFamily::llama3, chat, true));
    // Without the template's BOS text the vocabulary's BOS is added.
    EXPECT_EQ(fallback.tokenize(vocab, "Hi").front(), vocab.bos());
    EXPECT_THROW(ChatFormatter::choose(file.metadata(), vocab, {.family_name = "nope"}), Error);
    EXPECT_THROW(ChatFormatter::choose(file.metadata(), vocab, {.template_file = "/nonexistent"}),
                 Error);
}

TEST(ChatFormatter, PlainMessagesForTheBuiltInFormats) {
    const jinja::Value messages = chat_messages_from_json(R"([
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"},
                                     {"type": "text", "text": "b"}]},
        {"role": "assistant", "content": null, "tool_calls": []}])");
    const std::vector<ChatMessage> plain = plain_chat_messages(messages);
    ASSERT_EQ(plain.size(), 3u);
    EXPECT_EQ(plain[0].role, "system");
    EXPECT_EQ(plain[1].content, "ab");
    EXPECT_EQ(plain[2].content, "");
}

// An assistant turn sent back with "content": null and its tool calls (as OpenAI's clients do):
// a template that cannot take null (gpt-oss's) renders it as "", one that can renders null.
TEST(JinjaChatTemplate, NullContentOfACallingTurn) {
    const auto turns = [](const char *content) {
        return chat_messages_from_json(fmt::format(R"([
            {{"role": "user", "content": "Weather?"}},
            {{"role": "assistant", "content": {}, "tool_calls": [{{"id": "c1", "type": "function",
              "function": {{"name": "get_weather", "arguments": {{"city": "Paris"}}}}}}]}},
            {{"role": "tool", "tool_call_id": "c1", "content": "18C"}}])",
                                                   content));
    };
    const auto tools = chat_tools_from_json(R"([{"type": "function", "function": {
        "name": "get_weather", "description": "The weather.", "parameters": {"type": "object",
        "properties": {"city": {"type": "string", "description": "A city."}}}}}])");
    const std::string path =
        kShared + "/fixtures/chat-templates/openai-gpt-oss-120b/template.jinja";
    std::ifstream in(path);
    ASSERT_TRUE(in) << "missing " << path << " (../shared beside the repository)";
    const JinjaChatTemplate oss(std::string(std::istreambuf_iterator<char>(in), {}), "<|bos|>",
                                "<|eos|>");
    const std::string empty = oss.render({.messages = turns("\"\""), .tools = tools});
    EXPECT_NE(empty.find("to=functions.get_weather"), std::string::npos) << empty;
    EXPECT_EQ(oss.render({.messages = turns("null"), .tools = tools}), empty);
    // A template that tells null from "": null stays null.
    const JinjaChatTemplate tells("{% for m in messages %}{{ m.content is none }},{% endfor %}", "",
                                  "");
    EXPECT_EQ(tells.render({.messages = turns("null")}), "False,True,False,");
    // As transformers runs it, the template fails on null.
    EXPECT_THROW(oss.render_strict({.messages = turns("null"), .tools = tools}),
                 jinja::TemplateError);
}

// Functionary v3.2's template adds a call's arguments to a string: given objects (as every call's
// arguments are given, parsed), it fails, as it does in transformers; render gives it the JSON
// text instead, as json.dumps writes it, and the template writes the call as its model learned.
TEST(JinjaChatTemplate, ArgumentsAsTextForATemplateThatAddsThem) {
    const jinja::Value messages = chat_messages_from_json(R"([
        {"role": "user", "content": "Weather?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
          "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\",\"days\":2}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "18C"}])");
    const std::string path =
        kShared + "/fixtures/chat-templates/meetkai-functionary-medium-v3.2/template.jinja";
    std::ifstream in(path);
    ASSERT_TRUE(in) << "missing " << path << " (../shared beside the repository)";
    const JinjaChatTemplate functionary(std::string(std::istreambuf_iterator<char>(in), {}),
                                        "<|bos|>", "<|eos|>");
    EXPECT_THROW(functionary.render_strict({.messages = messages}), jinja::TemplateError);
    const std::string prompt = functionary.render({.messages = messages});
    EXPECT_NE(prompt.find(">>>get_weather\n{\"city\": \"Paris\", \"days\": 2}<|eot_id|>"),
              std::string::npos)
        << prompt;
    // A template that fails for another reason fails as it did.
    const JinjaChatTemplate broken("{{ raise_exception('no') }}", "", "");
    EXPECT_THROW(broken.render({.messages = messages}), jinja::TemplateError);
}

}  // namespace
}  // namespace loom::engine
