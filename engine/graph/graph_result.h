#pragma once
// A built graph with what it needs to run again: its metadata arena, its inputs (each knows how
// to fill itself from a ubatch and whether it still fits a new one), and its outputs.
#include <memory>
#include <vector>

#include "engine/graph/graph_params.h"
#include "loom/core.h"

namespace loom::engine {

class GraphInput {
  public:
    virtual ~GraphInput() = default;
    // Writes the input tensor(s) for params' ubatch (host memory).
    virtual void set_input(const GraphParams &params) = 0;
    // Whether the tensor shapes built for the old params also hold the new ones.
    virtual bool can_reuse(const GraphParams &params) const = 0;
};

class GraphResult {
  public:
    explicit GraphResult(size_t arena_bytes);

    loom::Context &ctx() { return *ctx_; }
    Graph *graph() const { return graph_; }
    void set_graph(Graph *g) { graph_ = g; }
    // The params of the ubatch the graph computes next (those it was built for, or a later
    // ubatch it is reused for).
    const GraphParams &params() const { return params_; }

    template <typename T>
    T *add_input(std::unique_ptr<T> input) {
        T *raw = input.get();
        inputs_.push_back(std::move(input));
        return raw;
    }
    bool can_reuse(const GraphParams &params) const;
    // Takes params as the graph's and fills every input for their ubatch.
    void set_inputs(GraphParams params);

    Tensor *logits = nullptr;  // F32 [n_vocab, n_outputs]
    Tensor *embd = nullptr;    // F32 [n_embd, n_outputs]: the final hidden state
    // F32 [n_scores, n_outputs]: a reranker's classifier head on each output (null: none)
    Tensor *scores = nullptr;

  private:
    std::unique_ptr<loom::Context> ctx_;
    Graph *graph_ = nullptr;
    GraphParams params_;
    std::vector<std::unique_ptr<GraphInput>> inputs_;
};

}  // namespace loom::engine
