#pragma once
// WordPiece (tokenizer.ggml.model = "bert"), as llama.cpp runs it: the text is cut into words at
// white space and around every punctuation mark, ASCII symbol and CJK ideograph (optionally
// lowercased, accents stripped through the decomposition's base letter), and each word, with a
// U+2581 in front, becomes the longest tokens that spell it from the left, or one unknown token.
// (llama.cpp's converter stores a word's first piece as "\u2581piece" and a continuation, "##piece"
// in the original vocabulary, as "piece".)
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/vocab/token_table.h"
#include "engine/vocab/token_trie.h"

namespace loom::engine {

struct WpmOptions {
    bool lowercase = true;      // tokenizer.ggml.normalizer.lowercase
    bool strip_accents = true;  // tokenizer.ggml.normalizer.strip_accents (default: lowercase)
};

class WpmTokenizer {
  public:
    WpmTokenizer(const TokenTable &table, const WpmOptions &options);
    // Appends the tokens of `text`; `unknown_id` (-1: nothing) for a word no tokens spell.
    void tokenize(std::string_view text, int32_t unknown_id, std::vector<int32_t> &out) const;

  private:
    TokenTrie trie_;
    WpmOptions options_;
};

}  // namespace loom::engine
