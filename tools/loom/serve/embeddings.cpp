#include "tools/loom/serve/embeddings.h"

#include <fmt/format.h>

#include <array>
#include <cstring>

#include "tools/loom/serve/request.h"

namespace loom::serve {

namespace {

std::vector<int32_t> token_ids(const nlohmann::json &ids, const engine::Vocab &vocab,
                               const std::string &param) {
    std::vector<int32_t> out;
    for (const nlohmann::json &id : ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
            id.get<int64_t>() >= vocab.n_tokens()) {
            throw RequestError(
                400, param,
                fmt::format("'{}' must hold token ids in 0..{}", param, vocab.n_tokens() - 1));
        }
        out.push_back(id.get<int32_t>());
    }
    return out;
}

}  // namespace

EmbeddingRequest parse_embedding_request(const nlohmann::json &body, const engine::Vocab &vocab,
                                         int64_t n_embd, int64_t max_tokens) {
    if (!body.is_object()) throw RequestError(400, "", "the body must be a JSON object");
    EmbeddingRequest r;
    const auto input = body.find("input");
    if (input == body.end()) throw RequestError(400, "input", "'input' is required");
    const auto add_text = [&](const nlohmann::json &text, const std::string &param) {
        r.inputs.push_back(text.is_string() ? vocab.tokenize(text.get<std::string>(), true, false)
                                            : token_ids(text, vocab, param));
    };
    const auto is_ids = [](const nlohmann::json &j) {
        return j.is_array() && !j.empty() &&
               std::all_of(j.begin(), j.end(), [](const auto &x) { return x.is_number(); });
    };
    if (input->is_string() || is_ids(*input)) {
        add_text(*input, "input");
    } else if (input->is_array() && !input->empty()) {
        if (input->size() > kMaxEmbeddingInputs) {
            throw RequestError(400, "input",
                               fmt::format("'input' holds {} texts; at most {}", input->size(),
                                           kMaxEmbeddingInputs));
        }
        for (size_t i = 0; i < input->size(); ++i) {
            const nlohmann::json &item = (*input)[i];
            const std::string param = fmt::format("input[{}]", i);
            if (!item.is_string() && !is_ids(item)) {
                throw RequestError(
                    400, param, fmt::format("'{}' must be a string or a list of token ids", param));
            }
            add_text(item, param);
        }
    } else {
        throw RequestError(400, "input",
                           "'input' must be a string, a list of strings, a list of token ids or "
                           "a list of such lists, not empty");
    }
    for (size_t i = 0; i < r.inputs.size(); ++i) {
        if (r.inputs[i].empty()) {
            throw RequestError(400, "input", fmt::format("input {} has no tokens", i));
        }
        if (int64_t(r.inputs[i].size()) > max_tokens) {
            throw RequestError(400, "input",
                               fmt::format("input {} has {} tokens; the model takes at most {}", i,
                                           r.inputs[i].size(), max_tokens));
        }
    }
    if (const auto format = body.find("encoding_format"); format != body.end()) {
        if (*format != "float" && *format != "base64") {
            throw RequestError(400, "encoding_format",
                               "'encoding_format' must be \"float\" or \"base64\"");
        }
        r.base64 = *format == "base64";
    }
    if (const auto dims = body.find("dimensions"); dims != body.end() && !dims->is_null()) {
        if (!dims->is_number_integer() || dims->get<int64_t>() != n_embd) {
            throw RequestError(400, "dimensions",
                               fmt::format("this model's embeddings have {} dimensions", n_embd));
        }
    }
    return r;
}

std::string base64_encode(std::string_view bytes) {
    static constexpr std::string_view kAlphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((bytes.size() + 2) / 3 * 4);
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t n = std::min<size_t>(3, bytes.size() - i);
        uint32_t v = 0;
        for (size_t k = 0; k < 3; ++k) {
            v = (v << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
        }
        for (size_t k = 0; k < 4; ++k) {
            out.push_back(k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=');
        }
    }
    return out;
}

nlohmann::json embeddings_json(const std::vector<std::vector<float>> &embeddings, bool base64,
                               const std::string &model, int64_t n_tokens) {
    nlohmann::json data = nlohmann::json::array();
    for (size_t i = 0; i < embeddings.size(); ++i) {
        const std::vector<float> &e = embeddings[i];
        nlohmann::json vector;
        if (base64) {
            // The float32 bytes as this (little-endian) machine holds them.
            std::string bytes(e.size() * sizeof(float), '\0');
            std::memcpy(bytes.data(), e.data(), bytes.size());
            vector = base64_encode(bytes);
        } else {
            vector = e;
        }
        data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(vector)}});
    }
    return {{"object", "list"},
            {"data", std::move(data)},
            {"model", model},
            {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}};
}

}  // namespace loom::serve
