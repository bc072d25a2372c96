// Graph allocator: planned runs equal unplanned runs bit for bit, live tensors never overlap,
// inputs and outputs survive, reuse pays off, and reserve sizes the buffer once.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "loom/alloc.h"
#include "loom/cpu.h"

namespace loom {
namespace {

// A random DAG of elementwise ops over same-shaped tensors, with views, broadcasts and several
// outputs. Built from a seed so the same graph can be made in two contexts.
struct RandomDag {
    std::vector<Tensor *> inputs;
    std::vector<Tensor *> outputs;
};

RandomDag build_random_dag(Context &ctx, Graph *graph, uint32_t seed, int n_ops) {
    std::mt19937 rng(seed);
    constexpr int64_t kCols = 24, kRows = 5;
    RandomDag dag;
    std::vector<Tensor *> pool;
    for (int i = 0; i < 3; ++i) {
        Tensor *in = set_input(ctx.new_tensor(DType::F32, {kCols, kRows}));
        set_name(in, "in" + std::to_string(i));
        dag.inputs.push_back(in);
        pool.push_back(in);
    }
    Tensor *row = set_input(ctx.new_tensor(DType::F32, {kCols, 1}));  // broadcast over rows
    dag.inputs.push_back(set_name(row, "row"));
    auto pick = [&] {
        return pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)];
    };
    for (int i = 0; i < n_ops; ++i) {
        Tensor *a = pick();
        Tensor *t = nullptr;
        switch (std::uniform_int_distribution<int>(0, 7)(rng)) {
            case 0:
                t = add(ctx, a, pick());
                break;
            case 1:
                t = mul(ctx, a, pick());
                break;
            case 2:
                t = sub(ctx, a, row);
                break;
            case 3:
                t = scale(ctx, a, 0.5f, 0.25f);
                break;
            case 4:
                t = tanh(ctx, a);
                break;
            case 5:
                t = silu(ctx, a);
                break;
            case 6:
                t = reshape(ctx, cont(ctx, transpose(ctx, a)), {kCols, kRows});
                break;
            default:
                t = add(ctx, view_2d(ctx, a, kCols, kRows, a->nb[1], 0), a);
                break;
        }
        set_name(t, "n" + std::to_string(i));
        pool.push_back(t);
        if (std::uniform_int_distribution<int>(0, 9)(rng) == 0)
            dag.outputs.push_back(set_output(t));
    }
    dag.outputs.push_back(set_output(pool.back()));
    for (Tensor *out : dag.outputs) build_forward_expand(graph, out);
    std::erase_if(dag.inputs, [&](const Tensor *t) { return !graph->contains(t); });  // unread
    return dag;
}

void fill_inputs(const RandomDag &dag) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (Tensor *in : dag.inputs) {
        auto *p = static_cast<float *>(in->data);
        for (int64_t i = 0; i < in->nelements(); ++i) p[i] = dist(rng);
    }
}

std::vector<float> read(const Tensor *t) {
    const auto *p = static_cast<const float *>(t->data);
    return {p, p + t->nelements()};
}

// Index of the last node reading t (directly or through a view of it); SIZE_MAX if an output.
std::map<const Tensor *, size_t> last_uses(const Graph &g) {
    std::map<const Tensor *, size_t> last;
    for (size_t i = 0; i < g.n_nodes; ++i) {
        const Tensor *node = g.nodes[i];
        if ((node->flags & kFlagOutput) && node->view_src != nullptr)
            last[node->view_src] = SIZE_MAX;
        for (const Tensor *s : node->src) {
            if (s == nullptr) continue;
            last[s] = std::max(last[s], i);
            if (s->view_src != nullptr) last[s->view_src] = std::max(last[s->view_src], i);
        }
    }
    return last;
}

TEST(GraphAllocator, RandomDagsMatchUnplannedRunsAndLiveTensorsNeverOverlap) {
    CpuBackend cpu(2);
    for (uint32_t seed = 1; seed <= 20; ++seed) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        // unplanned: every tensor owns its memory
        Context plain_ctx({.mem_size = 8u << 20});
        Graph *plain_graph = new_graph(plain_ctx);
        RandomDag plain = build_random_dag(plain_ctx, plain_graph, seed, 60);
        fill_inputs(plain);
        cpu.graph_compute(*plain_graph);

        Context meta({.mem_size = 1u << 20, .no_alloc = true});
        Graph *graph = new_graph(meta);
        RandomDag planned = build_random_dag(meta, graph, seed, 60);
        GraphAllocator alloc(host_buffer_type());
        alloc.allocate(*graph);
        fill_inputs(planned);
        cpu.graph_compute(*graph);

        ASSERT_EQ(plain.outputs.size(), planned.outputs.size());
        for (size_t i = 0; i < plain.outputs.size(); ++i) {
            EXPECT_EQ(read(plain.outputs[i]), read(planned.outputs[i])) << planned.outputs[i]->name;
        }
        for (size_t i = 0; i < plain.inputs.size(); ++i) {
            EXPECT_EQ(read(plain.inputs[i]), read(planned.inputs[i])) << "input overwritten";
        }
        EXPECT_LT(alloc.stats().planned_peak, alloc.stats().naive_size);

        // interval test over every pair of non-view tensors placed in the buffer
        const auto last = last_uses(*graph);
        std::vector<std::pair<const Tensor *, size_t>> placed;  // tensor, defining index
        for (const Tensor *leaf : graph->leaf_list()) placed.push_back({leaf, 0});
        for (size_t i = 0; i < graph->n_nodes; ++i) {
            if (graph->nodes[i]->view_src == nullptr) placed.push_back({graph->nodes[i], i});
        }
        auto live_until = [&](const Tensor *t) {
            if (t->flags & (kFlagOutput | kFlagInput)) return SIZE_MAX;
            auto it = last.find(t);
            return it == last.end() ? SIZE_MAX : it->second;
        };
        for (size_t x = 0; x < placed.size(); ++x) {
            for (size_t y = x + 1; y < placed.size(); ++y) {
                auto [a, a_def] = placed[x];
                auto [b, b_def] = placed[y];
                if (a_def > b_def) std::swap(a, b), std::swap(a_def, b_def);
                const bool both_live = live_until(a) >= b_def;
                const bool handed_over =
                    live_until(a) == b_def && b->src[0] == a && op_can_run_in_place(b->op);
                const auto *pa = static_cast<const std::byte *>(a->data);
                const auto *pb = static_cast<const std::byte *>(b->data);
                const bool overlap = pa < pb + b->nbytes() && pb < pa + a->nbytes();
                EXPECT_FALSE(both_live && overlap && !handed_over) << a->name << " and " << b->name;
            }
        }
    }
}

// One GPT-2 block: LayerNorm, fused QKV, causal attention, projection, GELU MLP, residuals.
Tensor *build_gpt2_layer(Context &ctx, Graph *graph, int64_t n_embd, int64_t n_head,
                         int64_t n_tokens) {
    auto weight = [&](std::initializer_list<int64_t> ne, const char *name) {
        Tensor *w = set_param(set_name(ctx.new_tensor(DType::F32, ne), name));
        return w;
    };
    const int64_t head_dim = n_embd / n_head;
    Tensor *x = set_input(set_name(ctx.new_tensor(DType::F32, {n_embd, n_tokens}), "inp"));
    Tensor *mask = set_input(set_name(ctx.new_tensor(DType::F32, {n_tokens, n_tokens}), "mask"));
    Tensor *cur = norm(ctx, x, 1e-5f);  // [n_embd, n_tokens]
    cur = add(ctx, mul(ctx, cur, weight({n_embd}, "ln1_w")), weight({n_embd}, "ln1_b"));
    cur = add(ctx, mul_mat(ctx, weight({n_embd, 3 * n_embd}, "qkv_w"), cur),
              weight({3 * n_embd}, "qkv_b"));  // [3 n_embd, n_tokens]
    auto head_view = [&](int part) {           // [hd, n_head, n_tokens]
        return view_3d(ctx, cur, head_dim, n_head, n_tokens, head_dim * 4, cur->nb[1],
                       size_t(part) * n_embd * 4);
    };
    Tensor *q = permute(ctx, head_view(0), 0, 2, 1, 3);  // [hd, n_tokens, n_head]
    Tensor *k = permute(ctx, head_view(1), 0, 2, 1, 3);
    Tensor *v = cont(ctx, permute(ctx, head_view(2), 1, 2, 0, 3));  // [n_tokens, hd, n_head]
    Tensor *kq = mul_mat(ctx, k, q);                                // [n_kv, n_tokens, n_head]
    kq = soft_max_ext(ctx, kq, mask, {.scale = 1.0f / std::sqrt(float(head_dim))});
    Tensor *kqv = mul_mat(ctx, v, kq);               // [hd, n_tokens, n_head]
    cur = cont(ctx, permute(ctx, kqv, 0, 2, 1, 3));  // [hd, n_head, n_tokens]
    cur = reshape(ctx, cur, {n_embd, n_tokens});
    cur =
        add(ctx, mul_mat(ctx, weight({n_embd, n_embd}, "proj_w"), cur), weight({n_embd}, "proj_b"));
    Tensor *resid = add(ctx, cur, x);
    cur = norm(ctx, resid, 1e-5f);
    cur = add(ctx, mul(ctx, cur, weight({n_embd}, "ln2_w")), weight({n_embd}, "ln2_b"));
    cur = gelu(ctx, add(ctx, mul_mat(ctx, weight({n_embd, 4 * n_embd}, "fc_w"), cur),
                        weight({4 * n_embd}, "fc_b")));
    cur = add(ctx, mul_mat(ctx, weight({4 * n_embd, n_embd}, "fc2_w"), cur),
              weight({n_embd}, "fc2_b"));
    Tensor *out = set_output(set_name(add(ctx, cur, resid), "out"));
    build_forward_expand(graph, out);
    return out;
}

TEST(GraphAllocator, Gpt2LayerPeakIsUnder40PercentOfNaiveAndMatchesUnplannedRun) {
    constexpr int64_t kEmbd = 64, kHead = 4, kTokens = 16;
    Context meta({.mem_size = 1u << 20, .no_alloc = true});
    Graph *graph = new_graph(meta);
    Tensor *out = build_gpt2_layer(meta, graph, kEmbd, kHead, kTokens);
    // weights live in their own buffer, as a model's would
    std::vector<std::unique_ptr<Buffer>> weights;
    std::mt19937 rng(3);
    std::normal_distribution<float> dist(0.0f, 0.2f);
    for (Tensor *leaf : graph->leaf_list()) {
        weights.push_back(host_buffer_type().allocate(leaf->nbytes()));
        leaf->data = weights.back()->base();
        auto *p = static_cast<float *>(leaf->data);
        for (int64_t i = 0; i < leaf->nelements(); ++i) p[i] = dist(rng);
        if (std::string_view(leaf->name) == "mask") {
            for (int64_t i = 0; i < kTokens; ++i)
                for (int64_t j = 0; j < kTokens; ++j)
                    p[i * kTokens + j] = j <= i ? 0.0f : -INFINITY;
        }
    }
    GraphAllocator alloc(host_buffer_type());
    alloc.allocate(*graph);
    const AllocStats &s = alloc.stats();
    EXPECT_LE(double(s.planned_peak), 0.40 * double(s.naive_size))
        << "peak " << s.planned_peak << " naive " << s.naive_size;
    EXPECT_GT(s.n_in_place, 0u);
    CpuBackend cpu(2);
    cpu.graph_compute(*graph);
    const std::vector<float> planned = read(out);

    // the same graph with every intermediate in its own memory
    Context plain({.mem_size = 8u << 20});
    for (Tensor *node : graph->node_list()) {
        if (node->view_src != nullptr) continue;
        node->data = plain.allocate(node->nbytes(), 64, "test");
    }
    for (Tensor *node : graph->node_list()) {
        if (node->view_src != nullptr)
            node->data = static_cast<std::byte *>(node->view_src->data) + node->view_offs;
    }
    cpu.graph_compute(*graph);
    EXPECT_EQ(planned, read(out));
}

TEST(GraphAllocator, ReserveThenSmallerGraphDoesNotGrow) {
    GraphAllocator alloc(host_buffer_type());
    auto make = [](Context &meta, int64_t n_tokens) {
        Graph *g = new_graph(meta);
        build_gpt2_layer(meta, g, 64, 4, n_tokens);
        for (Tensor *leaf : g->leaf_list()) leaf->flags |= kFlagInput;
        return g;
    };
    Context big_meta({.mem_size = 1u << 20, .no_alloc = true});
    alloc.reserve(*make(big_meta, 32));
    const size_t reserved = alloc.buffer_size();
    EXPECT_GT(reserved, 0u);
    for (int64_t n : {32, 8, 1, 17}) {
        Context meta({.mem_size = 1u << 20, .no_alloc = true});
        alloc.allocate(*make(meta, n));
        EXPECT_EQ(alloc.buffer_size(), reserved) << n << " tokens";
    }
    EXPECT_EQ(alloc.n_grows(), 0);
    Context bigger({.mem_size = 1u << 20, .no_alloc = true});
    alloc.allocate(*make(bigger, 64));
    EXPECT_EQ(alloc.n_grows(), 1);
    EXPECT_GT(alloc.buffer_size(), reserved);
}

TEST(GraphAllocator, InPlaceOnlyWhenTheSourceHasNoOtherReader) {
    Context meta({.mem_size = 1u << 20, .no_alloc = true});
    Tensor *in = set_input(meta.new_tensor(DType::F32, {16, 4}));
    Tensor *a = exp(meta, in);
    Tensor *b = tanh(meta, a);    // a has a second reader below: b must not take a's memory
    Tensor *c = add(meta, b, a);  // b has one reader: c may take b's memory
    Tensor *d = silu(meta, c);    // c has one reader: in place
    set_output(d);
    Graph *g = new_graph(meta);
    build_forward_expand(g, d);
    GraphAllocator alloc(host_buffer_type());
    alloc.allocate(*g);
    EXPECT_NE(a->data, b->data);
    EXPECT_EQ(b->data, c->data);
    EXPECT_EQ(c->data, d->data);
    auto *p = static_cast<float *>(in->data);
    for (int i = 0; i < 64; ++i) p[i] = 0.01f * float(i);
    CpuBackend(1).graph_compute(*g);
    const auto *out = static_cast<const float *>(d->data);
    for (int i = 0; i < 64; ++i) {
        const float ea = std::exp(0.01f * float(i));
        const float sum = std::tanh(ea) + ea;
        EXPECT_NEAR(out[i], sum / (1.0f + std::exp(-sum)), 1e-5f) << i;
    }
}

TEST(GraphAllocator, GraphBeyondTheBufferTypeLimitNamesTheNode) {
    class TinyType : public BufferType {
      public:
        const char *name() const override { return "tiny"; }
        std::unique_ptr<Buffer> allocate(size_t size) override {
            return host_buffer_type().allocate(size);
        }
        size_t alignment() const override { return 64; }
        size_t max_size() const override { return 4096; }
        bool is_host() const override { return true; }
    } tiny;
    Context meta({.mem_size = 1u << 20, .no_alloc = true});
    Tensor *in = set_name(set_input(meta.new_tensor(DType::F32, {256, 2})), "small");
    Tensor *big = set_name(repeat(meta, in, meta.new_tensor(DType::F32, {256, 64})), "too_big");
    Graph *g = new_graph(meta);
    build_forward_expand(g, big);
    GraphAllocator alloc(tiny);
    try {
        alloc.allocate(*g);
        FAIL() << "expected loom::Error";
    } catch (const Error &e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("[alloc]"), std::string::npos) << msg;
        EXPECT_NE(msg.find("too_big"), std::string::npos) << msg;
        EXPECT_NE(msg.find("4096"), std::string::npos) << msg;
    }
}

}  // namespace
}  // namespace loom
