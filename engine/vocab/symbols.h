#pragma once
// The working list both merge tokenizers (SentencePiece, BPE) start from: the text's characters
// as a doubly linked list of byte ranges, which merging shortens in place.
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/vocab/utf8.h"

namespace loom::engine {

struct Symbol {
    int32_t prev;  // -1 at the ends
    int32_t next;
    size_t offset;
    size_t size;  // 0 once merged into its left neighbour
};

// One symbol per UTF-8 character of `text` (utf8::char_length_at's rule), linked in order.
inline std::vector<Symbol> split_characters(std::string_view text) {
    std::vector<Symbol> symbols;
    symbols.reserve(text.size());
    size_t offset = 0;
    while (offset < text.size()) {
        const size_t size = utf8::char_length_at(text, offset);
        const int32_t index = int32_t(symbols.size());
        offset += size;
        symbols.push_back({index - 1, offset == text.size() ? -1 : index + 1, offset - size, size});
    }
    return symbols;
}

}  // namespace loom::engine
