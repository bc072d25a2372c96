#pragma once
// The token embeddings and the LM head as every architecture names them.
#include "engine/model/weight_loader.h"
#include "engine/model/weights.h"

namespace loom::engine {

// Where an architecture's LM head comes from.
enum class OutputHead {
    tied,         // the token embeddings, always (any output.weight is not read)
    own_or_tied,  // output.weight where the file has it, else the token embeddings
    own,          // output.weight, required
};

// token_embd [n_embd, n_vocab] (looked up by rows), output_norm [n_embd] and the LM head.
void load_embeddings(WeightLoader &w, const HParams &hp, ModelWeights &m, OutputHead head);

}  // namespace loom::engine
