#pragma once
// Unigram (tokenizer.ggml.model = "t5"), as llama.cpp runs it: the text is normalized by the
// SentencePiece model's precompiled character map (tokenizer.ggml.precompiled_charsmap) and its
// space rules, then cut into the tokens whose scores (log probabilities) sum highest: a Viterbi
// pass over the lattice of every token that starts at each character, found through a trie.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/vocab/token_table.h"
#include "engine/vocab/token_trie.h"

namespace loom::engine {

struct UgmOptions {
    bool add_space_prefix = false;          // tokenizer.ggml.add_space_prefix
    bool remove_extra_whitespaces = false;  // tokenizer.ggml.remove_extra_whitespaces
    bool escape_whitespaces = true;         // spaces become U+2581
};

class UgmTokenizer {
  public:
    // `charsmap` is the raw tokenizer.ggml.precompiled_charsmap (empty: none); throws
    // loom::Error("[vocab] ...") naming the key when it is malformed.
    UgmTokenizer(const TokenTable &table, const std::vector<uint8_t> &charsmap,
                 const UgmOptions &options);
    // Appends the tokens of `text`; runs of characters no token covers become one `unknown_id`
    // (-1: nothing). `table` is the one it was built from, with the attributes as they are now.
    // Throws loom::Error naming the charsmap key if the map points outside itself.
    void tokenize(const TokenTable &table, std::string_view text, int32_t unknown_id,
                  std::vector<int32_t> &out) const;

  private:
    struct Replacement {
        std::string_view text;
        size_t consumed;  // input bytes it stands for
    };
    Replacement normalize_prefix(std::string_view input, size_t offset) const;
    std::string normalize(std::string_view input) const;
    uint32_t xcda_node(size_t index) const;

    UgmOptions options_;
    // The charsmap: a double array (XOR-compressed, Kanda 2018) of normalization prefixes, then
    // their null-terminated replacements.
    std::vector<uint32_t> xcda_;
    std::string replacements_;
    TokenTrie tokens_;        // normal, user-defined and unused tokens
    TokenTrie user_defined_;  // left unnormalized
    float unknown_score_ = 0;
};

}  // namespace loom::engine
