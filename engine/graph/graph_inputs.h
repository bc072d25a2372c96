#pragma once
// The graph inputs GraphContext creates: each owns its tensors and fills them for a ubatch.
#include "engine/graph/graph_result.h"

namespace loom::engine {

// Token ids I32 [n_tokens] (for get_rows on the embedding matrix), raw embeddings F32
// [n_embd, n_tokens], and for a ubatch mixing both, which of the two gives each row; the graph
// computes from what the ubatch has (GraphContext's select).
class InputEmbd : public GraphInput {
  public:
    Tensor *tokens = nullptr;
    Tensor *embd = nullptr;
    Tensor *rows = nullptr;  // I32 [n_tokens]: t, or n_tokens + t for a raw embedding
    void set_input(const GraphParams &params) override;
    bool can_reuse(const GraphParams &params) const override;
};

// Positions I32 [n_tokens * n_pos_per_embd]: component c of token t at c * n_tokens + t. The
// ubatch gives one position per token; with several components (multimodal rope) a text
// token's is repeated in the first three and the fourth is 0.
class InputPos : public GraphInput {
  public:
    Tensor *pos = nullptr;
    int n_pos_per_embd = 1;
    void set_input(const GraphParams &params) override;
    bool can_reuse(const GraphParams &params) const override;
};

// Rows of the ubatch whose logits are wanted, I32 [n_outputs].
class InputOutIds : public GraphInput {
  public:
    Tensor *ids = nullptr;
    void set_input(const GraphParams &params) override;
    bool can_reuse(const GraphParams &params) const override;
};

// Attention over the memory's KV caches: for each, where this ubatch's K and V go and what each
// token may see (a layer uses the tensors of the cache that holds it).
class InputAttnKv : public GraphInput {
  public:
    struct PerCache {
        Tensor *k_idxs = nullptr;   // I64 [n_tokens]
        Tensor *v_idxs = nullptr;   // I64 [n_tokens] (or one per element of V when V is
                                    // transposed); null for a K-only cache
        Tensor *kq_mask = nullptr;  // F32 [n_kv, n_tokens / n_stream, 1, n_stream]
    };
    std::vector<PerCache> caches;  // in the order of Memory::cache()
    void set_input(const GraphParams &params) override;
    bool can_reuse(const GraphParams &params) const override;
};

// The attention temperature of each token, F32 [1, 1, n_tokens], which Q is multiplied by
// (HParams::f_attn_temp_scale).
class InputAttnScale : public GraphInput {
  public:
    Tensor *scale = nullptr;
    float temp_scale = 0.0f;
    int64_t floor_scale = 1;
    float offset = 0.0f;
    void set_input(const GraphParams &params) override;
    bool can_reuse(const GraphParams &params) const override;
};

// Attention among the ubatch's tokens alone: token t sees token u of its sequence (when causal,
// only those at positions <= t's); with ALiBi the mask holds -|pos_t - pos_u| where it sees.
class InputAttnNoCache : public GraphInput {
  public:
    Tensor *kq_mask = nullptr;  // F32 [n_tokens, n_tokens]
    bool causal = true;
    bool alibi = false;
    void set_input(const GraphParams &params) override;
    bool can_reuse(const GraphParams &params) const override;
};

}  // namespace loom::engine
