#pragma once
// The JSON OpenAI's API answers with: completion objects, their streamed chunks and errors.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loom/engine.h"
#include "tools/loom/serve/slot_scheduler.h"
#include "tools/loom/serve/tool_calls.h"

namespace loom::serve {

// Everything a response is built from, gathered from the events.
struct Completion {
    std::string id;  // "cmpl-..." or "chatcmpl-..."
    int64_t created = 0;
    std::string model;
    bool chat = false;
    int index = 0;  // which of the request's `n` answers
    std::string text;
    std::string reasoning;             // chat: the <think> block's text (serve/reasoning.h)
    std::vector<ToolCall> tool_calls;  // chat: the calls found in the answer (serve/tool_calls.h)
    std::vector<TokenLogprob> chosen;
    std::vector<std::vector<TokenLogprob>> top;
    bool logprobs = false;
    std::string finish_reason;
    AnswerCounts counts;  // from the last event
};

// The whole answer of a non-streamed request.
nlohmann::json completion_json(const Completion &c, const engine::Vocab &vocab);
// One server-sent event's data for a streamed request: the text (and log-probabilities) of
// `event`, its reasoning and tool calls (chat: tool_calls_json with indices) beside, and the
// finish reason, usage and timings when it is the last.
nlohmann::json chunk_json(const Completion &c, const Event &event, bool first,
                          const engine::Vocab &vocab, const std::string &reasoning = {},
                          const nlohmann::json &tool_calls = nullptr);
// {"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details"} of `c`.
nlohmann::json usage_json(const AnswerCounts &c);
// llama-server's "timings": the prompt's and the generation's tokens, milliseconds and rates.
nlohmann::json timings_json(const AnswerCounts &c);
// The chunk stream_options.include_usage adds after the last: no choices, the usage.
nlohmann::json usage_chunk_json(const Completion &c);
// {"error": {"message", "type", "param", "code"}}
nlohmann::json error_json(int status, const std::string &message, const std::string &param = {});

}  // namespace loom::serve
