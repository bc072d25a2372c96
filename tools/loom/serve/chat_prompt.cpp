#include "tools/loom/serve/chat_prompt.h"

namespace loom::serve {

std::vector<int32_t> chat_prompt_tokens(const engine::Model &model, engine::ChatFamily family,
                                        const std::vector<engine::ChatMessage> &messages) {
    return model.vocab().tokenize(engine::render_chat(family, messages, true), true, true);
}

}  // namespace loom::serve
