#pragma once
// Built-in chat formats: the prompt formats of the common instruction-tuned model families,
// rendered by hand-written code for each, for --chat-template NAME (llama.cpp's names). By
// default the commands run the model's own Jinja template instead (chat_formatter.h).
//
// BOS: the rendered text never starts with the BOS token's text ("<s>", "<|begin_of_text|>",
// "<bos>"), although the Jinja templates of Llama 2/3, Mistral and Gemma print it. Tokenize the
// text with add_special = true (BOS per the vocabulary's add_bos) and parse_special = true (so
// "<|im_start|>" or "</s>" in the text become their tokens): the BOS then appears exactly once.
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace loom::engine {

// The --chat-template names are llama.cpp's: "chatml", "llama2", "llama2-sys", ...
enum class ChatFamily {
    chatml,             // <|im_start|>role\n...<|im_end|>\n (Qwen, Hermes, Yi, ...)
    llama2,             // [INST] ... [/INST]; a system message goes before the first user's
    llama2_sys,         // as llama2, the system message between <<SYS>> and <</SYS>>
    llama2_sys_bos,     // as llama2_sys, "<s>" before each [INST] after the first
    llama2_sys_strip,   // as llama2_sys, every message trimmed (Meta's Llama 2 chat template)
    llama3,             // <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|>
    mistral_v1,         // " [INST] ... [/INST]" with spaces around the tags
    mistral_v3,         // "[INST] ...[/INST]"; assistant messages trimmed
    mistral_v3_tekken,  // "[INST]...[/INST]" without spaces
    mistral_v7,         // [SYSTEM_PROMPT] ...[/SYSTEM_PROMPT][INST] ...[/INST]
    mistral_v7_tekken,  // as mistral_v7 without the space after the opening tags
    phi3,               // <|role|>\n...<|end|>\n
    gemma,              // <start_of_turn>role\n...<end_of_turn>\n, "model" for the assistant
    zephyr,             // <|role|>\n...<|endoftext|>\n
};

struct ChatMessage {
    std::string role;  // "system", "user" or "assistant"
    std::string content;
};

// The family named `name` as --chat-template takes it ("chatml", "llama3", "mistral-v7", ...).
std::optional<ChatFamily> chat_family_from_name(std::string_view name);
std::string_view chat_family_name(ChatFamily family);
// Every name chat_family_from_name accepts, comma-separated, for messages.
std::string chat_family_names();

// The prompt text of `messages`, followed when `add_generation_prompt` by the header that opens
// the assistant's answer (the [INST] families have no such header: the prompt already ends in
// [/INST]). Families without a system role (gemma, llama2) fold system messages into the next
// user message.
std::string render_chat(ChatFamily family, std::span<const ChatMessage> messages,
                        bool add_generation_prompt);

}  // namespace loom::engine
