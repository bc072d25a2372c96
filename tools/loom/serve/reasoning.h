#pragma once
// Thinking models (DeepSeek R1, Qwen3, ...) write their reasoning between <think> and </think>
// before the answer; OpenAI-style clients expect it apart, in message.reasoning_content (and
// delta.reasoning_content when streamed), as llama-server's --reasoning-format deepseek gives it.
// Some templates open the block themselves, ending the generation prompt with "<think>": the
// text then starts inside it.
//
// The split works on text as it streams: a piece that may be the start of a tag is held back
// until the next one tells, so that chunk boundaries never change the result. Whitespace right
// after either tag is dropped, as llama-server drops it.
#include <string>
#include <string_view>

namespace loom::serve {

class ReasoningSplit {
  public:
    // open: the prompt already opened the block.
    explicit ReasoningSplit(bool open);

    struct Parts {
        std::string reasoning, content;
    };
    // What the text so far gives to each part, beyond what earlier calls gave.
    Parts push(std::string_view text);
    // The rest, at the end of the answer: a block never closed is all reasoning.
    Parts finish();

  private:
    enum class State { before, reasoning, content };
    State state_;
    bool skip_space_;   // right after a tag
    std::string held_;  // text that may be the start of the next tag
};

// Whether a rendered chat prompt ends inside an open <think> block (its last tag, then only
// whitespace).
bool prompt_opens_reasoning(std::string_view prompt);

}  // namespace loom::serve
