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

Tensor *build_layer_ffn(GraphContext &g, const LayerWeights &l, Tensor *cur, MoeOptions moe,
                        int64_t il) {
    if (l.ffn_gate_inp == nullptr) {
        return g.build_ffn(cur, {.up = l.ffn_up, .gate = l.ffn_gate, .down = l.ffn_down}, il);
    }
    moe.n_expert = g.hp.n_expert;
    moe.n_expert_used = g.hp.n_expert_used;
    Tensor *out = g.build_moe_ffn(cur,
                                  {.gate_inp = l.ffn_gate_inp,
                                   .up_exps = l.ffn_up_exps,
                                   .gate_exps = l.ffn_gate_exps,
                                   .down_exps = l.ffn_down_exps,
                                   .exp_probs_b = l.ffn_exp_probs_b},
                                  moe, il);
    if (l.ffn_up_shexp == nullptr) return out;
    Tensor *shared = g.build_ffn(
        cur, {.up = l.ffn_up_shexp, .gate = l.ffn_gate_shexp, .down = l.ffn_down_shexp}, il);
    if (l.ffn_gate_inp_shexp != nullptr) {
        // The shared expert's share, sigmoid(gate · x), computed as silu(y) / y like llama.cpp
        // (which rounds differently from a sigmoid).
        Tensor *y = mul_mat(g.ctx0, l.ffn_gate_inp_shexp, cur);  // [1, n_tokens]
        shared = mul(g.ctx0, shared, div(g.ctx0, silu(g.ctx0, y), y));
    }
    return g.name(add(g.ctx0, out, g.name(shared, "ffn_shexp_out", il)), "ffn_out", il);
}

}  // namespace loom::engine
