#pragma once
// Everything one graph build depends on, by value, so that the next ubatch can tell cheaply
// whether the graph it needs is the one already built (allow_reuse).
#include <cstdint>

#include "engine/context/batch.h"
#include "engine/memory/memory.h"
#include "engine/model/hparams.h"

namespace loom::engine {

class Model;

// The run parameters a graph depends on (the rest of the context's options do not matter to it).
struct ComputeParams {
    int64_t n_ctx_seq = 0;  // cells one sequence can hold (LongRoPE picks its factors by it)
    bool flash_attn = false;
    bool causal = true;
    bool embeddings = false;  // the final hidden state is kept as an output beside the logits
};

struct GraphParams {
    const Model *model = nullptr;
    const Memory *memory = nullptr;  // null for a graph without one
    ComputeParams cparams;
    Ubatch ubatch;          // a copy: the graph's shapes come from it
    UbatchMemory slots;     // the ubatch's slot in each KV cache of the memory (applied)
    int64_t n_outputs = 0;  // tokens whose logits the graph returns

    // Same handles, options and shapes: the built graph computes this ubatch once its inputs are
    // set.
    bool allow_reuse(const GraphParams &other) const {
        if (slots.slots.size() != other.slots.slots.size()) return false;
        for (size_t i = 0; i < slots.slots.size(); ++i) {
            if (slots.slots[i].n_kv != other.slots.slots[i].n_kv) return false;
        }
        return model == other.model && memory == other.memory &&
               cparams.flash_attn == other.cparams.flash_attn &&
               cparams.causal == other.cparams.causal &&
               cparams.embeddings == other.cparams.embeddings && n_outputs == other.n_outputs &&
               ubatch.n_tokens() == other.ubatch.n_tokens() &&
               ubatch.has_embd() == other.ubatch.has_embd() &&
               ubatch.is_mixed() == other.ubatch.is_mixed() &&
               // the KV views' offsets select the streams
               ubatch.stream0 == other.ubatch.stream0 && ubatch.n_stream == other.ubatch.n_stream;
    }
};

}  // namespace loom::engine
