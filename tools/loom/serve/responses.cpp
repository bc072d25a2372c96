#include "tools/loom/serve/responses.h"

namespace loom::serve {

nlohmann::json usage_json(const AnswerCounts &c) {
    // cached_tokens: the prompt's beginning found in the slot's cells, not decoded again (OpenAI's
    // field for its prompt caching).
    return {{"prompt_tokens", c.n_prompt},
            {"completion_tokens", c.n_generated},
            {"total_tokens", c.n_prompt + c.n_generated},
            {"prompt_tokens_details", {{"cached_tokens", c.n_cached}}}};
}

nlohmann::json timings_json(const AnswerCounts &c) {
    // As llama-server counts: the prompt's tokens decoded (not those found cached), and every
    // generated token over the time since the first, which the prompt's decode produced.
    const int64_t prompt_n = c.n_prompt - c.n_cached;
    const auto per_token = [](double ms, int64_t n) { return n > 0 ? ms / double(n) : 0.0; };
    const auto per_second = [](double ms, int64_t n) {
        return ms > 0 ? 1e3 * double(n) / ms : 0.0;
    };
    return {{"cache_n", c.n_cached},
            {"prompt_n", prompt_n},
            {"prompt_ms", c.prompt_ms},
            {"prompt_per_token_ms", per_token(c.prompt_ms, prompt_n)},
            {"prompt_per_second", per_second(c.prompt_ms, prompt_n)},
            {"predicted_n", c.n_generated},
            {"predicted_ms", c.predicted_ms},
            {"predicted_per_token_ms", per_token(c.predicted_ms, c.n_generated)},
            {"predicted_per_second", per_second(c.predicted_ms, c.n_generated)}};
}

namespace {

nlohmann::json token_bytes(const std::string &piece) {
    nlohmann::json out = nlohmann::json::array();
    for (const char ch : piece) out.push_back(int(static_cast<unsigned char>(ch)));
    return out;
}

// Chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}
nlohmann::json chat_logprobs(const std::vector<TokenLogprob> &chosen,
                             const std::vector<std::vector<TokenLogprob>> &top,
                             const engine::Vocab &vocab) {
    nlohmann::json content = nlohmann::json::array();
    for (size_t i = 0; i < chosen.size(); ++i) {
        const std::string piece = vocab.token_to_piece(chosen[i].token, false);
        nlohmann::json alternatives = nlohmann::json::array();
        for (const TokenLogprob &t : top[i]) {
            const std::string p = vocab.token_to_piece(t.token, false);
            alternatives.push_back(
                {{"token", p}, {"logprob", t.logprob}, {"bytes", token_bytes(p)}});
        }
        content.push_back({{"token", piece},
                           {"logprob", chosen[i].logprob},
                           {"bytes", token_bytes(piece)},
                           {"top_logprobs", alternatives}});
    }
    return {{"content", content}};
}

// Completions: {"tokens", "token_logprobs", "top_logprobs": [{piece: logprob}], "text_offset"}
nlohmann::json completion_logprobs(const std::vector<TokenLogprob> &chosen,
                                   const std::vector<std::vector<TokenLogprob>> &top,
                                   const engine::Vocab &vocab, size_t offset) {
    nlohmann::json tokens = nlohmann::json::array(), lps = nlohmann::json::array(),
                   tops = nlohmann::json::array(), offsets = nlohmann::json::array();
    for (size_t i = 0; i < chosen.size(); ++i) {
        const std::string piece = vocab.token_to_piece(chosen[i].token, false);
        tokens.push_back(piece);
        lps.push_back(chosen[i].logprob);
        nlohmann::json alternatives = nlohmann::json::object();
        for (const TokenLogprob &t : top[i]) {
            alternatives[vocab.token_to_piece(t.token, false)] = t.logprob;
        }
        tops.push_back(alternatives);
        offsets.push_back(offset);
        offset += piece.size();
    }
    return {{"tokens", tokens},
            {"token_logprobs", lps},
            {"top_logprobs", tops},
            {"text_offset", offsets}};
}

nlohmann::json logprobs_of(const Completion &c, const std::vector<TokenLogprob> &chosen,
                           const std::vector<std::vector<TokenLogprob>> &top,
                           const engine::Vocab &vocab, size_t offset) {
    if (!c.logprobs) return nullptr;
    return c.chat ? chat_logprobs(chosen, top, vocab)
                  : completion_logprobs(chosen, top, vocab, offset);
}

}  // namespace

nlohmann::json completion_json(const Completion &c, const engine::Vocab &vocab) {
    nlohmann::json choice = {{"index", c.index},
                             {"logprobs", logprobs_of(c, c.chosen, c.top, vocab, 0)},
                             {"finish_reason", c.finish_reason}};
    if (c.chat) {
        choice["message"] = {{"role", "assistant"}, {"content", c.text}};
        if (!c.reasoning.empty()) choice["message"]["reasoning_content"] = c.reasoning;
        if (!c.tool_calls.empty()) {
            choice["message"]["tool_calls"] = tool_calls_json(c.tool_calls, 0, false);
            // OpenAI's content is null beside calls when the model wrote nothing else.
            if (c.text.find_first_not_of(" \n\r\t") == std::string::npos) {
                choice["message"]["content"] = nullptr;
            }
        }
    } else {
        choice["text"] = c.text;
    }
    return {{"id", c.id},
            {"object", c.chat ? "chat.completion" : "text_completion"},
            {"created", c.created},
            {"model", c.model},
            {"choices", nlohmann::json::array({choice})},
            {"usage", usage_json(c.counts)},
            {"timings", timings_json(c.counts)}};
}

nlohmann::json chunk_json(const Completion &c, const Event &event, bool first,
                          const engine::Vocab &vocab, const std::string &reasoning,
                          const nlohmann::json &tool_calls) {
    nlohmann::json choice = {
        {"index", c.index},
        {"logprobs", logprobs_of(c, event.chosen, event.top, vocab, c.text.size())},
        {"finish_reason",
         event.done ? nlohmann::json(event.finish_reason) : nlohmann::json(nullptr)}};
    if (c.chat) {
        nlohmann::json delta = nlohmann::json::object();
        if (first) delta["role"] = "assistant";
        if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
        if (tool_calls.is_array() && !tool_calls.empty()) delta["tool_calls"] = tool_calls;
        if (!event.text.empty() || first) delta["content"] = event.text;
        choice["delta"] = delta;
    } else {
        choice["text"] = event.text;
    }
    nlohmann::json chunk = {{"id", c.id},
                            {"object", c.chat ? "chat.completion.chunk" : "text_completion"},
                            {"created", c.created},
                            {"model", c.model},
                            {"choices", nlohmann::json::array({choice})}};
    if (event.done) {
        chunk["usage"] = usage_json(event.counts);
        chunk["timings"] = timings_json(event.counts);
    }
    return chunk;
}

nlohmann::json usage_chunk_json(const Completion &c) {
    return {{"id", c.id},
            {"object", c.chat ? "chat.completion.chunk" : "text_completion"},
            {"created", c.created},
            {"model", c.model},
            {"choices", nlohmann::json::array()},
            {"usage", usage_json(c.counts)}};
}

nlohmann::json error_json(int status, const std::string &message, const std::string &param) {
    const char *type = status == 401   ? "authentication_error"
                       : status == 404 ? "not_found_error"
                       : status >= 500 ? "server_error"
                                       : "invalid_request_error";
    return {{"error",
             {{"message", message},
              {"type", type},
              {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
              {"code", status}}}};
}

}  // namespace loom::serve
