#pragma once
// The tokens one sequence of a Context's KV cache holds, so that a conversation re-rendered and
// re-tokenized each turn is decoded only past the prefix it shares with what is already cached.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/context/context.h"

namespace loom::engine {

class PromptCache {
  public:
    explicit PromptCache(Context &ctx, SeqId seq = 0) : ctx_(ctx), seq_(seq) {}

    // Makes the sequence hold `tokens` (not empty, at most n_ctx of them): keeps the longest
    // prefix shared with the cached tokens, removes the rest from the KV cache and decodes the
    // new tail in batches of n_batch. At least the last token is decoded, so that logits(0)
    // afterwards are its logits. Returns the number of tokens decoded.
    int64_t assign(std::span<const int32_t> tokens);
    // Decodes one more token after the cached ones; its logits are then logits(0).
    void append(int32_t token);
    // Empties the sequence.
    void clear();

    std::span<const int32_t> tokens() const { return tokens_; }
    int64_t size() const { return int64_t(tokens_.size()); }
    // Whether `n` more tokens fit in the context.
    bool fits(int64_t n) const { return size() + n <= ctx_.options().n_ctx; }

  private:
    void decode_tail(std::span<const int32_t> tail);

    Context &ctx_;
    SeqId seq_;
    std::vector<int32_t> tokens_;  // position i of the sequence holds tokens_[i]
};

}  // namespace loom::engine
