#include "engine/context/batch.h"

#include <algorithm>
#include <deque>

namespace loom::engine {
namespace {

// Builds a ubatch from the batch's tokens at `indices`, in that order.
Ubatch gather(const Batch &batch, const std::vector<int64_t> &indices,
              const std::vector<int64_t> &output_id, int64_t n_embd) {
    Ubatch u;
    const bool any_embd = !batch.embd.empty();
    for (const int64_t i : indices) {
        if (!batch.tokens.empty()) u.tokens.push_back(batch.tokens[size_t(i)]);
        if (any_embd) {
            const auto row = batch.embd.begin() + i * n_embd;
            u.embd.insert(u.embd.end(), row, row + n_embd);
        }
        u.pos.push_back(batch.pos[size_t(i)]);
        u.seq_id.push_back(batch.seq_id[size_t(i)]);
        u.batch_index.push_back(i);
        if (batch.logits[size_t(i)]) {
            u.output_rows.push_back(int32_t(u.n_tokens() - 1));
            u.output_ids.push_back(output_id[size_t(i)]);
        }
    }
    // A mixed batch's slice may hold tokens only: it then reads no embedding.
    if (!u.tokens.empty() &&
        std::find(u.tokens.begin(), u.tokens.end(), kEmbdToken) == u.tokens.end()) {
        u.embd.clear();
    }
    return u;
}

}  // namespace

void Batch::add(int32_t token, Pos p, SeqId seq, bool want_logits) {
    if (tokens.empty() && !pos.empty()) {  // after embeddings: the batch becomes mixed
        tokens.assign(pos.size(), kEmbdToken);
    }
    if (!embd.empty()) embd.resize(embd.size() + embd.size() / pos.size(), 0.0f);
    tokens.push_back(token);
    pos.push_back(p);
    seq_id.push_back(seq);
    logits.push_back(want_logits ? 1 : 0);
}

void Batch::add_embd(std::span<const float> e, Pos p, SeqId seq, bool want_logits) {
    // Rows of the tokens given by id stay zero: only kEmbdToken rows are read.
    if (!tokens.empty()) {
        if (embd.empty()) embd.assign(tokens.size() * e.size(), 0.0f);
        tokens.push_back(kEmbdToken);
    }
    embd.insert(embd.end(), e.begin(), e.end());
    pos.push_back(p);
    seq_id.push_back(seq);
    logits.push_back(want_logits ? 1 : 0);
}

std::vector<Ubatch> split_batch(const Batch &batch, int64_t n_ubatch, int64_t n_embd,
                                int n_stream) {
    std::vector<int64_t> output_id(size_t(batch.size()), -1);  // index among the outputs
    int64_t n_out = 0;
    for (int64_t i = 0; i < batch.size(); ++i) {
        if (batch.logits[size_t(i)]) output_id[size_t(i)] = n_out++;
    }

    std::vector<Ubatch> out;
    if (n_stream == 1) {
        for (int64_t begin = 0; begin < batch.size(); begin += n_ubatch) {
            std::vector<int64_t> indices;
            for (int64_t i = begin; i < std::min(batch.size(), begin + n_ubatch); ++i) {
                indices.push_back(i);
            }
            out.push_back(gather(batch, indices, output_id, n_embd));
        }
        return out;
    }
    std::vector<std::deque<int64_t>> pending{size_t(n_stream)};
    for (int64_t i = 0; i < batch.size(); ++i) {
        pending[size_t(batch.seq_id[size_t(i)] % n_stream)].push_back(i);
    }
    for (;;) {
        int s0 = 0;
        while (s0 < n_stream && pending[size_t(s0)].empty()) ++s0;
        if (s0 == n_stream) return out;
        int s1 = s0 + 1;  // the run [s0, s1)
        size_t per_stream = pending[size_t(s0)].size();
        while (s1 < n_stream && !pending[size_t(s1)].empty() && s1 - s0 < n_ubatch) {
            per_stream = std::min(per_stream, pending[size_t(s1)].size());
            ++s1;
        }
        per_stream = std::min(per_stream, size_t(n_ubatch / (s1 - s0)));
        std::vector<int64_t> indices;
        for (int s = s0; s < s1; ++s) {
            auto &queue = pending[size_t(s)];
            indices.insert(indices.end(), queue.begin(), queue.begin() + long(per_stream));
            queue.erase(queue.begin(), queue.begin() + long(per_stream));
        }
        Ubatch u = gather(batch, indices, output_id, n_embd);
        u.stream0 = s0;
        u.n_stream = s1 - s0;
        out.push_back(std::move(u));
    }
}

}  // namespace loom::engine
