#pragma once
// The expert tensors of a mixture-of-experts layer, named alike by every architecture that has
// them: the router, the stacked experts, and the shared experts.
#include "engine/model/weight_loader.h"
#include "engine/model/weights.h"

namespace loom::engine {

// ffn_gate_inp [n_embd, n_expert] and ffn_{gate,up,down}_exps with n_ff_exp rows per expert.
void load_routed_experts(WeightLoader &w, const HParams &hp, int64_t il, LayerWeights &l);
// ffn_{gate,up,down}_shexp, n_ff_shared wide.
void load_shared_expert(WeightLoader &w, const HParams &hp, int64_t il, int64_t n_ff_shared,
                        LayerWeights &l);

}  // namespace loom::engine
