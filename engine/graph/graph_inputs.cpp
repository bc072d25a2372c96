#include "engine/graph/graph_inputs.h"

#include <cstring>

#include "engine/kv_cache/kv_cache.h"

namespace loom::engine {

void InputEmbd::set_input(const GraphParams &params) {
    const Ubatch &u = params.ubatch;
    if (u.has_embd()) {
        std::memcpy(embd->data, u.embd.data(), u.embd.size() * sizeof(float));
    } else {
        std::memcpy(tokens->data, u.tokens.data(), u.tokens.size() * sizeof(int32_t));
    }
}

bool InputEmbd::can_reuse(const GraphParams &params) const {
    return tokens->ne[0] == params.ubatch.n_tokens();
}

void InputPos::set_input(const GraphParams &params) {
    std::memcpy(pos->data, params.ubatch.pos.data(), params.ubatch.pos.size() * sizeof(int32_t));
}

bool InputPos::can_reuse(const GraphParams &params) const {
    return pos->ne[0] == params.ubatch.n_tokens();
}

void InputOutIds::set_input(const GraphParams &params) {
    const auto &rows = params.ubatch.output_rows;
    std::memcpy(ids->data, rows.data(), rows.size() * sizeof(int32_t));
}

bool InputOutIds::can_reuse(const GraphParams &params) const {
    return ids->ne[0] == params.n_outputs;
}

void InputAttnKv::set_input(const GraphParams &params) {
    params.kv->fill_k_idxs(static_cast<int64_t *>(k_idxs->data));
    params.kv->fill_v_idxs(static_cast<int64_t *>(v_idxs->data));
    params.kv->fill_mask(params.ubatch, kq_mask->ne[0], kq_mask->ne[1],
                         static_cast<float *>(kq_mask->data));
}

bool InputAttnKv::can_reuse(const GraphParams &params) const {
    return kq_mask->ne[0] == params.n_kv && k_idxs->ne[0] == params.ubatch.n_tokens();
}

}  // namespace loom::engine
