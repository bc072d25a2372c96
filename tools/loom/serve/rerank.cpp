#include "tools/loom/serve/rerank.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "tools/loom/serve/request.h"

namespace loom::serve {
namespace {

std::string document_text(const nlohmann::json &item, const std::string &param) {
    if (item.is_string()) return item.get<std::string>();
    if (item.is_object() && item.contains("text") && item["text"].is_string()) {
        return item["text"].get<std::string>();
    }
    throw RequestError(400, param,
                       fmt::format("'{}' must be a string or {{\"text\": string}}", param));
}

bool read_flag(const nlohmann::json &body, const char *key) {
    const auto it = body.find(key);
    if (it == body.end() || it->is_null()) return false;
    if (!it->is_boolean()) throw RequestError(400, key, fmt::format("'{}' must be a boolean", key));
    return it->get<bool>();
}

}  // namespace

RerankRequest parse_rerank_request(const nlohmann::json &body, const engine::Vocab &vocab,
                                   std::string_view prompt, int64_t max_tokens) {
    if (!body.is_object()) throw RequestError(400, "", "the body must be a JSON object");
    const auto query = body.find("query");
    if (query == body.end() || !query->is_string()) {
        throw RequestError(400, "query", "'query' must be a string");
    }
    RerankRequest r;
    r.tei = body.contains("texts");
    const char *field = r.tei ? "texts" : "documents";
    const auto docs = body.find(field);
    if (docs == body.end() || !docs->is_array() || docs->empty()) {
        throw RequestError(400, field,
                           fmt::format("'{}' must be a list of texts, not empty", field));
    }
    if (docs->size() > kMaxRerankDocuments) {
        throw RequestError(400, field,
                           fmt::format("'{}' holds {} texts; at most {}", field, docs->size(),
                                       kMaxRerankDocuments));
    }
    for (size_t i = 0; i < docs->size(); ++i) {
        const std::string param = fmt::format("{}[{}]", field, i);
        r.documents.push_back(document_text((*docs)[i], param));
        r.pairs.push_back(engine::rerank_pair_tokens(vocab, prompt, query->get<std::string>(),
                                                     r.documents.back()));
        if (int64_t(r.pairs.back().size()) > max_tokens) {
            throw RequestError(400, param,
                               fmt::format("the query and {} have {} tokens; the model takes at "
                                           "most {}",
                                           param, r.pairs.back().size(), max_tokens));
        }
    }
    r.top_n = r.documents.size();
    if (const auto top = body.find("top_n"); top != body.end() && !top->is_null()) {
        if (!top->is_number_integer() || top->get<int64_t>() < 1) {
            throw RequestError(400, "top_n", "'top_n' must be a positive integer");
        }
        r.top_n = std::min(r.top_n, size_t(top->get<int64_t>()));
    }
    r.with_text = read_flag(body, r.tei ? "return_text" : "return_documents");
    return r;
}

nlohmann::json rerank_json(const RerankRequest &request, const std::vector<float> &scores,
                           const std::string &model) {
    std::vector<size_t> order(scores.size());
    std::iota(order.begin(), order.end(), size_t(0));
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    order.resize(std::min(order.size(), request.top_n));
    nlohmann::json results = nlohmann::json::array();
    for (const size_t i : order) {
        nlohmann::json result = {{"index", i},
                                 {request.tei ? "score" : "relevance_score", scores[i]}};
        if (request.with_text && request.tei) result["text"] = request.documents[i];
        if (request.with_text && !request.tei)
            result["document"] = {{"text", request.documents[i]}};
        results.push_back(std::move(result));
    }
    if (request.tei) return results;
    int64_t n_tokens = 0;
    for (const auto &pair : request.pairs) n_tokens += int64_t(pair.size());
    return {{"model", model},
            {"object", "list"},
            {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}},
            {"results", std::move(results)}};
}

}  // namespace loom::serve
