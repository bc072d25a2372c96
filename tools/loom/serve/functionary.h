#pragma once
// Functionary v3.2's answers, taken apart: a sequence of messages, each a recipient line and a
// body,
//   all\nText for the user.>>>get_weather\n{"city": "Paris"}>>>all\nMore text.
// The generation prompt ends with the first ">>>", so the answer begins with a recipient; each
// later message begins with ">>>". A message to "all" is content; one to a function NAME a call
// of NAME with the body (a JSON object) as its arguments.
//
// A first line that is no recipient (a name of letters, digits, '_', '-' and '.') makes the rest
// content as written, as does a call whose body is not a JSON object, or any message to a
// function when calls are not parsed. Content streams as it comes; a call is held until the
// next ">>>" or the answer's end. Streamed pieces give what the whole text gives.
#include <string>
#include <string_view>
#include <vector>

#include "tools/loom/serve/tool_calls.h"

namespace loom::serve {

class FunctionaryParser {
  public:
    // parse_calls: messages to functions are calls; otherwise they stay content as written.
    explicit FunctionaryParser(bool parse_calls) : parse_calls_(parse_calls) {}

    using Parts = ToolCallParser::Parts;
    Parts push(std::string_view text);
    Parts finish();

  private:
    enum class State { recipient, content, call, raw };
    // The message to `recipient_` with `body` is over.
    void close_call(std::string_view body, Parts &out) const;
    // How a message's recipient line was written: the prompt wrote the first one's ">>>".
    std::string written_header() const;
    bool parse_calls_;
    State state_ = State::recipient;
    bool first_ = true;  // reading the answer's first message
    std::string recipient_;
    std::string held_;
};

}  // namespace loom::serve
