#pragma once
// The served model's chat prompt: its format, chosen once at start-up (engine/chat/
// chat_formatter.h: the model's Jinja template by default), and a request's conversation
// rendered with it (then tokenized by ChatFormatter::tokenize).
#include <cstdint>
#include <string>
#include <vector>

#include "loom/engine.h"

namespace loom::serve {

// The conversation of a chat request body (its messages and tools; roles and contents as
// parse_completion_request accepts them) rendered with the assistant's header appended: the
// prompt's text (POST /apply-template). A template that fails or raises is a RequestError (400)
// with its message.
std::string chat_prompt_text(const engine::ChatFormatter &formatter, const std::string &body);

}  // namespace loom::serve
