#pragma once
// OpenAI completion and chat-completion requests: the JSON body checked field by field into what
// the scheduler needs. Every problem is a RequestError naming the field, which the server
// answers with 400 in OpenAI's error shape. Fields Loom does not use are ignored, as OpenAI's
// own server ignores what it does not know.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "loom/engine.h"

namespace loom::serve {

class RequestError : public std::runtime_error {
  public:
    RequestError(int status, std::string param, const std::string &message)
        : std::runtime_error(message), status_(status), param_(std::move(param)) {}
    int status() const { return status_; }
    const std::string &param() const { return param_; }  // the field at fault, or empty

  private:
    int status_;
    std::string param_;
};

using engine::ChatMessage;

// One entry of logit_bias: a token id, or (llama-server's) a text each of whose tokens gets the
// bias; -inf bans (llama-server's false).
struct LogitBias {
    int64_t token = -1;  // -1: `text`
    std::string text;
    float bias = 0.0f;
};

// The most answers one request may ask for (`n`): each takes a slot, or waits for one.
inline constexpr int kMaxAnswers = 16;

struct CompletionRequest {
    bool chat = false;
    std::string prompt;                 // /v1/completions
    std::vector<ChatMessage> messages;  // /v1/chat/completions: roles and texts, checked
    engine::SamplingParams sampling;
    int32_t max_tokens = -1;  // -1: until end of generation or the slot's context is full
    int n = 1;                // answers to the one prompt (at most kMaxAnswers)
    std::vector<std::string> stop;
    bool stream = false;
    bool logprobs = false;
    int top_logprobs = 0;        // alternatives reported per token
    bool cache_prompt = true;    // llama-server's: reuse the slot's cells of the prompt's beginning
    bool include_usage = false;  // stream_options.include_usage: a last chunk with the usage
    // Chat: the tools (checked: function objects with a name), and tool_choice: "none", "auto",
    // "required", or "function" with tool_choice_name.
    nlohmann::json tools = nlohmann::json::array();
    std::string tool_choice = "auto";
    std::string tool_choice_name;
    std::vector<LogitBias> logit_bias;  // the ids unchecked: resolve_logit_bias
    // llama-server's per-request reasoning_format ("none", or "deepseek" / "auto": split the
    // reasoning out); unset: the server's --reasoning-format.
    std::optional<bool> split_reasoning;
};

// The request's logit_bias as the sampler takes it: texts tokenized (without BOS), ids checked
// against the vocabulary (RequestError 400 naming logit_bias).
std::vector<std::pair<int32_t, float>> resolve_logit_bias(const std::vector<LogitBias> &entries,
                                                          const engine::Vocab &vocab);

// The grammar the output must follow, from the body's `response_format` (OpenAI's: "text",
// "json_object", or "json_schema" with `json_schema.schema`; llama.cpp's "json_object" with a
// `schema` too), `json_schema` (llama.cpp's: a schema) or `grammar` (llama.cpp's: GBNF text);
// none when the body names none. The body is read again in its own key order, which is the
// order a schema's properties are written in. RequestError (400) naming the field for more than
// one, or for a schema or grammar that is refused (engine/grammar/json_schema.h, gbnf.h).
std::optional<engine::grammar::Grammar> output_grammar(const std::string &body);

// Throws RequestError (400) for a body that is not an object, a missing prompt or messages, a
// field of the wrong type or out of range.
CompletionRequest parse_completion_request(const nlohmann::json &body, bool chat);

// What a chat template sees of a chat request that parse_completion_request accepted: the
// messages and tools in the body's key order (tool-call arguments in a JSON string parsed, the
// developer role as system), add_generation_prompt, and the time now. loom::Error for values
// past the engine's bounds.
engine::ChatRender chat_inputs(const std::string &body);

// The body as JSON; RequestError (400) with the parser's message when it is not.
nlohmann::json parse_json_body(const std::string &body);

// body[name] into `out` when present and not null; RequestError (400) unless a bool.
void read_bool(const nlohmann::json &body, const char *name, bool &out);

}  // namespace loom::serve
