#pragma once
// What decode() takes: tokens (or embeddings) with their positions, the sequences each belongs
// to, and which of them need logits; and the ubatches it is cut into.
#include <cstdint>
#include <span>
#include <vector>

namespace loom::engine {

using SeqId = int32_t;
using Pos = int32_t;

// In a batch that mixes token ids and raw embeddings, the id of a token given as an embedding.
inline constexpr int32_t kEmbdToken = -1;

struct Batch {
    // Per token its id. Empty when every token is given as a raw embedding; kEmbdToken marks
    // the embedding rows of a batch that mixes both.
    std::vector<int32_t> tokens;
    std::vector<float> embd;      // n * n_embd floats: the raw embeddings (any row of a token)
    std::vector<Pos> pos;         // per token
    std::vector<SeqId> seq_id;    // per token: one sequence each
    std::vector<uint8_t> logits;  // per token: 1 = return its logits

    int64_t size() const { return int64_t(pos.size()); }
    // Appends one token of sequence `seq` at position `p`.
    void add(int32_t token, Pos p, SeqId seq, bool want_logits);
    // Appends a raw embedding (n_embd floats) in place of a token; the batch becomes mixed
    // when it also holds token ids.
    void add_embd(std::span<const float> e, Pos p, SeqId seq, bool want_logits);
    void clear() { *this = Batch{}; }
};

// A slice of a batch that one graph computes. Its tokens belong to n_stream consecutive KV
// streams starting at stream0, the same number from each, stream after stream (with one
// stream: the batch's order).
struct Ubatch {
    std::vector<int32_t> tokens;  // empty for embeddings; kEmbdToken rows when mixed
    std::vector<float> embd;      // n_tokens * n_embd when any token is an embedding
    std::vector<Pos> pos;
    std::vector<SeqId> seq_id;
    std::vector<int32_t> output_rows;  // indices (into this ubatch) of the tokens that want logits
    std::vector<int64_t> output_ids;   // for each output row, its index among the batch's outputs
    std::vector<int64_t> batch_index;  // index of each token in the batch
    int stream0 = 0;
    int n_stream = 1;

    int64_t n_tokens() const { return int64_t(pos.size()); }
    int64_t n_outputs() const { return int64_t(output_rows.size()); }
    bool has_embd() const { return tokens.empty(); }
    bool is_mixed() const { return !tokens.empty() && !embd.empty(); }
};

// Cuts `batch` into ubatches of at most n_ubatch tokens. With one KV stream they follow the
// batch's order. With several (sequence s in stream s % n_stream), each ubatch takes as many
// tokens of each of a run of consecutive streams as the least of them has left (and n_ubatch
// allows), so attention can run on every stream's cells at once as one more tensor dimension.
std::vector<Ubatch> split_batch(const Batch &batch, int64_t n_ubatch, int64_t n_embd, int n_stream);

}  // namespace loom::engine
