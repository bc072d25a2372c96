#pragma once
// A model's own chat template (a GGUF's tokenizer.chat_template, or a file) run by the Jinja
// engine, with the variables transformers' apply_chat_template passes: messages, tools (none when
// there are none), add_generation_prompt, bos_token, eos_token, raise_exception and strftime_now.
//
// Messages and tools are the OpenAI JSON shapes. A tool call's function.arguments may be an
// object or a JSON string; a string that parses as a JSON object becomes that object (as
// llama.cpp does, since templates print arguments with |tojson or iterate them with |items); a
// template that fails on them gets them back as JSON text (render, not render_strict).
#include <ctime>
#include <string>
#include <string_view>

#include "engine/jinja/template.h"
#include "engine/jinja/value.h"

namespace loom::engine {

struct ChatRender {
    jinja::Value messages;  // a list of message dicts
    jinja::Value tools = jinja::Value::none();
    bool add_generation_prompt = true;
    std::tm now{};  // what strftime_now formats
};

class JinjaChatTemplate {
  public:
    // jinja::TemplateError (naming the line) when the source does not parse.
    JinjaChatTemplate(std::string_view source, std::string bos_token, std::string eos_token);

    // jinja::TemplateError when the template fails or raises. Where it fails on what OpenAI's
    // clients send, it is given what it can take, as llama.cpp gives it: "" for a calling turn's
    // null content, a call's arguments as JSON text instead of an object.
    std::string render(const ChatRender &chat) const;
    // The template on exactly these values, as transformers' apply_chat_template runs it.
    std::string render_strict(const ChatRender &chat) const;

    const std::string &bos_token() const { return bos_token_; }

  private:
    jinja::Template template_;
    std::string bos_token_;
    std::string eos_token_;
};

// Messages from OpenAI's JSON ([{"role": ..., "content": ..., "tool_calls": [...]}, ...]), tool
// call arguments given as JSON strings parsed into objects. loom::Error ("[chat] ...") for text
// that is not JSON or not a list of objects.
jinja::Value chat_messages_from_json(std::string_view json);
// The same, for messages already parsed (the server's request body).
jinja::Value normalize_chat_messages(const jinja::Value &messages);
// Tools from OpenAI's JSON (a list of {"type": "function", "function": {...}}); an empty list
// is none, as transformers passes no tools.
jinja::Value chat_tools_from_json(std::string_view json);

// The local time now, for strftime_now.
std::tm local_time_now();

}  // namespace loom::engine
