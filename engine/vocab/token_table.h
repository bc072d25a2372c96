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

// llama.cpp's token attributes (llama_token_attr), a bit mask: the type from the file, then the
// per-model rules of Vocab::from_metadata (control for end-of-turn texts, rstrip for Phi-3, ...).
enum TokenAttr : uint32_t {
    kAttrUnknown = 1u << 0,
    kAttrUnused = 1u << 1,
    kAttrNormal = 1u << 2,
    kAttrControl = 1u << 3,
    kAttrUserDefined = 1u << 4,
    kAttrByte = 1u << 5,
    kAttrNormalized = 1u << 6,
    kAttrLstrip = 1u << 7,  // with parse_special, the token eats the white space before it
    kAttrRstrip = 1u << 8,  // ... and after it
    kAttrSingleWord = 1u << 9,
};

struct TokenTable {
    struct TextHash {
        using is_transparent = void;
        size_t operator()(std::string_view text) const {
            return std::hash<std::string_view>{}(text);
        }
    };

    std::vector<std::string> texts;
    std::vector<float> scores;     // SentencePiece merge priorities; 0 when the file has none
    std::vector<TokenType> types;  // as in the file
    std::vector<uint32_t> attrs;   // TokenAttr bits
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
