#include "engine/graph/graph_inputs.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "engine/memory/kv_cache.h"

namespace loom::engine {

void InputEmbd::set_input(const GraphParams &params) {
    const Ubatch &u = params.ubatch;
    if (!u.embd.empty()) std::memcpy(embd->data, u.embd.data(), u.embd.size() * sizeof(float));
    if (u.has_embd()) return;
    auto *ids = static_cast<int32_t *>(tokens->data);
    auto *from = static_cast<int32_t *>(rows->data);
    for (int64_t t = 0; t < u.n_tokens(); ++t) {
        const bool raw = u.tokens[size_t(t)] == kEmbdToken;
        ids[t] = raw ? 0 : u.tokens[size_t(t)];  // a raw row looks up token 0 and ignores it
        from[t] = int32_t(raw ? u.n_tokens() + t : t);
    }
}

bool InputEmbd::can_reuse(const GraphParams &params) const {
    return tokens->ne[0] == params.ubatch.n_tokens();
}

void InputPos::set_input(const GraphParams &params) {
    const std::vector<Pos> &p = params.ubatch.pos;
    auto *out = static_cast<int32_t *>(pos->data);
    for (int c = 0; c < n_pos_per_embd; ++c) {
        const bool spare = n_pos_per_embd > 1 && c == 3;
        for (size_t t = 0; t < p.size(); ++t) out[size_t(c) * p.size() + t] = spare ? 0 : p[t];
    }
}

bool InputPos::can_reuse(const GraphParams &params) const {
    return pos->ne[0] == params.ubatch.n_tokens() * n_pos_per_embd;
}

void InputOutIds::set_input(const GraphParams &params) {
    const auto &rows = params.ubatch.output_rows;
    std::memcpy(ids->data, rows.data(), rows.size() * sizeof(int32_t));
}

bool InputOutIds::can_reuse(const GraphParams &params) const {
    return ids->ne[0] == params.n_outputs;
}

void InputAttnKv::set_input(const GraphParams &params) {
    for (size_t i = 0; i < caches.size(); ++i) {
        const KvCache &kv = params.memory->cache(int(i));
        const KvSlot &slot = params.slots.slots[i];
        kv.fill_k_idxs(slot, static_cast<int64_t *>(caches[i].k_idxs->data));
        if (caches[i].v_idxs != nullptr) {
            kv.fill_v_idxs(slot, static_cast<int64_t *>(caches[i].v_idxs->data));
        }
        kv.fill_mask(params.ubatch, caches[i].kq_mask->ne[0],
                     static_cast<float *>(caches[i].kq_mask->data));
    }
}

bool InputAttnKv::can_reuse(const GraphParams &params) const {
    if (caches.size() != params.slots.slots.size()) return false;
    for (size_t i = 0; i < caches.size(); ++i) {
        const Tensor *mask = caches[i].kq_mask;
        if (mask->ne[0] != params.slots.slots[i].n_kv || mask->ne[3] != params.ubatch.n_stream ||
            caches[i].k_idxs->ne[0] != params.ubatch.n_tokens()) {
            return false;
        }
    }
    return true;
}

void InputAttnScale::set_input(const GraphParams &params) {
    auto *out = static_cast<float *>(scale->data);
    const std::vector<Pos> &pos = params.ubatch.pos;
    for (size_t t = 0; t < pos.size(); ++t) {
        // In float up to the floor, then double, as llama.cpp computes it.
        const float chunk = std::floor((float(pos[t]) + offset) / float(floor_scale));
        out[t] = float(std::log(double(chunk) + 1.0) * double(temp_scale) + 1.0);
    }
}

bool InputAttnScale::can_reuse(const GraphParams &params) const {
    return scale->ne[2] == params.ubatch.n_tokens();
}

void InputAttnNoCache::set_input(const GraphParams &params) {
    const Ubatch &u = params.ubatch;
    const int64_t n = u.n_tokens();
    auto *mask = static_cast<float *>(kq_mask->data);
    for (int64_t t = 0; t < n; ++t) {
        for (int64_t j = 0; j < n; ++j) {
            const bool visible = u.seq_id[size_t(j)] == u.seq_id[size_t(t)] &&
                                 (!causal || u.pos[size_t(j)] <= u.pos[size_t(t)]);
            const float distance = float(std::abs(u.pos[size_t(t)] - u.pos[size_t(j)]));
            mask[t * n + j] = !visible ? -std::numeric_limits<float>::infinity()
                              : alibi  ? -distance
                                       : 0.0f;
        }
    }
}

bool InputAttnNoCache::can_reuse(const GraphParams &params) const {
    return kq_mask->ne[0] == params.ubatch.n_tokens() && causal == params.cparams.causal;
}

}  // namespace loom::engine
