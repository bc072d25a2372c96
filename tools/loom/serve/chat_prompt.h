#pragma once
// The served model's chat prompt: its template family, chosen once at start-up, and the tokens
// of a conversation rendered with it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/chat/chat_template.h"
#include "engine/model/model.h"

namespace loom::serve {

// The conversation with the assistant's header appended, tokenized with BOS per the vocabulary
// and the template's special tokens parsed.
std::vector<int32_t> chat_prompt_tokens(const engine::Model &model, engine::ChatFamily family,
                                        const std::vector<engine::ChatMessage> &messages);

}  // namespace loom::serve
