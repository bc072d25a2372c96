#pragma once
// The chat page loom serve answers GET / with (serve/web/chat.html, built into the binary).
#include <string_view>

namespace loom::serve {

extern const std::string_view kChatPage;

}  // namespace loom::serve
