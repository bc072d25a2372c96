#pragma once
// One embedding per sequence from an encoder's per-token states (Context::embeddings), as the
// model's pooling type (HParams::pooling) or the caller says: the mean of the tokens' states,
// the first token's (BERT's [CLS]) or the last token's. Rank pooling (a reranker's classifier
// head) is not built yet.
#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/hparams.h"

namespace loom::engine {

// `rows`: the sequence's tokens' states in order, n_embd floats each. loom::Error ("[pooling]")
// for Pooling::none (the states are the embeddings), rank, or no rows.
std::vector<float> pool(std::span<const float> rows, int64_t n_embd, Pooling pooling);

// Divides v by its Euclidean norm (a zero vector stays zero), as OpenAI's embeddings are.
void l2_normalize(std::span<float> v);

}  // namespace loom::engine
