#pragma once
// Byte-level BPE (tokenizer.ggml.model = "gpt2"): within one pre-tokenized word, repeatedly merge
// the adjacent pair with the lowest rank in tokenizer.ggml.merges.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/vocab/token_table.h"

namespace loom::engine {

// Merge ranks by "left right", the form in which tokenizer.ggml.merges stores them.
class BpeRanks {
  public:
    BpeRanks() = default;
    explicit BpeRanks(const std::vector<std::string> &merges);
    // The rank of merging left and right, -1 when they do not merge.
    int32_t rank(std::string_view left, std::string_view right) const;

  private:
    std::unordered_map<std::string, int32_t, TokenTable::TextHash, std::equal_to<>> ranks_;
};

struct BpeWordOptions {
    bool whole_word = false;  // a word that is a token as a whole skips the merges
    bool hex_bytes = false;   // a symbol without a token falls back to "<0xNN>" per byte, not to
                              // the token of the byte itself (raw UTF-8 vocabularies, Gemma 4)
};

// Appends the tokens of one word (byte-encoded by byte_encoding.h, or raw UTF-8) to `out`.
void bpe_tokenize_word(const TokenTable &table, const BpeRanks &ranks, std::string_view word,
                       const BpeWordOptions &options, std::vector<int32_t> &out);

}  // namespace loom::engine
