#pragma once
// POST /v1/rerank (llama-server's, in Jina's shape; TEI's where the body says "texts"): a query
// and documents; each (query, document) pair goes through a reranker's classifier head and the
// documents come back sorted by relevance, best first.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loom/engine.h"

namespace loom::serve {

struct RerankRequest {
    std::vector<std::string> documents;
    std::vector<std::vector<int32_t>> pairs;  // per document, the pair's tokens
    size_t top_n = 0;                         // results kept (all by default)
    bool tei = false;        // "texts" instead of "documents": TEI's answer, a bare list
    bool with_text = false;  // return_documents (Jina) / return_text (TEI)
};

// Most documents one request may give.
inline constexpr size_t kMaxRerankDocuments = 2048;

// RequestError (400 naming the field) for a body that is not such a request, or a pair with more
// tokens than `max_tokens`. A document is a string or Jina's {"text": string}. Pairs are formed
// by engine::rerank_pair_tokens with the model's `prompt` (engine::rerank_prompt).
RerankRequest parse_rerank_request(const nlohmann::json &body, const engine::Vocab &vocab,
                                   std::string_view prompt, int64_t max_tokens);

// The results, `scores[i]` document i's: Jina's {"model", "object": "list", "usage",
// "results": [{"index", "relevance_score", "document": {"text"}?}]} or TEI's
// [{"index", "score", "text"?}], sorted by score (ties by index), top_n of them.
nlohmann::json rerank_json(const RerankRequest &request, const std::vector<float> &scores,
                           const std::string &model);

}  // namespace loom::serve
