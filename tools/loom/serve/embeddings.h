#pragma once
// POST /v1/embeddings (OpenAI's): the request's inputs as token lists, and the answer's JSON.
// `input` is a string, a list of strings, a list of token ids, or a list of such lists;
// `encoding_format` "float" (the default) or "base64" (each vector's little-endian float32
// bytes); `dimensions`, where given, must be the model's. Embeddings are L2-normalised, as
// OpenAI's are.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loom/engine.h"

namespace loom::serve {

struct EmbeddingRequest {
    std::vector<std::vector<int32_t>> inputs;  // tokenized with the model's special tokens
    bool base64 = false;
};

// Most inputs one request may give.
inline constexpr size_t kMaxEmbeddingInputs = 2048;

// RequestError (400 naming the field) for a body that is not such a request, or an input with
// no tokens, ids outside the vocabulary, or more tokens than `max_tokens`.
EmbeddingRequest parse_embedding_request(const nlohmann::json &body, const engine::Vocab &vocab,
                                         int64_t n_embd, int64_t max_tokens);

// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}...], "model",
// "usage": {"prompt_tokens", "total_tokens"}}
nlohmann::json embeddings_json(const std::vector<std::vector<float>> &embeddings, bool base64,
                               const std::string &model, int64_t n_tokens);

// RFC 4648 base64 of `bytes`.
std::string base64_encode(std::string_view bytes);

}  // namespace loom::serve
