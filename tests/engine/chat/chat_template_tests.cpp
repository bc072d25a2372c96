// Chat templates: each family detected from the distinctive part of its real Jinja template, and
// a fixed conversation rendered in each family's format (the strings llama.cpp's built-in
// templates give, written out by hand from each model's documented prompt format).
#include "engine/chat/chat_template.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/vocab/vocab.h"

namespace loom::engine {
namespace {

const std::string kShared = std::string(LOOM_SOURCE_DIR) + "/../shared";

struct Detection {
    std::string_view jinja;  // the distinctive part of a real template
    ChatFamily family;
};

// Excerpts of the templates shipped with the models named.
const Detection kDetections[] = {
    // OpenHermes-2.5-Mistral-7B
    {"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
     "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}",
     ChatFamily::chatml},
    // Mistral-7B-Instruct-v0.1: [INST] without a system message
    {"{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' "
     "+ message['content'] + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ "
     "message['content'] + eos_token}}{% endif %}{% endfor %}",
     ChatFamily::llama2},
    {"{% if message['role'] == 'system' %}{{ '<<SYS>>\\n' + message['content'] + "
     "'\\n<</SYS>>\\n\\n' }}{% elif message['role'] == 'user' %}{{ '[INST] ' + "
     "message['content'] + ' [/INST]' }}{% endif %}",
     ChatFamily::llama2_sys},
    {"{{- '[INST] <<SYS>>\\n' + messages[idx]['content'] + '\\n<</SYS>>\\n\\n' -}}{{- bos_token "
     "+ '[INST] ' + messages[idx]['content'] + ' [/INST]' -}}",
     ChatFamily::llama2_sys_bos},
    // Llama-2-7b-chat-hf
    {"{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] "
     "%}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}",
     ChatFamily::llama2_sys_strip},
    // Meta-Llama-3-8B-Instruct
    {"{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ "
     "message['content'] | trim + '<|eot_id|>' %}",
     ChatFamily::llama3},
    // Mistral-7B-Instruct-v0.2, Mistral's own "v1" template
    {"{%- if loop.first and system_message is defined %}{{- ' [INST] ' + system_message + "
     "'\\n\\n' + message['content'] + ' [/INST]' }}",
     ChatFamily::mistral_v1},
    // Mistral-Large-Instruct-2407
    {"{{- \"[AVAILABLE_TOOLS] [\" }}{%- endif %}{{- \"[INST] \" + message[\"content\"] + "
     "\"[/INST]\" }}",
     ChatFamily::mistral_v3},
    // Mistral-Nemo-Instruct-2407
    {"{{- \"[AVAILABLE_TOOLS]\" }}{%- endif %}{{- \"[INST]\" + message[\"content\"] + "
     "\"[/INST]\" }}",
     ChatFamily::mistral_v3_tekken},
    // Mistral-Large-Instruct-2411
    {"{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + '[/INST]' }}{% elif "
     "message['role'] == 'system' %}{{ '[SYSTEM_PROMPT] ' + message['content'] + "
     "'[/SYSTEM_PROMPT]' }}",
     ChatFamily::mistral_v7},
    // Phi-3-mini-4k-instruct
    {"{% if (message['role'] == 'user') %}{{'<|user|>' + '\\n' + message['content'] + '<|end|>' "
     "+ '\\n' + '<|assistant|>' + '\\n'}}",
     ChatFamily::phi3},
    // gemma-7b-it
    {"{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' "
     "}}{% endfor %}{% if add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}",
     ChatFamily::gemma},
    // llama.cpp's marks for Zephyr: "<|user|>" and "<|endoftext|>" (and no "<|assistant|>",
    // which with "<|user|>" marks Falcon 3 / GLM-Edge first)
    {"{% if message['role'] == 'user' %}{{ '<|user|>\\n' + message['content'] + '<|endoftext|>' "
     "}}{% else %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + '<|endoftext|>' }}",
     ChatFamily::zephyr},
};

TEST(ChatTemplate, DetectsEachFamilyFromItsTemplate) {
    for (const Detection &d : kDetections) {
        SCOPED_TRACE(std::string(d.jinja));
        EXPECT_EQ(detect_chat_family(d.jinja), d.family);
    }
}

TEST(ChatTemplate, DetectsAFamilyFromItsName) {
    EXPECT_EQ(detect_chat_family("gemma"), ChatFamily::gemma);
    EXPECT_EQ(detect_chat_family("mistral-v7-tekken"), ChatFamily::mistral_v7_tekken);
}

TEST(ChatTemplate, UnknownTemplatesAreNotDetected) {
    EXPECT_EQ(detect_chat_family(""), std::nullopt);
    EXPECT_EQ(detect_chat_family("{{ messages[0]['content'] }}"), std::nullopt);
    // Phi-4 and Command R: families Loom does not render, though Phi-4 uses <|im_start|>.
    EXPECT_EQ(detect_chat_family("{{'<|im_start|>' + message['role'] + '<|im_sep|>'}}"),
              std::nullopt);
    EXPECT_EQ(detect_chat_family("{{ '<|START_OF_TURN_TOKEN|><|USER_TOKEN|>' + content }}"),
              std::nullopt);
    // Falcon 3 has Zephyr's marks too, but its <|assistant|> and <|user|> come first.
    EXPECT_EQ(detect_chat_family("{{ '<|user|>\\n' + content }}{{ '<|assistant|>\\n' }}"
                                 "{{ '<|endoftext|>' }}"),
              std::nullopt);
}

TEST(ChatTemplate, NamesRoundTrip) {
    for (const Detection &d : kDetections) {
        EXPECT_EQ(chat_family_from_name(chat_family_name(d.family)), d.family);
    }
    EXPECT_EQ(chat_family_name(ChatFamily::mistral_v7_tekken), "mistral-v7-tekken");
    EXPECT_EQ(chat_family_from_name("mistral"), std::nullopt);
    EXPECT_NE(chat_family_names().find("chatml, llama2, llama2-sys"), std::string::npos);
}

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

// The Phi-3 vocabulary carries its model's template: detected, rendered and tokenized, the
// special tokens are single tokens and BOS appears once, from the tokenizer.
TEST(ChatTemplate, Phi3VocabularyTemplateTokenizes) {
    const gguf::File file(kShared + "/models/vocab/ggml-vocab-phi-3.gguf");
    const auto jinja = file.metadata().get_optional<std::string>("tokenizer.chat_template");
    ASSERT_TRUE(jinja);
    ASSERT_EQ(detect_chat_family(*jinja), ChatFamily::phi3);
    const Vocab vocab = Vocab::from_gguf(file);
    const std::vector<ChatMessage> chat = {{"user", "Hello"}};
    const auto tokens = vocab.tokenize(render_chat(ChatFamily::phi3, chat, true), true, true);
    ASSERT_GE(tokens.size(), 3u);
    EXPECT_EQ(tokens[0], vocab.bos());
    EXPECT_EQ(std::count(tokens.begin(), tokens.end(), vocab.bos()), 1);
    EXPECT_EQ(vocab.token_text(tokens[1]), "<|user|>");
    const auto is_assistant = [&](int32_t t) { return vocab.token_text(t) == "<|assistant|>"; };
    EXPECT_EQ(std::ranges::count_if(tokens, is_assistant), 1);
    EXPECT_TRUE(vocab.is_eog(vocab.tokenize("<|end|>", false, true).at(0)));
}

}  // namespace
}  // namespace loom::engine
