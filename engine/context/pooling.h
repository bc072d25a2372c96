#pragma once
// One embedding per sequence from an encoder's per-token states (Context::embeddings), as the
// model's pooling type (HParams::pooling) or the caller says: the mean of the tokens' states,
// the first token's (BERT's [CLS]) or the last token's. Rank pooling (a reranker's classifier
// head) is not built yet.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/context/context.h"
#include "engine/model/hparams.h"

namespace loom::engine {

// `rows`: the sequence's tokens' states in order, n_embd floats each. loom::Error ("[pooling]")
// for Pooling::none (the states are the embeddings), rank, or no rows.
std::vector<float> pool(std::span<const float> rows, int64_t n_embd, Pooling pooling);

// Divides v by its Euclidean norm (a zero vector stays zero), as OpenAI's embeddings are.
void l2_normalize(std::span<float> v);

// The embeddings of texts (their tokens), each decoded as a sequence of its own, as many at once
// as the context's sequences and batch hold: per text one embedding pooled as `pooling` says, or
// with Pooling::none one per token; each L2-normalised when `normalize`. `progress(done)` after
// each decode. The context must keep embeddings and start with its sequences empty, and leaves
// them so. loom::Error ("[embed]") for an empty text or one longer than the context's batch.
std::vector<std::vector<std::vector<float>>> embed_sequences(
    Context &ctx, std::span<const std::vector<int32_t>> texts, Pooling pooling, bool normalize,
    const std::function<void(size_t done)> &progress = {});

}  // namespace loom::engine
