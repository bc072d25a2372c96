#pragma once
// The shape the KV cache tests give their caches: K and V of 8 floats a cell and layer.
#include "engine/model/hparams.h"

namespace loom::engine::test {

inline HParams tiny_hparams(int64_t n_layer = 1) {
    HParams hp;
    hp.n_layer = n_layer;
    hp.n_embd = 8;
    hp.n_head = hp.n_head_kv = 2;
    hp.n_embd_head_k = hp.n_embd_head_v = 4;
    return hp;
}

}  // namespace loom::engine::test
