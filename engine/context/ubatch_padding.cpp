#include "engine/context/ubatch_padding.h"

#include <algorithm>
#include <bit>

namespace loom::engine {

int64_t bucketed_tokens(int64_t n, int64_t most) {
    // Small steps (a few sequences generating) pay for every padded token in attention, so
    // their buckets are tight; past 16, 32 more tokens cost little next to the weights' stream.
    const int64_t bucket =
        n <= 16 ? int64_t(std::bit_ceil(uint64_t(std::max<int64_t>(n, 1)))) : (n + 31) / 32 * 32;
    return std::max(n, std::min(bucket, most));
}

std::vector<int32_t> pad_ubatch(Ubatch &u, int64_t n_embd, int64_t most_per_stream) {
    const int64_t n = u.n_tokens();
    const int64_t per = n / u.n_stream;  // split_batch gives every stream the same run length
    const int64_t padded = bucketed_tokens(per, most_per_stream);
    std::vector<int32_t> from;
    from.reserve(size_t(padded * u.n_stream));
    for (int64_t s = 0; s < u.n_stream; ++s) {
        for (int64_t t = 0; t < padded; ++t)
            from.push_back(int32_t(s * per + std::min(t, per - 1)));
    }
    if (padded == per) return from;

    Ubatch out;
    out.stream0 = u.stream0;
    out.n_stream = u.n_stream;
    for (size_t t = 0; t < from.size(); ++t) {
        const auto i = size_t(from[t]);
        if (!u.tokens.empty()) out.tokens.push_back(u.tokens[i]);
        if (!u.embd.empty()) {
            out.embd.insert(out.embd.end(), u.embd.begin() + int64_t(i) * n_embd,
                            u.embd.begin() + int64_t(i + 1) * n_embd);
        }
        out.pos.push_back(u.pos[i]);
        out.seq_id.push_back(u.seq_id[i]);
        out.batch_index.push_back(u.batch_index[i]);
    }
    // Outputs move with their stream's run; the order of outputs stays the same.
    for (const int32_t row : u.output_rows) {
        const int32_t stream = int32_t(row / per);
        out.output_rows.push_back(int32_t(stream * padded + row % per));
    }
    out.output_ids = u.output_ids;
    u = std::move(out);
    return from;
}

}  // namespace loom::engine
