#include "engine/context/pooling.h"

#include <cmath>
#include <string>

#include "loom/error.h"

namespace loom::engine {
namespace {

constexpr std::pair<std::string_view, Pooling> kPoolingNames[] = {
    {"none", Pooling::none}, {"mean", Pooling::mean}, {"cls", Pooling::cls},
    {"last", Pooling::last}, {"rank", Pooling::rank},
};

// Whether token i of an n-token sequence is an output the pooling reads.
bool pooled_row(Pooling pooling, size_t i, size_t n) {
    switch (pooling) {
        case Pooling::cls:
        case Pooling::rank:
            return i == 0;
        case Pooling::last:
            return i + 1 == n;
        case Pooling::none:
        case Pooling::mean:
            return true;
    }
    return true;
}

}  // namespace

std::optional<Pooling> pooling_from_name(std::string_view name) {
    for (const auto &[n, p] : kPoolingNames) {
        if (n == name) return p;
    }
    return std::nullopt;
}

std::string_view pooling_name(Pooling pooling) {
    for (const auto &[n, p] : kPoolingNames) {
        if (p == pooling) return n;
    }
    return "unknown";
}

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
            fail("pooling", "rank pooling takes the reranker head's scores, not the states");
    }
    fail("pooling", "unknown pooling type {}", int(pooling));
}

std::string rerank_prompt(const Model &model) {
    return model.file()
        .metadata()
        .get_optional<std::string>("tokenizer.chat_template.rerank")
        .value_or("");
}

std::vector<int32_t> rerank_pair_tokens(const Vocab &vocab, std::string_view prompt,
                                        std::string_view query, std::string_view document) {
    if (!prompt.empty()) {
        std::string text(prompt);
        auto replace_all = [&text](std::string_view from, std::string_view to) {
            for (size_t at = text.find(from); at != std::string::npos;
                 at = text.find(from, at + to.size())) {
                text.replace(at, from.size(), to);
            }
        };
        replace_all("{query}", query);
        replace_all("{document}", document);
        return vocab.tokenize(text, false, true);
    }
    // As llama-embedding joins a pair, and as the models were trained (BERT: [CLS] q [SEP] d
    // [SEP]; XLM-R: <s> q </s></s> d </s>): the query with the vocabulary's prefix, its end of
    // text and separator where the vocabulary adds them, then the document with its suffix.
    std::vector<int32_t> out;
    if (vocab.add_bos() && vocab.bos() >= 0) out.push_back(vocab.bos());
    const std::vector<int32_t> q = vocab.tokenize(query, false, false);
    out.insert(out.end(), q.begin(), q.end());
    if (vocab.add_eos() && vocab.eos() >= 0) out.push_back(vocab.eos());
    if (vocab.add_sep() && vocab.sep() >= 0) out.push_back(vocab.sep());
    const std::vector<int32_t> d = vocab.tokenize(document, true, false);
    const bool has_prefix = vocab.add_bos() && !d.empty() && d.front() == vocab.bos();
    out.insert(out.end(), d.begin() + (has_prefix ? 1 : 0), d.end());
    return out;
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
    if (pooling == Pooling::rank && ctx.n_scores() == 0) {
        fail("embed", "{} has no classifier head: rank pooling needs a reranker",
             ctx.model().hparams().arch);
    }
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
            const size_t n = texts[last].size();
            for (size_t i = 0; i < n; ++i) {
                batch.add(texts[last][i], Pos(i), SeqId(last - first), pooled_row(pooling, i, n));
            }
            ++last;
        }
        ctx.decode(batch);
        int64_t row = 0;  // the text's first output
        for (size_t t = first; t < last; ++t) {
            std::vector<std::vector<float>> embeddings;
            if (pooling == Pooling::rank) {
                const auto s = ctx.scores(row++);
                embeddings.emplace_back(s.begin(), s.end());
            } else {
                const size_t n = texts[t].size();
                std::vector<float> rows;
                for (size_t i = 0; i < n; ++i) {
                    if (!pooled_row(pooling, i, n)) continue;
                    const auto e = ctx.embeddings(row++);
                    if (pooling == Pooling::none) {
                        embeddings.emplace_back(e.begin(), e.end());
                    } else {
                        rows.insert(rows.end(), e.begin(), e.end());
                    }
                }
                if (pooling != Pooling::none) embeddings.push_back(pool(rows, n_embd, pooling));
                if (normalize) {
                    for (std::vector<float> &e : embeddings) l2_normalize(e);
                }
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
