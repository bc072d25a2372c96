#include "engine/chat/chat_formatter.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>

#include "loom/error.h"

namespace loom::engine {
namespace {

std::string token_text_or_empty(const Vocab &vocab, int32_t id) {
    return id >= 0 && id < vocab.n_tokens() ? vocab.token_text(id) : std::string();
}

std::string read_template_file(const std::string &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("chat", "cannot read the chat template file '{}'", path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string text_of_content(const jinja::Value &content) {
    if (content.is_string()) return content.str();
    std::string text;
    if (!content.is_list()) return text;
    for (const jinja::Value &part : content.items()) {
        if (!part.is_dict()) continue;
        const jinja::Value *type = part.dict().find("type");
        const jinja::Value *part_text = part.dict().find("text");
        if (type && type->is_string() && type->str() == "text" && part_text &&
            part_text->is_string()) {
            text += part_text->str();
        }
    }
    return text;
}

}  // namespace

jinja::Value chat_messages_value(const std::vector<ChatMessage> &messages) {
    std::vector<jinja::Value> out;
    out.reserve(messages.size());
    for (const ChatMessage &m : messages) {
        jinja::Dict message;
        message.set(jinja::Value("role"), jinja::Value(m.role));
        message.set(jinja::Value("content"), jinja::Value(m.content));
        out.push_back(jinja::Value::dict(std::move(message)));
    }
    return jinja::Value::list(std::move(out));
}

std::vector<ChatMessage> plain_chat_messages(const jinja::Value &messages) {
    std::vector<ChatMessage> out;
    if (!messages.is_list()) return out;
    for (const jinja::Value &m : messages.items()) {
        if (!m.is_dict()) continue;
        const jinja::Value *role = m.dict().find("role");
        const jinja::Value *content = m.dict().find("content");
        std::string r = role && role->is_string() ? role->str() : "user";
        if (r == "developer") r = "system";
        out.push_back({std::move(r), content ? text_of_content(*content) : std::string()});
    }
    return out;
}

ChatFormatter ChatFormatter::choose(const gguf::Metadata &metadata, const Vocab &vocab,
                                    const ChatFormatChoice &choice) {
    ChatFormatter f;
    f.bos_text_ = token_text_or_empty(vocab, vocab.bos());
    const std::string eos_text = token_text_or_empty(vocab, vocab.eos());
    if (!choice.family_name.empty() && !choice.template_file.empty()) {
        fail("chat", "pass --chat-template or --chat-template-file, not both");
    }
    if (!choice.family_name.empty()) {
        const auto family = chat_family_from_name(choice.family_name);
        if (!family) {
            fail("chat", "unknown --chat-template '{}'; the names are: {}", choice.family_name,
                 chat_family_names());
        }
        f.family_ = *family;
        f.description_ = fmt::format("{} (built-in)", chat_family_name(*family));
        return f;
    }
    if (!choice.template_file.empty()) {
        try {
            f.jinja_source_ = read_template_file(choice.template_file);
            f.jinja_.emplace(f.jinja_source_, f.bos_text_, eos_text);
        } catch (const jinja::TemplateError &e) {
            fail("chat", "the chat template file '{}' does not parse: {}", choice.template_file,
                 e.what());
        }
        f.description_ = fmt::format("the Jinja template of {}", choice.template_file);
        return f;
    }
    const auto source = metadata.get_optional<std::string>("tokenizer.chat_template");
    if (!source) {
        f.warning_ = "the model has no chat template (tokenizer.chat_template); using chatml";
        f.description_ = "chatml (built-in, the model has no template)";
        return f;
    }
    try {
        f.jinja_.emplace(*source, f.bos_text_, eos_text);
        f.jinja_source_ = *source;
        f.description_ = "the model's Jinja template";
    } catch (const jinja::TemplateError &e) {
        f.warning_ =
            fmt::format("the model's chat template does not parse ({}); using chatml", e.what());
        f.description_ = "chatml (built-in, the model's template does not parse)";
    }
    return f;
}

std::string ChatFormatter::render(const ChatRender &chat) const {
    if (jinja_) return jinja_->render(chat);
    return render_chat(family_, plain_chat_messages(chat.messages), chat.add_generation_prompt);
}

std::vector<int32_t> ChatFormatter::tokenize(const Vocab &vocab, const std::string &prompt) const {
    const bool has_bos = !bos_text_.empty() && prompt.starts_with(bos_text_);
    return vocab.tokenize(prompt, !has_bos, true);
}

}  // namespace loom::engine
