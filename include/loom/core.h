#pragma once
// The tensor-graph library: a metadata arena (Context), lazy op builders and graphs.
//
// Nothing computes when an op builder is called: it only records a node with its sources and
// parameters. A backend runs the graph later (loom/cpu.h). Every builder checks shapes and
// dtypes and throws loom::Error("[op] ...") naming the tensors on a mismatch.
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include "loom/error.h"
#include "loom/tensor.h"

namespace loom {

struct Graph;

struct ContextParams {
    size_t mem_size = 16u << 20;  // bytes for tensor records, graphs and (unless no_alloc) data
    bool no_alloc = false;        // tensors get shapes but no data; an allocator places them
};

// A fixed-budget arena holding tensor records, graphs and, unless no_alloc, tensor data.
// Going over the budget throws loom::Error; nothing is freed before the Context is destroyed.
class Context {
  public:
    explicit Context(ContextParams params = {});
    ~Context();
    Context(const Context &) = delete;
    Context &operator=(const Context &) = delete;

    bool no_alloc() const { return no_alloc_; }
    size_t used() const { return used_; }
    size_t size() const { return size_; }

    // Raw arena memory; throws loom::Error("[context] ...") when the budget is exhausted.
    void *allocate(size_t bytes, size_t align, const char *what);

    Tensor *new_tensor(DType type, std::span<const int64_t> ne);
    Tensor *new_tensor(DType type, std::initializer_list<int64_t> ne) {
        return new_tensor(type, std::span<const int64_t>(ne.begin(), ne.size()));
    }
    // A tensor record that shares `src`'s memory with new shape and strides (set by caller).
    Tensor *new_view(Tensor *src, size_t offset);

  private:
    std::byte *base_ = nullptr;
    size_t size_ = 0;
    size_t used_ = 0;
    bool no_alloc_ = false;
};

// Name a tensor (truncated to kMaxName - 1 bytes); returns it for chaining.
Tensor *set_name(Tensor *t, std::string_view name);
Tensor *set_input(Tensor *t);
Tensor *set_output(Tensor *t);
Tensor *set_param(Tensor *t);

// ---------------------------------------------------------------------------------------------
// Graphs

inline constexpr size_t kDefaultGraphSize = 2048;

// A topologically ordered list of nodes (tensors produced by ops) and leafs (tensors with
// Op::none), each at most once. Lives in the Context that created it.
struct Graph {
    size_t size = 0;  // node budget; leafs have their own budget of the same size
    size_t n_nodes = 0;
    size_t n_leafs = 0;
    Tensor **nodes = nullptr;
    Tensor **leafs = nullptr;
    // open-addressed set of every tensor in the graph (nodes and leafs)
    size_t hash_size = 0;
    Tensor **hash_keys = nullptr;

    std::span<Tensor *const> node_list() const { return {nodes, n_nodes}; }
    std::span<Tensor *const> leaf_list() const { return {leafs, n_leafs}; }
    bool contains(const Tensor *t) const;
    Tensor *find(std::string_view name) const;
};

Graph *new_graph(Context &ctx, size_t size = kDefaultGraphSize);

// Adds t and every tensor it depends on (parents before children), flagging each node to compute.
void build_forward_expand(Graph *graph, Tensor *t);
// Adds every branch to the graph but flags only branches[chosen] (and its parents) to compute.
// The graph's shape is then the same whichever branch is chosen. Returns branches[chosen].
Tensor *build_forward_select(Graph *graph, std::span<Tensor *const> branches, size_t chosen);
// Adds t like build_forward_expand, then moves t's own subgraph to the front of the node list
// (valid because those nodes depend only on leafs and on each other).
void build_forward_order(Graph *graph, Tensor *t);

// ---------------------------------------------------------------------------------------------
// Views: metadata only. The result aliases the source's memory.

// Whether nodes of `op` only describe memory (view, reshape, permute, transpose): backends
// compute nothing for them. cpy and set_rows also alias their destination, but write it.
bool is_view_op(Op op);

Tensor *view_1d(Context &ctx, Tensor *a, int64_t ne0, size_t offset);
Tensor *view_2d(Context &ctx, Tensor *a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset);
Tensor *view_3d(Context &ctx, Tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1,
                size_t nb2, size_t offset);
Tensor *view_4d(Context &ctx, Tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3,
                size_t nb1, size_t nb2, size_t nb3, size_t offset);
// Same elements, new shape; `a` must be contiguous.
Tensor *reshape(Context &ctx, Tensor *a, std::initializer_list<int64_t> ne);
// Axis i of `a` becomes axis axes[i] of the result (ggml's convention).
Tensor *permute(Context &ctx, Tensor *a, int axis0, int axis1, int axis2, int axis3);
// Swaps dims 0 and 1.
Tensor *transpose(Context &ctx, Tensor *a);

// ---------------------------------------------------------------------------------------------
// Data movement

// A contiguous copy of a (any layout).
Tensor *cont(Context &ctx, Tensor *a);
// a itself when its elements are already in order (is_contiguous: dims of one element may have any
// stride), else cont(a): for a reshape that needs no copy (a decoded token's permuted heads), no
// node.
Tensor *contiguous(Context &ctx, Tensor *a);
// A contiguous copy of a in another dtype, shape unchanged.
Tensor *cast(Context &ctx, Tensor *a, DType type);
// Copies a into b (same element count, any layouts, dtype converted); the result is a view of b.
Tensor *cpy(Context &ctx, Tensor *a, Tensor *b);
// a tiled to b's shape (every b->ne[i] a multiple of a->ne[i]).
Tensor *repeat(Context &ctx, Tensor *a, Tensor *b);
// a and b joined along dim (all other dims equal).
Tensor *concat(Context &ctx, Tensor *a, Tensor *b, int dim);
// a followed by p[i] zeros along each dim i.
Tensor *pad(Context &ctx, Tensor *a, int p0, int p1, int p2 = 0, int p3 = 0);
// Rows of a [ne0, n_rows, ne2, ne3] picked by I32 indices b [n, ne2, ne3]:
// result F32 [ne0, n, ne2, ne3] (I32 when a is I32). a may be F32, F16, BF16, I32.
Tensor *get_rows(Context &ctx, Tensor *a, Tensor *b);
// Writes rows of b F32 [ne0, n, ne2, ne3] into a [ne0, rows, ne2, ne3] at the I64 (or I32)
// indices c [n, c2, c3] (row i1 of batch (i2, i3) goes to row c[i1, i2 % c2, i3 % c3]),
// converting to a's dtype; ne2 and ne3 must be multiples of c2 and c3.
// The result is a view of a: the write happens when the node runs (the KV-cache write).
Tensor *set_rows(Context &ctx, Tensor *a, Tensor *b, Tensor *c);

// ---------------------------------------------------------------------------------------------
// Elementwise. Binary ops broadcast b over a (every a->ne[i] a multiple of b->ne[i]); the
// result has a's shape and dtype. a and the result may be F32, F16 or BF16; b F32 or a's type.

Tensor *add(Context &ctx, Tensor *a, Tensor *b);
Tensor *sub(Context &ctx, Tensor *a, Tensor *b);
Tensor *mul(Context &ctx, Tensor *a, Tensor *b);
Tensor *div(Context &ctx, Tensor *a, Tensor *b);

// a * s + bias
Tensor *scale(Context &ctx, Tensor *a, float s, float bias = 0.0f);
Tensor *clamp(Context &ctx, Tensor *a, float min, float max);
// A tensor of a's shape and dtype with every element `value`.
Tensor *fill(Context &ctx, Tensor *a, float value);
Tensor *sqrt(Context &ctx, Tensor *a);
Tensor *exp(Context &ctx, Tensor *a);
Tensor *tanh(Context &ctx, Tensor *a);
// GELU, tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
Tensor *gelu(Context &ctx, Tensor *a);
Tensor *silu(Context &ctx, Tensor *a);  // x * sigmoid(x)
Tensor *sigmoid(Context &ctx, Tensor *a);
Tensor *softplus(Context &ctx, Tensor *a);  // log(1 + e^x), x for x > 20
Tensor *relu(Context &ctx, Tensor *a);
// silu(a) * b and gelu(a) * b, a and b of one shape.
Tensor *swiglu_split(Context &ctx, Tensor *a, Tensor *b);
Tensor *geglu_split(Context &ctx, Tensor *a, Tensor *b);
// gpt-oss's clamped SwiGLU: with x = min(a, limit) and y = clamp(b, -limit, limit),
// x / (1 + exp(-alpha x)) * (y + 1).
Tensor *swiglu_oai(Context &ctx, Tensor *a, Tensor *b, float alpha, float limit);

// ---------------------------------------------------------------------------------------------
// Reductions along dim 0 (rows)

Tensor *sum_rows(Context &ctx, Tensor *a);  // F32 [1, ne1, ne2, ne3]
Tensor *mean(Context &ctx, Tensor *a);      // F32 [1, ne1, ne2, ne3]
Tensor *argmax(Context &ctx, Tensor *a);    // I32 [ne1] of a 2-d F32 a; first max wins
enum class SortOrder : int32_t { ascending, descending };
// I32 indices that sort each row of F32 a; ties keep index order (stable).
Tensor *argsort(Context &ctx, Tensor *a, SortOrder order);
// I32 [k, ne1, ne2, ne3]: indices of each row's k largest values, largest first.
Tensor *argsort_top_k(Context &ctx, Tensor *a, int k);

// ---------------------------------------------------------------------------------------------
// Matrix products

// a [K, M, A2, A3] · b [K, N, B2, B3] -> F32 [M, N, B2, B3]: dst[n][m] = dot(a row m, b row n).
// b's dims 2 and 3 must be multiples of a's; a is broadcast (b's batch i2 uses a's i2 / (B2/A2)).
// a may be F32, F16 or BF16; b F32.
//
// How each dst element sums its K products. In every order a column's result is the same
// whatever else the batch holds.
enum class SumOrder : int32_t {
    // In k order, restarted every few hundred terms (core/cpu/gemm.h): weights, where the rows
    // stream once for every column.
    k_blocks = 0,
    // The orders llama.cpp's x86 (AVX2) kernels sum a product of two activations in, for its
    // attention's probabilities bit for bit (for F32 and F16 a; other types keep k_blocks). With
    // F16 a, b is rounded to F16 first, as llama.cpp converts it. four_chains is ggml_vec_dot's:
    // four chains of 8 lanes over steps of 32 terms, fused, added (0 + 2) + (1 + 3), the 8 lanes
    // as (lo + hi) then pairs, then the terms past the last step one by one (in double for F16).
    four_chains,
    // tinyBLAS's (llamafile_sgemm): one chain of 8 lanes over steps of 8, the lanes added as the
    // pairwise tree lo + hi; K as if zero-padded to a multiple of 8 (tinyBLAS declines other
    // K, which llama.cpp's cache size never is).
    eight_lanes,
};
Tensor *mul_mat(Context &ctx, Tensor *a, Tensor *b, SumOrder order = SumOrder::k_blocks);
// Expert matrices as [K, M, n_expert]; b F32 [K, 1 or n_used, n_tokens];
// ids I32 [n_used, n_tokens] choose the expert per (slot, token). Result F32 [M, n_used, n_tokens].
Tensor *mul_mat_id(Context &ctx, Tensor *as, Tensor *b, Tensor *ids);

// ---------------------------------------------------------------------------------------------
// Normalisation and position

// (x - mean) / sqrt(var + eps) over each row (F32).
Tensor *norm(Context &ctx, Tensor *a, float eps);
// x / sqrt(mean(x^2) + eps) over each row (F32).
Tensor *rms_norm(Context &ctx, Tensor *a, float eps);

enum class RopeMode : int32_t {
    normal = 0,  // rotates adjacent pairs (x[2i], x[2i+1])
    neox = 2,    // rotates (x[i], x[i + n_dims/2]) — GPT-NeoX layout; the value is ggml's
};

// Rotary embedding with YaRN. theta for pair i at position p is p * freq_base^(-2i/n_dims),
// divided by freq_factors[i] when given, interpolated by freq_scale; ext_factor mixes in the
// extrapolated angle over the dims between the beta_fast / beta_slow corrections, and
// attn_factor scales cos and sin. Dims from n_dims on are copied unchanged.
struct RopeParams {
    int32_t n_dims = 0;
    RopeMode mode = RopeMode::normal;
    int32_t n_ctx_orig = 0;
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;
    float ext_factor = 0.0f;
    float attn_factor = 1.0f;
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
};
// a F32 [head_dim, n_head, n_tokens, ne3] (any strides; dim 3 shares the positions);
// pos I32 [n_tokens]; freq_factors F32 [>= n_dims/2] or null.
Tensor *rope_ext(Context &ctx, Tensor *a, Tensor *pos, const RopeParams &params,
                 Tensor *freq_factors = nullptr);

// Each run of n values along dim 0 (n a power of two dividing ne0) multiplied by the orthonormal
// Walsh-Hadamard matrix H_n / sqrt(n), H_n[i][j] = (-1)^popcount(i & j): a rotation that is its
// own inverse. A quantized KV cache stores K and V rotated so that an outlier is spread over
// the block before rounding, as llama.cpp does. a F32 with contiguous rows; the result is F32
// of a's shape.
Tensor *hadamard(Context &ctx, Tensor *a, int64_t n);

// ---------------------------------------------------------------------------------------------
// Attention

// softmax(a * scale + slope(head) * mask) over each row of F32 a [n_kv, n_q, n_head, ne3].
// mask F32 or F16 [n_kv, >= n_q, 1 or n_head, 1 or ne3] (broadcast over dims 2, 3) or null.
// max_bias > 0 enables ALiBi slopes per head (dim 2). sinks F32 [n_head]: an extra logit per head
// counted in the normalisation but not output.
struct SoftMaxParams {
    float scale = 1.0f;
    float max_bias = 0.0f;
};
Tensor *soft_max_ext(Context &ctx, Tensor *a, Tensor *mask, const SoftMaxParams &params,
                     Tensor *sinks = nullptr);
Tensor *soft_max(Context &ctx, Tensor *a);
// Sets a[i0, i1] = -inf where i0 > n_past + i1 (causal mask in place of a mask tensor).
Tensor *diag_mask_inf(Context &ctx, Tensor *a, int n_past);

// Fused attention with F32 accumulation and online softmax:
//   q [D, n_q, n_head, ne3], k [D, n_kv, n_head_kv, ne3], v [Dv, n_kv, n_head_kv, ne3]
//   (k, v F32, F16 or BF16, q rounded to k's dtype before the dot products as ggml does;
//   n_head a multiple of n_head_kv — grouped-query attention),
//   mask F32/F16 [n_kv, >= n_q, m2, m3] broadcast over heads and dim 3 like soft_max_ext, or null,
//   sinks F32 [n_head] or null.
// Result F32 [Dv, n_head, n_q, ne3] — heads inner, ready to be reshaped to [Dv*n_head, n_q].
// Scores are q·k * scale, then softcap * tanh(score / softcap) when logit_softcap != 0, then
// + slope(head) * mask.
struct FlashAttnParams {
    float scale = 1.0f;
    float max_bias = 0.0f;
    float logit_softcap = 0.0f;
};
Tensor *flash_attn_ext(Context &ctx, Tensor *q, Tensor *k, Tensor *v, Tensor *mask,
                       const FlashAttnParams &params, Tensor *sinks = nullptr);

// ALiBi slope of head h of n_head for max_bias (1 when max_bias is 0).
float alibi_slope(float max_bias, int64_t h, int64_t n_head);

}  // namespace loom
