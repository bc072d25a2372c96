#pragma once
// What decode() takes: tokens (or embeddings) with their positions, the sequences each belongs
// to, and which of them need logits; and the ubatches it is cut into.
#include <cstdint>
#include <vector>

namespace loom::engine {

using SeqId = int32_t;
using Pos = int32_t;

struct Batch {
    std::vector<int32_t> tokens;  // n tokens, or empty when embd is given
    std::vector<float> embd;      // n * n_embd floats instead of tokens
    std::vector<Pos> pos;         // per token
    std::vector<SeqId> seq_id;    // per token: one sequence each
    std::vector<uint8_t> logits;  // per token: 1 = return its logits

    int64_t size() const { return int64_t(pos.size()); }
    // Appends one token of sequence `seq` at position `p`.
    void add(int32_t token, Pos p, SeqId seq, bool want_logits) {
        tokens.push_back(token);
        pos.push_back(p);
        seq_id.push_back(seq);
        logits.push_back(want_logits ? 1 : 0);
    }
    void clear() { *this = Batch{}; }
};

// A slice of a batch that one graph computes: a copy of its tokens, in batch order.
struct Ubatch {
    std::vector<int32_t> tokens;  // empty for embeddings
    std::vector<float> embd;
    std::vector<Pos> pos;
    std::vector<SeqId> seq_id;
    std::vector<int32_t> output_rows;  // indices (into this ubatch) of the tokens that want logits
    std::vector<int64_t> batch_index;  // index of each token in the batch

    int64_t n_tokens() const { return int64_t(pos.size()); }
    int64_t n_outputs() const { return int64_t(output_rows.size()); }
    bool has_embd() const { return tokens.empty(); }
};

// Cuts `batch` into ubatches of at most n_ubatch tokens, in order.
std::vector<Ubatch> split_batch(const Batch &batch, int64_t n_ubatch, int64_t n_embd);

}  // namespace loom::engine
