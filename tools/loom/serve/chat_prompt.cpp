#include "tools/loom/serve/chat_prompt.h"

#include "tools/loom/serve/request.h"

namespace loom::serve {

std::string chat_prompt_text(const engine::ChatFormatter &formatter, const std::string &body) {
    try {
        return formatter.render(chat_inputs(body));
    } catch (const Error &e) {  // the template's failure, or a value past the engine's bounds
        throw RequestError(400, "messages", e.what());
    }
}

}  // namespace loom::serve
