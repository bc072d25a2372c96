#pragma once
// The expert tensors of a mixture-of-experts layer, named alike by every architecture that has
// them: the router, the stacked experts, and the shared experts.
#include "engine/graph/graph_context.h"
#include "engine/model/weight_loader.h"
#include "engine/model/weights.h"

namespace loom::engine {

// ffn_gate_inp [n_embd, n_expert] and ffn_{gate,up,down}_exps with n_ff_exp rows per expert.
void load_routed_experts(WeightLoader &w, const HParams &hp, int64_t il, LayerWeights &l);
// ffn_{gate,up,down}_shexp, n_ff_shared wide.
void load_shared_expert(WeightLoader &w, const HParams &hp, int64_t il, int64_t n_ff_shared,
                        LayerWeights &l);

// A layer's feed-forward on its normed input: a SwiGLU network where the layer has no router,
// else its routed experts (weighed as `moe` says; n_expert and n_expert_used are taken from the
// hparams) plus its shared expert, scaled by sigmoid(ffn_gate_inp_shexp · x) where the layer has
// that gate.
Tensor *build_layer_ffn(GraphContext &g, const LayerWeights &l, Tensor *cur, MoeOptions moe,
                        int64_t il);

}  // namespace loom::engine
