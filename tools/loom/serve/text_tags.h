#pragma once
// Scanning streamed text for tags (<think>, <tool_call>, ...) whose pieces may arrive split.
#include <algorithm>
#include <string_view>

namespace loom::serve {

// The length of the longest end of `text` that begins `tag` but is not all of it: text that may
// turn out to be the tag once the next piece arrives.
inline size_t partial_tag_at_end(std::string_view text, std::string_view tag) {
    for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
        if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
    }
    return 0;
}

}  // namespace loom::serve
