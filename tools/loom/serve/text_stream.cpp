#include "tools/loom/serve/text_stream.h"

#include <algorithm>

namespace loom::serve {

size_t complete_utf8_prefix(std::string_view s) {
    // Look back over at most 3 continuation bytes for the lead byte of the last character.
    size_t i = s.size();
    for (size_t back = 0; back < 4 && i > 0; ++back) {
        const auto c = static_cast<unsigned char>(s[i - 1]);
        if ((c & 0xC0) != 0x80) {  // a lead byte (or ASCII): how long is its character?
            const size_t len = c < 0x80           ? 1
                               : (c >> 5) == 0x6  ? 2
                               : (c >> 4) == 0xE  ? 3
                               : (c >> 3) == 0x1E ? 4
                                                  : 1;
            return back + 1 >= len ? s.size() : i - 1;
        }
        --i;
    }
    return s.size();  // not UTF-8 we can judge: send it as it is
}

TextStream::TextStream(std::vector<std::string> stops) : stops_(std::move(stops)) {
    std::erase_if(stops_, [](const std::string &s) { return s.empty(); });
}

std::string TextStream::push(std::string_view piece) {
    if (stopped_) return {};
    held_ += piece;
    size_t first_stop = std::string::npos;
    for (const std::string &stop : stops_) first_stop = std::min(first_stop, held_.find(stop));
    if (first_stop != std::string::npos) {
        stopped_ = true;
        std::string out = held_.substr(0, first_stop);
        held_.clear();
        return out;
    }
    // Hold back the longest tail that some stop string starts with.
    size_t keep = 0;
    for (const std::string &stop : stops_) {
        for (size_t n = std::min(stop.size() - 1, held_.size()); n > keep; --n) {
            if (held_.compare(held_.size() - n, n, stop, 0, n) == 0) {
                keep = n;
                break;
            }
        }
    }
    const size_t send =
        complete_utf8_prefix(std::string_view(held_).substr(0, held_.size() - keep));
    std::string out = held_.substr(0, send);
    held_.erase(0, send);
    return out;
}

std::string TextStream::finish() {
    if (stopped_) return {};
    std::string out = held_.substr(0, complete_utf8_prefix(held_));
    held_.clear();
    return out;
}

}  // namespace loom::serve
