#pragma once
// Ubatch sizes in buckets, so that the graphs of prompts and of mixed serving steps are reused
// like those of generation: a graph depends on the ubatch's token count, which otherwise
// changes with nearly every prompt chunk.
//
// Padding repeats the last token of each stream's run: same token (or embedding row), position,
// sequence and KV cell. Every kernel gives a token the same bits whatever else is in the batch
// (core/cpu/gemm.h), so a repeat computes exactly the original's K and V and writes them into
// the original's cell again, changing nothing; its logits are never read. Real tokens keep
// their results bit for bit.
#include <cstdint>
#include <vector>

#include "engine/context/batch.h"

namespace loom::engine {

// The bucket of n tokens per stream: powers of two up to 16, then multiples of 32, never above
// `most` (the ubatch's room per stream) unless n itself is.
int64_t bucketed_tokens(int64_t n, int64_t most);

// Pads each stream's run of u to bucketed_tokens tokens. Returns, for each token of the padded
// ubatch, the index of the token it copies in the original (itself for real tokens).
std::vector<int32_t> pad_ubatch(Ubatch &u, int64_t n_embd, int64_t most_per_stream);

}  // namespace loom::engine
