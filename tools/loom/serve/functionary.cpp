#include "tools/loom/serve/functionary.h"

#include <algorithm>

#include "tools/loom/serve/text_tags.h"

namespace loom::serve {

namespace {

constexpr std::string_view kNext = ">>>";
// Longer than any function name a request gives; a first line past it is text, not a recipient.
constexpr size_t kMaxRecipient = 128;

bool recipient_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
}

}  // namespace

std::string FunctionaryParser::written_header() const {
    return (first_ ? std::string() : std::string(kNext)) + recipient_ + "\n";
}

void FunctionaryParser::close_call(std::string_view body, Parts &out) const {
    if (std::optional<std::string> arguments = json_object_text(body)) {
        out.calls.push_back(ToolCall{recipient_, std::move(*arguments)});
    } else {
        out.content += written_header();
        out.content += body;
    }
}

FunctionaryParser::Parts FunctionaryParser::push(std::string_view text) {
    Parts out;
    held_ += text;
    for (;;) {
        switch (state_) {
            case State::raw:
                out.content += held_;
                held_.clear();
                return out;
            case State::recipient: {
                const size_t line = held_.find('\n');
                const std::string_view name = std::string_view(held_).substr(0, line);
                const bool name_so_far = name.size() <= kMaxRecipient &&
                                         std::all_of(name.begin(), name.end(), recipient_char);
                if (line == std::string::npos && name_so_far) return out;  // still being written
                if (!name_so_far || name.empty()) {
                    out.content += first_ ? std::string() : std::string(kNext);
                    state_ = State::raw;
                    continue;
                }
                recipient_ = std::string(name);
                held_.erase(0, line + 1);
                if (recipient_ == "all") {
                    state_ = State::content;
                } else if (parse_calls_) {
                    state_ = State::call;
                } else {
                    out.content += written_header();
                    state_ = State::content;
                }
                continue;
            }
            case State::content: {
                const size_t next = held_.find(kNext);
                if (next == std::string::npos) {
                    const size_t keep = partial_tag_at_end(held_, kNext);
                    out.content += held_.substr(0, held_.size() - keep);
                    held_.erase(0, held_.size() - keep);
                    return out;
                }
                out.content += held_.substr(0, next);
                held_.erase(0, next + kNext.size());
                state_ = State::recipient;
                first_ = false;
                continue;
            }
            case State::call: {
                const size_t next = held_.find(kNext);
                if (next == std::string::npos) return out;  // held to the next message or the end
                close_call(std::string_view(held_).substr(0, next), out);
                held_.erase(0, next + kNext.size());
                state_ = State::recipient;
                first_ = false;
                continue;
            }
        }
    }
}

FunctionaryParser::Parts FunctionaryParser::finish() {
    Parts out;
    switch (state_) {
        case State::recipient:  // a recipient line never ended: as written
            out.content = (first_ ? std::string() : std::string(kNext)) + held_;
            break;
        case State::call:
            close_call(held_, out);
            break;
        case State::content:
        case State::raw:
            out.content = held_;
            break;
    }
    held_.clear();
    state_ = State::raw;
    return out;
}

}  // namespace loom::serve
