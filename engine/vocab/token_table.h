#pragma once
// The token list of a vocabulary: text, score and type per id, and the id of each text.
#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace loom::engine {

// tokenizer.ggml.token_type values, numbered as in the file.
enum class TokenType : int32_t {
    undefined = 0,
    normal = 1,
    unknown = 2,
    control = 3,
    user_defined = 4,
    unused = 5,
    byte = 6,
};

struct TokenTable {
    struct TextHash {
        using is_transparent = void;
        size_t operator()(std::string_view text) const {
            return std::hash<std::string_view>{}(text);
        }
    };

    std::vector<std::string> texts;
    std::vector<float> scores;  // SentencePiece merge priorities; 0 when the file has none
    std::vector<TokenType> types;
    std::unordered_map<std::string, int32_t, TextHash, std::equal_to<>> ids;
    // SentencePiece byte fallback: the token of each byte ("<0x41>"), -1 where there is none.
    std::array<int32_t, 256> byte_ids{};

    int32_t size() const { return int32_t(texts.size()); }
    // The id of a token text, -1 when there is none.
    int32_t find(std::string_view text) const {
        const auto it = ids.find(text);
        return it == ids.end() ? -1 : it->second;
    }
};

}  // namespace loom::engine
