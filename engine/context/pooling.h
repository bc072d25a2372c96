#pragma once
// One embedding per sequence from an encoder's per-token states (Context::embeddings), as the
// model's pooling type (HParams::pooling) or the caller says: the mean of the tokens' states,
// the first token's (BERT's [CLS]) or the last token's; or, for a reranker, its classifier head's
// scores on the first token (rank).
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/context/context.h"
#include "engine/model/hparams.h"

namespace loom::engine {

// "none", "mean", "cls", "last", "rank" (llama.cpp's --pooling names); nullopt for another.
std::optional<Pooling> pooling_from_name(std::string_view name);
std::string_view pooling_name(Pooling pooling);

// `rows`: the sequence's tokens' states in order, n_embd floats each. loom::Error ("[pooling]")
// for Pooling::none (the states are the embeddings), rank (scores come from the model's head:
// Context::scores), or no rows.
std::vector<float> pool(std::span<const float> rows, int64_t n_embd, Pooling pooling);

// A reranker's prompt for a (query, document) pair: the file's tokenizer.chat_template.rerank
// ("{query}" and "{document}" in it), empty where it has none.
std::string rerank_prompt(const Model &model);

// The tokens of a (query, document) pair for a reranker: `prompt` with "{query}" and
// "{document}" replaced, special tokens parsed, where it is not empty; else as llama-embedding
// joins a pair: BOS query EOS SEP document and the vocabulary's suffix, each marker where the
// vocabulary adds it (BERT: [CLS] q [SEP] d [SEP]). llama-server leaves out a WordPiece pair's
// last [SEP]; the models were trained with it.
std::vector<int32_t> rerank_pair_tokens(const Vocab &vocab, std::string_view prompt,
                                        std::string_view query, std::string_view document);

// Divides v by its Euclidean norm (a zero vector stays zero), as OpenAI's embeddings are.
void l2_normalize(std::span<float> v);

// The embeddings of texts (their tokens), each decoded as a sequence of its own, as many at once
// as the context's sequences and batch hold: per text one embedding pooled as `pooling` says, or
// with Pooling::none one per token; each L2-normalised when `normalize`. With Pooling::rank,
// per text the reranker's scores (Context::scores of its first token), never normalised. Only
// the rows a pooling reads are computed past the last layer's attention (the first token for cls
// and rank, the last for last). `progress(done)` after each decode. The context must keep
// embeddings and start with its sequences empty, and leaves them so. loom::Error ("[embed]")
// for an empty text, one longer than the context's batch, or rank on a model without a head.
std::vector<std::vector<std::vector<float>>> embed_sequences(
    Context &ctx, std::span<const std::vector<int32_t>> texts, Pooling pooling, bool normalize,
    const std::function<void(size_t done)> &progress = {});

}  // namespace loom::engine
