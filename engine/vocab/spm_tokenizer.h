#pragma once
// SentencePiece (BPE variant, tokenizer.ggml.model = "llama"): starting from single characters,
// repeatedly merge the adjacent pair whose union is the vocabulary token with the best score.
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/vocab/token_table.h"

namespace loom::engine {

// Appends the tokens of `text` to `out`. Spaces must already be escaped as U+2581. A character
// that no token covers is emitted as its byte tokens, or as `unknown_id` where a byte has none.
void spm_tokenize(const TokenTable &table, std::string_view text, int32_t unknown_id,
                  std::vector<int32_t> &out);

}  // namespace loom::engine
