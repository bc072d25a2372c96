#include "engine/graph/graph_result.h"

namespace loom::engine {

GraphResult::GraphResult(size_t arena_bytes)
    : ctx_(std::make_unique<loom::Context>(
          ContextParams{.mem_size = arena_bytes, .no_alloc = true})) {}

bool GraphResult::can_reuse(const GraphParams &params) const {
    if (graph_ == nullptr || !params_.allow_reuse(params)) return false;
    for (const auto &input : inputs_) {
        if (!input->can_reuse(params)) return false;
    }
    return true;
}

void GraphResult::set_inputs(GraphParams params) {
    params_ = std::move(params);
    for (const auto &input : inputs_) input->set_input(params_);
}

}  // namespace loom::engine
