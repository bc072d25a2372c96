#pragma once
// The prompt format a command uses for a conversation, chosen once at start-up as llama.cpp's
// tools choose it: the model's own Jinja template (tokenizer.chat_template) by default; a Jinja
// file (--chat-template-file); a built-in family by name (--chat-template NAME); and chatml, with
// a warning, when the model has no template or its template does not parse.
//
// BOS: templates that print bos_token put the vocabulary's BOS text first; the prompt is then
// tokenized without adding another BOS (as llama.cpp does), else with BOS per the vocabulary.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/chat/jinja_chat.h"
#include "engine/vocab/vocab.h"
#include "loom/gguf.h"

namespace loom::engine {

struct ChatFormatChoice {
    std::string family_name;    // --chat-template: a built-in family; empty: not chosen
    std::string template_file;  // --chat-template-file: a Jinja file; empty: not chosen
};

class ChatFormatter {
  public:
    // loom::Error for an unknown family name, both choices at once, a file that cannot be read
    // or does not parse (naming the line).
    static ChatFormatter choose(const gguf::Metadata &metadata, const Vocab &vocab,
                                const ChatFormatChoice &choice);

    // The prompt text; jinja::TemplateError when the template fails or raises.
    std::string render(const ChatRender &chat) const;
    // The prompt's tokens, special tokens parsed; BOS added unless the text begins with it.
    std::vector<int32_t> tokenize(const Vocab &vocab, const std::string &prompt) const;

    // What was chosen, for the log: "the model's Jinja template", "chatml (built-in)", ...
    const std::string &description() const { return description_; }
    // Why the model's own template is not used (empty when it is, or when a choice was made).
    const std::string &warning() const { return warning_; }
    // The Jinja template's text in use; empty for a built-in family.
    const std::string &jinja_source() const { return jinja_source_; }

  private:
    std::optional<JinjaChatTemplate> jinja_;
    ChatFamily family_ = ChatFamily::chatml;  // when there is no Jinja template
    std::string bos_text_;
    std::string jinja_source_;
    std::string description_;
    std::string warning_;
};

// Messages of role and text as the template sees them: [{"role": ..., "content": ...}, ...].
jinja::Value chat_messages_value(const std::vector<ChatMessage> &messages);

// The role and text of each message, for the built-in families: text parts of a content list
// joined, no content as "", "developer" as "system".
std::vector<ChatMessage> plain_chat_messages(const jinja::Value &messages);

}  // namespace loom::engine
