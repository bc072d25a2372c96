#include "engine/context/pooling.h"

#include <cmath>

#include "loom/error.h"

namespace loom::engine {

std::vector<float> pool(std::span<const float> rows, int64_t n_embd, Pooling pooling) {
    if (n_embd <= 0 || rows.empty() || rows.size() % size_t(n_embd) != 0) {
        fail("pooling", "{} floats are no whole rows of {}", rows.size(), n_embd);
    }
    const size_t n = rows.size() / size_t(n_embd), width = size_t(n_embd);
    switch (pooling) {
        case Pooling::mean: {
            // Summed in double, then divided: the order of n rows does not round the result.
            std::vector<double> sum(width, 0.0);
            for (size_t r = 0; r < n; ++r) {
                for (size_t i = 0; i < width; ++i) sum[i] += rows[r * width + i];
            }
            std::vector<float> out(width);
            for (size_t i = 0; i < width; ++i) out[i] = float(sum[i] / double(n));
            return out;
        }
        case Pooling::cls:
            return {rows.begin(), rows.begin() + long(width)};
        case Pooling::last:
            return {rows.end() - long(width), rows.end()};
        case Pooling::none:
            fail("pooling", "pooling 'none' keeps one embedding per token");
        case Pooling::rank:
            fail("pooling", "rank pooling (a reranker's classifier head) is not supported yet");
    }
    fail("pooling", "unknown pooling type {}", int(pooling));
}

void l2_normalize(std::span<float> v) {
    double sum = 0.0;
    for (const float x : v) sum += double(x) * double(x);
    if (sum == 0.0) return;
    const double scale = 1.0 / std::sqrt(sum);
    for (float &x : v) x = float(double(x) * scale);
}

std::vector<std::vector<std::vector<float>>> embed_sequences(
    Context &ctx, std::span<const std::vector<int32_t>> texts, Pooling pooling, bool normalize,
    const std::function<void(size_t done)> &progress) {
    const int64_t n_embd = ctx.model().hparams().n_embd, n_batch = ctx.options().n_batch;
    const auto n_seq = size_t(ctx.options().n_seq_max);
    for (size_t i = 0; i < texts.size(); ++i) {
        if (texts[i].empty()) fail("embed", "text {} has no tokens", i + 1);
        if (int64_t(texts[i].size()) > n_batch) {
            fail("embed", "text {} has {} tokens; at most {} are decoded at once", i + 1,
                 texts[i].size(), n_batch);
        }
    }
    std::vector<std::vector<std::vector<float>>> out;
    for (size_t first = 0; first < texts.size();) {
        Batch batch;
        size_t last = first;
        while (last < texts.size() && last - first < n_seq &&
               batch.size() + int64_t(texts[last].size()) <= n_batch) {
            for (size_t i = 0; i < texts[last].size(); ++i) {
                batch.add(texts[last][i], Pos(i), SeqId(last - first), true);
            }
            ++last;
        }
        ctx.decode(batch);
        int64_t row = 0;
        for (size_t t = first; t < last; ++t) {
            const auto n = int64_t(texts[t].size());
            std::vector<float> rows;
            rows.reserve(size_t(n * n_embd));
            for (int64_t i = 0; i < n; ++i) {
                const auto e = ctx.embeddings(row + i);
                rows.insert(rows.end(), e.begin(), e.end());
            }
            row += n;
            std::vector<std::vector<float>> embeddings;
            if (pooling == Pooling::none) {
                for (int64_t i = 0; i < n; ++i) {
                    embeddings.emplace_back(rows.begin() + i * n_embd,
                                            rows.begin() + (i + 1) * n_embd);
                }
            } else {
                embeddings.push_back(pool(rows, n_embd, pooling));
            }
            if (normalize) {
                for (std::vector<float> &e : embeddings) l2_normalize(e);
            }
            out.push_back(std::move(embeddings));
            ctx.memory().seq_rm(SeqId(t - first), 0, -1);
        }
        first = last;
        if (progress) progress(first);
    }
    return out;
}

}  // namespace loom::engine
