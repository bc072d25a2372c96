#pragma once
// Idle streams between busy ones. split_batch gives a ubatch a run of consecutive KV streams, so
// slots 0 and 2 decoding while slot 1 waits cost two ubatches, and the weights stream from memory
// twice for one token each. Here each idle stream inside the run gets filler tokens (as many as
// the busy streams' fewest), so one ubatch covers it: a filler goes at its sequence's next
// position, wants no output, and is removed from the memory after the decode. Sequences do not
// see each other's streams and every row's products are the same whatever the batch, so the
// busy sequences' results do not change.
#include <optional>
#include <utility>
#include <vector>

#include "engine/context/batch.h"
#include "engine/memory/memory.h"

namespace loom::engine {

struct StreamGapFill {
    Batch batch;                                 // the batch with the fillers after its tokens
    std::vector<std::pair<SeqId, Pos>> fillers;  // per filled sequence, its first filler's position
};

// Null where nothing needs filling: one stream, no gap, a batch of embeddings, a memory with a
// sliding window (fillers would push its kept cells out of the ring), or fillers past
// `max_pos` (a learned position table's end). Sequence s lives in stream s % n_stream; the
// filler for stream s is sequence s.
std::optional<StreamGapFill> fill_stream_gaps(const Batch &batch, const Memory &memory,
                                              int n_stream, Pos max_pos);

}  // namespace loom::engine
