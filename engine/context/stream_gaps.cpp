#include "engine/context/stream_gaps.h"

#include <algorithm>
#include <limits>

#include "engine/memory/kv_cache.h"

namespace loom::engine {

std::optional<StreamGapFill> fill_stream_gaps(const Batch &batch, const Memory &memory,
                                              int n_stream, Pos max_pos) {
    if (n_stream <= 1 || !batch.embd.empty() || batch.size() == 0) return std::nullopt;
    if (memory.n_caches() != 1 || memory.cache(0).window().type != WindowType::none) {
        return std::nullopt;
    }
    std::vector<int64_t> per_stream(size_t(n_stream), 0);
    for (const SeqId seq : batch.seq_id) ++per_stream[size_t(seq % n_stream)];
    int first = -1, last = -1;
    int64_t fewest = std::numeric_limits<int64_t>::max();
    for (int s = 0; s < n_stream; ++s) {
        if (per_stream[size_t(s)] == 0) continue;
        if (first < 0) first = s;
        last = s;
        fewest = std::min(fewest, per_stream[size_t(s)]);
    }
    StreamGapFill fill{.batch = batch, .fillers = {}};
    for (int s = first + 1; s < last; ++s) {
        if (per_stream[size_t(s)] != 0) continue;
        const Pos next = memory.seq_pos_max(SeqId(s)) + 1;
        if (int64_t(next) + fewest > int64_t(max_pos)) return std::nullopt;
        // Token 0 is in every vocabulary; what it computes is never read.
        for (int64_t i = 0; i < fewest; ++i) fill.batch.add(0, Pos(next + i), SeqId(s), false);
        fill.fillers.emplace_back(SeqId(s), next);
    }
    if (fill.fillers.empty()) return std::nullopt;
    return fill;
}

}  // namespace loom::engine
