#pragma once
// gpt-oss's answers in OpenAI's harmony format, taken apart: a sequence of messages, each a header
// and a body,
//   <|channel|>analysis<|message|>thinking...<|end|>
//   <|start|>assistant<|channel|>final<|message|>the answer          (then <|return|>)
//   <|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{...}
//                                                                      (then <|call|>)
// where a header may also put its recipient after the channel ("<|channel|>commentary
// to=functions.f <|constrain|>json"). The analysis channel is reasoning_content, the final
// channel (and commentary to nobody, a preamble) content, a commentary message to functions.NAME
// a call of NAME with the body as its arguments. <|return|> and <|call|> end the generation, so
// the last message ends with the text. The markers are control tokens the server shows for this
// form (tool_call_markers).
//
// Text that does not begin as a harmony header stays content as written, as does a call whose
// arguments are not a JSON object. Streamed pieces give what the whole text gives.
#include <optional>
#include <string>
#include <string_view>

#include "tools/loom/serve/tool_calls.h"

namespace loom::serve {

class HarmonyParser {
  public:
    // parse_calls: messages to functions.* are calls; otherwise they stay content as written.
    explicit HarmonyParser(bool parse_calls) : parse_calls_(parse_calls) {}

    struct Parts {
        std::string content, reasoning;
        std::vector<ToolCall> calls;
    };
    Parts push(std::string_view text);
    Parts finish();

  private:
    enum class Channel { reasoning, content, call };
    // The header in held_ is whole (<|message|> at `end`): takes it, and finds its channel.
    void open_message(size_t end, Parts &out);
    void emit(std::string_view body, Parts &out) const;  // by the channel
    void close_call(std::string_view body, Parts &out) const;
    bool parse_calls_;
    bool in_body_ = false;
    bool raw_ = false;  // not harmony: all the rest is content
    Channel channel_ = Channel::content;
    std::string header_;  // of the message in body, as written
    std::string function_;
    std::string held_;
};

}  // namespace loom::serve
