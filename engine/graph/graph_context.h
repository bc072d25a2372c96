#pragma once
// The building blocks every architecture's graph is made of. A GraphContext unpacks one
// GraphParams into const members and records the graph into a GraphResult; the architecture
// file (engine/models/) only says which blocks, in which order, on which weights.
#include "engine/graph/graph_inputs.h"
#include "engine/graph/graph_params.h"
#include "engine/graph/graph_result.h"
#include "engine/memory/kv_cache.h"
#include "engine/model/model.h"
#include "engine/model/rope.h"

namespace loom::engine {

// Node budget of one graph: a few dozen nodes per layer for the largest models.
inline constexpr size_t kGraphNodes = 16384;

enum class NormType { rms, layer };
// The feed-forward's activation; with a gate: act(gate) * up. swiglu_oai (gpt-oss) is gated only:
// min(gate, 7) * sigmoid(1.702 min(gate, 7)) * (clamp(up, -7, 7) + 1).
enum class Activation { silu, gelu, relu, swiglu_oai };

// A feed-forward block: down(act(gate(x)) * up(x)) when gate is given, else down(act(up(x))).
// With up_holds_gate, up [n_embd, 2 n_ff] is both: the gate's rows first, then the up ones
// (Phi-3's merged ffn_up).
struct FfnWeights {
    Tensor *up = nullptr, *up_b = nullptr;
    Tensor *gate = nullptr, *gate_b = nullptr;
    Tensor *down = nullptr, *down_b = nullptr;
    Activation act = Activation::silu;
    bool up_holds_gate = false;
};

// A layer's Q, K and V, [head_dim, n_head or n_head_kv, n_tokens] each.
struct Qkv {
    Tensor *q, *k, *v;
};

// How a layer attends, beyond Q, K and V.
struct AttnOptions {
    // The output projection [n_head * head_dim_v, n_embd] (+ bias); none: the heads' outputs.
    Tensor *wo = nullptr, *wo_b = nullptr;
    float kq_scale = 1.0f;  // the scores q·k multiplied by it
    // Soft-capping of the scores (0: none): cap * tanh(s / cap). As in ggml, the flash path caps
    // the scaled scores and the naive path the raw ones (its softmax scales after): the same
    // where kq_scale is 1, as Gemma 2 has it (it scales Q instead).
    float softcap = 0.0f;
    Tensor *sinks = nullptr;  // F32 [n_head]: a logit per head that takes weight but has no value
    // F32 [n_kv, n_tokens / ns, n_head, ns] added to the scores (their mask's shape per head);
    // the naive path runs where it is given.
    Tensor *kq_b = nullptr;
    // [kv_lora_rank, head_dim_v, n_head]: each head's attended latent turned into its V output
    // (latent attention).
    Tensor *v_mla = nullptr;
};

// How a router's logits become expert probabilities.
enum class MoeGating {
    softmax,         // softmax over all experts
    sigmoid,         // each expert on its own
    softmax_weight,  // the logits select; a softmax over the selected k gives the weights
    sqrt_softplus,   // sqrt(log(1 + e^x))
};

// A mixture-of-experts feed-forward block's weights: the router gate_inp [n_embd, n_expert]
// (+ gate_inp_b), the experts stacked [.., .., n_expert] (gate and up separate, or merged
// gate_up_exps [n_embd, 2 * n_ff, n_expert]) with optional per-expert biases [n_out, n_expert]
// (gpt-oss), and an optional selection bias [n_expert].
struct MoeWeights {
    Tensor *gate_inp = nullptr, *gate_inp_b = nullptr;
    Tensor *up_exps = nullptr, *gate_exps = nullptr, *gate_up_exps = nullptr, *down_exps = nullptr;
    Tensor *up_exps_b = nullptr, *gate_exps_b = nullptr, *down_exps_b = nullptr;
    Tensor *exp_probs_b = nullptr;
};

struct MoeOptions {
    int64_t n_expert = 0, n_expert_used = 0;
    Activation act = Activation::silu;
    MoeGating gating = MoeGating::softmax;
    bool norm_weights = false;   // divide the k weights by their sum
    float weights_scale = 0.0f;  // then multiply them by this (0 or 1: not at all)
    // Expert groups (DeepSeek V3): only the n_group_used groups with the largest sums of their
    // two best scores compete. 0 or 1: no groups.
    int64_t n_groups = 0, n_group_used = 0;
    Tensor *probs_in = nullptr;     // router logits computed elsewhere, [n_expert, n_tokens]
    Tensor *selected_in = nullptr;  // experts chosen elsewhere, I32 [n_expert_used, n_tokens]
};

class GraphContext {
  public:
    GraphContext(const GraphParams &params, GraphResult &result);

    const Model &model;
    const HParams &hp;
    const ModelWeights &w;
    const Memory *const memory;  // null for a graph without one
    const Ubatch &ubatch;
    const int64_t n_tokens, n_outputs;
    const bool flash_attn;
    const bool keep_embeddings;  // the final hidden state is an output (ComputeParams::embeddings)
    Tensor *const rope_factors;  // the rotary embedding's frequency factors, or null
    loom::Context &ctx0;
    Graph *const gf;

    // Inputs
    // F32 [n_embd, n_tokens]; token_scale multiplies the rows looked up from token ids, not raw
    // embeddings (0: not at all; Gemma 3 scales its tokens' embeddings, not an image's).
    Tensor *build_inp_embd(float token_scale = 0.0f);
    Tensor *build_inp_pos();      // I32 [n_tokens * the architecture's n_pos_per_embd]
    Tensor *build_inp_out_ids();  // I32 [n_outputs], null when every token is an output
    // Attention over the memory's KV caches (each layer over the one that holds it).
    InputAttnKv *build_attn_inp_kv();
    // The same for a cache holding K alone (latent attention: V is read from K).
    InputAttnKv *build_attn_inp_k();
    // The attention temperature of each token (HParams::f_attn_temp_scale): F32 [1, 1, n_tokens].
    Tensor *build_inp_attn_scale();
    // Attention among the ubatch's own tokens, nothing cached (encoders, embeddings): causal as
    // the compute params say, each sequence apart.
    InputAttnNoCache *build_attn_inp_no_cache();

    // Blocks
    Tensor *build_norm(Tensor *cur, Tensor *weight, Tensor *bias, NormType type, int64_t il);
    // w · x (+ b)
    Tensor *build_linear(Tensor *weight, Tensor *x, Tensor *bias = nullptr);
    // Q, K and V of cur [n_embd, n_tokens]: views of one product where the layer has a fused
    // attn_qkv (+ bias), else its attn_q, attn_k and attn_v (+ each bias it has).
    Qkv build_qkv(const LayerWeights &l, Tensor *cur, int64_t il);
    Tensor *build_ffn(Tensor *cur, const FfnWeights &ffn, int64_t il);
    // Routes each token of cur [n_embd, n_tokens] to its k best experts and sums their outputs,
    // weighted as the options say: [n_embd, n_tokens] (engine/graph/moe.cpp).
    Tensor *build_moe_ffn(Tensor *cur, const MoeWeights &moe, const MoeOptions &options,
                          int64_t il);
    // Rotary embedding of x [head_dim, n_heads, n_tokens] at the positions `pos`, as the
    // architecture's rope mode and layer il's frequencies say (engine/model/rope.h).
    Tensor *build_rope(Tensor *x, Tensor *pos, int64_t il);
    // Stores cur.k / cur.v [head_dim, n_head_kv, n_tokens] in the cache of layer il, attends cur.q
    // [head_dim, n_head, n_tokens] over it and projects with the options' wo when given:
    // [n_embd, n_tokens]. With a K-only input cur.v is not stored (it is a view of cur.k).
    Tensor *build_attn(InputAttnKv *inp, Qkv cur, const AttnOptions &options, int64_t il);
    // The same over cur.k / cur.v alone.
    Tensor *build_attn(InputAttnNoCache *inp, Qkv cur, const AttnOptions &options, int64_t il);
    // The LM head on the final hidden state [n_embd, n_outputs]: logits F32 [n_vocab, n_outputs],
    // multiplied by HParams::f_logit_scale and soft-capped by f_final_logit_softcap where set.
    void build_logits(Tensor *cur);
    // An encoder's outputs: the final hidden state [n_embd, n_outputs] itself, no logits.
    void build_embeddings(Tensor *cur);

    // Names a node "<name>-<il>" (or "<name>" for il < 0) and returns it.
    Tensor *name(Tensor *t, const char *base, int64_t il = -1) const;

  private:
    // Multi-head attention of q [head_dim, n_q, n_head, ns] over k [head_dim, n_kv, n_head_kv,
    // ns] and v (the same shape, or [n_kv, head_dim_v, n_head_kv, ns] when v_trans), flash or
    // naive, each head's output then multiplied by v_mla when given: [head_dim_out * n_head,
    // n_tokens]. With ALiBi (HParams::f_max_alibi_bias) the masks hold the distances, which
    // the softmax scales by each head's slope. `cached`: k and v are cache cells (llama.cpp
    // pads their count, which decides how it sums the V product), not the batch's own.
    Tensor *build_attn_mha(Tensor *q, Tensor *k, Tensor *v, bool v_trans, bool cached,
                           Tensor *kq_mask, const AttnOptions &options, int64_t il);
    // act(gate) * up (or act(up) without a gate), any shape.
    Tensor *build_activation(Tensor *gate, Tensor *up, Activation act);
    // The MoE router: experts' probabilities (unbiased, for the weights) and the k chosen.
    std::pair<Tensor *, Tensor *> build_moe_routing(Tensor *cur, const MoeWeights &moe,
                                                    const MoeOptions &options, int64_t il);

    GraphResult &res_;
    const GraphParams &params_;
};

}  // namespace loom::engine
