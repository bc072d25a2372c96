#include "tools/loom/serve/harmony.h"

#include <algorithm>

#include "tools/loom/serve/text_tags.h"

namespace loom::serve {
namespace {

constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kStart = "<|start|>";
// What ends a body: <|end|>, or the next message's header. <|return|> and <|call|> end the
// generation (they are its end tokens), so they show only in text given from elsewhere.
constexpr std::string_view kEnds[] = {"<|end|>", kStart, "<|return|>", "<|call|>"};
// How a header begins: the first message's right after the prompt's "<|start|>assistant", the
// others with their own <|start|>.
constexpr std::string_view kHeaderStarts[] = {"<|channel|>", kStart, " to=", "to="};
// A header longer than this is not one: the text is not harmony.
constexpr size_t kMaxHeader = 256;

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

// The word after `key` in a header, up to a blank or the next marker.
std::string word_after(std::string_view header, std::string_view key) {
    size_t at = header.find(key);
    if (at == std::string_view::npos) return {};
    at += key.size();
    return std::string(header.substr(at, header.find_first_of(" \n<", at) - at));
}

}  // namespace

void HarmonyParser::open_message(size_t end, Parts &out) {
    header_ = held_.substr(0, end);
    held_.erase(0, end + kMessage.size());
    in_body_ = true;
    const std::string channel = word_after(header_, "<|channel|>");
    const std::string recipient = word_after(header_, "to=");
    function_.clear();
    if (channel == "analysis") {
        channel_ = Channel::reasoning;
    } else if (starts_with(recipient, "functions.") && parse_calls_) {
        channel_ = Channel::call;
        function_ = recipient.substr(10);
    } else if (!recipient.empty()) {  // a call not asked for: as written
        channel_ = Channel::content;
        out.content += header_ + std::string(kMessage);
    } else {
        channel_ = Channel::content;  // final, and commentary to nobody (a preamble)
    }
}

void HarmonyParser::emit(std::string_view body, Parts &out) const {
    (channel_ == Channel::reasoning ? out.reasoning : out.content) += body;
}

void HarmonyParser::close_call(std::string_view body, Parts &out) const {
    std::optional<std::string> arguments = json_object_text(body);
    if (arguments && !function_.empty()) {
        out.calls.push_back(ToolCall{function_, std::move(*arguments)});
    } else {
        out.content += header_ + std::string(kMessage) + std::string(body);
    }
}

HarmonyParser::Parts HarmonyParser::push(std::string_view text) {
    Parts out;
    held_ += text;
    for (;;) {
        if (raw_) {
            out.content += held_;
            held_.clear();
            return out;
        }
        if (!in_body_) {
            if (held_.empty()) return out;
            bool header = false, maybe = false;
            for (const std::string_view s : kHeaderStarts) {
                header = header || starts_with(held_, s);
                maybe = maybe || starts_with(s, held_);
            }
            if (!header) {
                if (maybe) return out;  // the next piece tells
                raw_ = true;
                continue;
            }
            const size_t message = held_.find(kMessage);
            if (message == std::string::npos) {
                raw_ = held_.size() > kMaxHeader;
                if (!raw_) return out;
                continue;
            }
            open_message(message, out);
            continue;
        }
        size_t end = std::string::npos;
        std::string_view ending;
        for (const std::string_view e : kEnds) {
            const size_t at = held_.find(e);
            if (at < end) {
                end = at;
                ending = e;
            }
        }
        if (end == std::string::npos) {
            if (channel_ == Channel::call) return out;  // a call is held whole
            size_t keep = 0;
            for (const std::string_view e : kEnds)
                keep = std::max(keep, partial_tag_at_end(held_, e));
            emit(std::string_view(held_).substr(0, held_.size() - keep), out);
            held_.erase(0, held_.size() - keep);
            return out;
        }
        const std::string_view body = std::string_view(held_).substr(0, end);
        if (channel_ == Channel::call) {
            close_call(body, out);
        } else {
            emit(body, out);
        }
        // The next message's <|start|> is its header's beginning.
        held_.erase(0, ending == kStart ? end : end + ending.size());
        in_body_ = false;
    }
}

HarmonyParser::Parts HarmonyParser::finish() {
    Parts out;
    if (!in_body_ || raw_) {
        out.content = held_;  // a header never finished: as written
    } else if (channel_ == Channel::call) {
        close_call(held_, out);  // ended by <|call|>, the generation's end
    } else {
        emit(held_, out);
    }
    held_.clear();
    in_body_ = false;
    return out;
}

}  // namespace loom::serve
