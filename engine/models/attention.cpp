#include "engine/models/attention.h"

namespace loom::engine {

void load_attn_weights(WeightLoader &w, const HParams &hp, int64_t il, LayerWeights &l,
                       const AttnWeightOptions &options) {
    auto name = [&](const char *n) { return WeightLoader::layer_name(il, n); };
    const int64_t n_embd = hp.n_embd, n_q = hp.n_embd_head_k * hp.n_head;
    const int64_t n_k = hp.n_embd_k_gqa(), n_v = hp.n_embd_v_gqa();
    auto bias = options.biases ? &WeightLoader::require : &WeightLoader::optional;
    l.wqkv = w.optional(name("attn_qkv.weight"), {n_embd, n_q + n_k + n_v});
    if (l.wqkv != nullptr) {
        l.bqkv = (w.*bias)(name("attn_qkv.bias"), {n_q + n_k + n_v});
    } else {
        l.wq = w.require(name("attn_q.weight"), {n_embd, n_q});
        l.wk = w.require(name("attn_k.weight"), {n_embd, n_k});
        l.wv = w.require(name("attn_v.weight"), {n_embd, n_v});
        l.bq = (w.*bias)(name("attn_q.bias"), {n_q});
        l.bk = (w.*bias)(name("attn_k.bias"), {n_k});
        l.bv = (w.*bias)(name("attn_v.bias"), {n_v});
    }
    l.wo = w.require(name("attn_output.weight"), {hp.n_embd_head_v * hp.n_head, n_embd});
    l.bo = w.optional(name("attn_output.bias"), {n_embd});
}

}  // namespace loom::engine
