#include "engine/context/batch.h"

#include <algorithm>

namespace loom::engine {

std::vector<Ubatch> split_batch(const Batch &batch, int64_t n_ubatch, int64_t n_embd) {
    std::vector<Ubatch> out;
    for (int64_t begin = 0; begin < batch.size(); begin += n_ubatch) {
        const int64_t end = std::min(batch.size(), begin + n_ubatch);
        Ubatch u;
        for (int64_t i = begin; i < end; ++i) {
            if (!batch.tokens.empty()) u.tokens.push_back(batch.tokens[size_t(i)]);
            u.pos.push_back(batch.pos[size_t(i)]);
            u.seq_id.push_back(batch.seq_id[size_t(i)]);
            u.batch_index.push_back(i);
            if (batch.logits[size_t(i)]) u.output_rows.push_back(int32_t(i - begin));
        }
        if (batch.tokens.empty()) {
            u.embd.assign(batch.embd.begin() + begin * n_embd, batch.embd.begin() + end * n_embd);
        }
        out.push_back(std::move(u));
    }
    return out;
}

}  // namespace loom::engine
