#include "engine/models/experts.h"

namespace loom::engine {

void load_routed_experts(WeightLoader &w, const HParams &hp, int64_t il, LayerWeights &l) {
    auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
    const int64_t n_embd = hp.n_embd, n_ff = hp.n_ff_exp, n_expert = hp.n_expert;
    l.ffn_gate_inp = w.require(name("ffn_gate_inp.weight"), {n_embd, n_expert});
    l.ffn_gate_exps = w.require(name("ffn_gate_exps.weight"), {n_embd, n_ff, n_expert});
    l.ffn_up_exps = w.require(name("ffn_up_exps.weight"), {n_embd, n_ff, n_expert});
    l.ffn_down_exps = w.require(name("ffn_down_exps.weight"), {n_ff, n_embd, n_expert});
}

void load_shared_expert(WeightLoader &w, const HParams &hp, int64_t il, int64_t n_ff_shared,
                        LayerWeights &l) {
    auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
    l.ffn_gate_shexp = w.require(name("ffn_gate_shexp.weight"), {hp.n_embd, n_ff_shared});
    l.ffn_up_shexp = w.require(name("ffn_up_shexp.weight"), {hp.n_embd, n_ff_shared});
    l.ffn_down_shexp = w.require(name("ffn_down_shexp.weight"), {n_ff_shared, hp.n_embd});
}

}  // namespace loom::engine
