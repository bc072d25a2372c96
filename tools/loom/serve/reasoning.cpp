#include "tools/loom/serve/reasoning.h"

#include <algorithm>

#include "tools/loom/serve/text_tags.h"

namespace loom::serve {
namespace {

constexpr std::string_view kOpen = "<think>";
constexpr std::string_view kClose = "</think>";

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

}  // namespace

ReasoningSplit::ReasoningSplit(bool open)
    : state_(open ? State::reasoning : State::before), skip_space_(open) {}

ReasoningSplit::Parts ReasoningSplit::push(std::string_view text) {
    Parts out;
    held_ += text;
    // Each pass either changes state or leaves the loop with what cannot be told yet held.
    for (;;) {
        if (skip_space_) {
            const auto first = std::find_if_not(held_.begin(), held_.end(), is_space);
            held_.erase(held_.begin(), first);
            if (held_.empty()) return out;
            skip_space_ = false;
        }
        if (state_ == State::before) {
            // Leading whitespace, then "<think>" or not.
            const size_t start =
                size_t(std::find_if_not(held_.begin(), held_.end(), is_space) - held_.begin());
            const std::string_view rest = std::string_view(held_).substr(start);
            if (rest.starts_with(kOpen)) {
                held_.erase(0, start + kOpen.size());
                state_ = State::reasoning;
                skip_space_ = true;
                continue;
            }
            if (rest.size() < kOpen.size() && kOpen.starts_with(rest)) return out;  // can't tell
            state_ = State::content;
        }
        if (state_ == State::reasoning) {
            const size_t close = held_.find(kClose);
            if (close == std::string::npos) {
                const size_t keep = partial_tag_at_end(held_, kClose);
                out.reasoning += held_.substr(0, held_.size() - keep);
                held_.erase(0, held_.size() - keep);
                return out;
            }
            out.reasoning += held_.substr(0, close);
            held_.erase(0, close + kClose.size());
            state_ = State::content;
            skip_space_ = true;
            continue;
        }
        out.content += held_;
        held_.clear();
        return out;
    }
}

ReasoningSplit::Parts ReasoningSplit::finish() {
    Parts out;
    if (state_ == State::reasoning) {
        out.reasoning = std::move(held_);
    } else {
        out.content = std::move(held_);
    }
    held_.clear();
    state_ = State::content;
    return out;
}

bool prompt_opens_reasoning(std::string_view prompt) {
    while (!prompt.empty() && is_space(prompt.back())) prompt.remove_suffix(1);
    return prompt.ends_with(kOpen);
}

}  // namespace loom::serve
