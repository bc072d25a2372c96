#include "engine/chat/prompt_cache.h"

#include <algorithm>

#include "loom/error.h"

namespace loom::engine {

int64_t PromptCache::assign(std::span<const int32_t> tokens) {
    if (tokens.empty()) fail("chat", "the prompt has no tokens");
    if (int64_t(tokens.size()) > ctx_.options().n_ctx) {
        fail("chat", "the prompt has {} tokens, more than the context's {}", tokens.size(),
             ctx_.options().n_ctx);
    }
    const auto mismatch = std::ranges::mismatch(tokens, tokens_);
    // The last token is decoded again when the whole prompt is cached: its logits are needed.
    size_t keep = std::min(size_t(mismatch.in1 - tokens.begin()), tokens.size() - 1);
    ctx_.memory().seq_rm(seq_, Pos(keep), -1);
    // A sliding-window cache may have let go of tokens the first new one would attend to: then
    // the whole prompt is decoded again.
    if (!ctx_.memory().seq_can_resume(seq_, Pos(keep))) {
        ctx_.memory().seq_rm(seq_, 0, -1);
        keep = 0;
    }
    tokens_.resize(keep);
    decode_tail(tokens.subspan(keep));
    return int64_t(tokens.size() - keep);
}

void PromptCache::append(int32_t token) {
    decode_tail(std::span(&token, 1));
}

void PromptCache::clear() {
    ctx_.memory().seq_rm(seq_, 0, -1);
    tokens_.clear();
}

// Only the last token of the tail wants logits. A decode that throws leaves the KV cache as
// before it, so tokens_ grows only after each batch is in.
void PromptCache::decode_tail(std::span<const int32_t> tail) {
    const auto n = int64_t(tail.size());
    for (int64_t start = 0; start < n; start += ctx_.options().n_batch) {
        const int64_t end = std::min(n, start + ctx_.options().n_batch);
        Batch batch;
        for (int64_t i = start; i < end; ++i) {
            batch.add(tail[size_t(i)], Pos(tokens_.size() + size_t(i - start)), seq_, i == n - 1);
        }
        ctx_.decode(batch);
        tokens_.insert(tokens_.end(), tail.begin() + start, tail.begin() + end);
    }
}

}  // namespace loom::engine
