// `loom demo`: until the engine exists, shows the library end to end — a single-head causal
// attention block built lazily as a graph, then computed on the CPU backend, both ways
// (naive mul_mat + soft_max and fused flash attention), with their agreement printed.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>

#include "loom/core.h"
#include "loom/cpu.h"
#include "tools/loom/commands.h"

namespace loom::tools {
namespace {

void fill_random(Tensor *t, std::mt19937 &rng) {
    std::normal_distribution<float> dist(0.0f, 1.0f);
    auto *p = static_cast<float *>(t->data);
    for (int64_t i = 0; i < t->nelements(); ++i) p[i] = dist(rng);
}

int run_demo(int n_threads);

}  // namespace

void add_demo_command(CLI::App &app, int &exit_code) {
    CLI::App *demo =
        app.add_subcommand("demo", "build and compute a small graph (attention block), print it");
    auto n_threads = std::make_shared<int>(0);
    demo->add_option("-t,--threads", *n_threads, "CPU threads (0: one per core)");
    demo->callback([n_threads, &exit_code] { exit_code = run_demo(*n_threads); });
}

namespace {

int run_demo(int n_threads) {
    constexpr int64_t kHeadDim = 64, kTokens = 8, kHeads = 4;
    Context ctx({.mem_size = 64u << 20});
    std::mt19937 rng(42);

    // F32 [head_dim, n_tokens, n_head]
    Tensor *q = set_name(ctx.new_tensor(DType::F32, {kHeadDim, kTokens, kHeads}), "q");
    Tensor *k = set_name(ctx.new_tensor(DType::F32, {kHeadDim, kTokens, kHeads}), "k");
    Tensor *v = set_name(ctx.new_tensor(DType::F32, {kHeadDim, kTokens, kHeads}), "v");
    for (Tensor *t : {q, k, v}) fill_random(t, rng);
    // causal mask F32 [n_kv, n_tokens]: 0 where key <= query, -inf after
    Tensor *mask = set_name(ctx.new_tensor(DType::F32, {kTokens, kTokens}), "kq_mask");
    for (int64_t i = 0; i < kTokens; ++i) {
        for (int64_t j = 0; j < kTokens; ++j) {
            static_cast<float *>(mask->data)[i * kTokens + j] = j <= i ? 0.0f : -INFINITY;
        }
    }
    const float scale = 1.0f / std::sqrt(float(kHeadDim));

    Graph *graph = new_graph(ctx);
    // naive: softmax(K^T Q * scale + mask) then V
    Tensor *kq = set_name(mul_mat(ctx, k, q), "kq");  // F32 [n_kv, n_tokens, n_head]
    kq = set_name(soft_max_ext(ctx, kq, mask, {.scale = scale}), "kq_soft_max");
    Tensor *v_t = cont(ctx, transpose(ctx, v));            // F32 [n_kv, head_dim, n_head]
    Tensor *kqv = set_name(mul_mat(ctx, v_t, kq), "kqv");  // F32 [head_dim, n_tokens, n_head]
    Tensor *naive =
        set_name(cont(ctx, permute(ctx, kqv, 0, 2, 1, 3)), "naive_out");  // [hd, n_head, n_tok]
    // fused
    Tensor *fused = set_name(flash_attn_ext(ctx, q, k, v, mask, {.scale = scale}), "flash_out");
    build_forward_expand(graph, naive);
    build_forward_expand(graph, fused);

    CpuBackend cpu(n_threads);
    cpu.graph_compute(*graph);

    std::printf("graph: %zu nodes, %zu leafs, computed on %d thread(s)\n", graph->n_nodes,
                graph->n_leafs, cpu.n_threads());
    for (const Tensor *node : graph->node_list()) {
        std::printf("  %-16s %-14s %s\n", node->name[0] ? node->name : "-", op_name(node->op),
                    describe(node).c_str());
    }
    double err = 0.0, ref = 0.0;
    const auto *a = static_cast<const float *>(naive->data);
    const auto *b = static_cast<const float *>(fused->data);
    for (int64_t i = 0; i < naive->nelements(); ++i) {
        err += double(a[i] - b[i]) * (a[i] - b[i]);
        ref += double(a[i]) * a[i];
    }
    std::printf("attention output, token 0, head 0: [");
    for (int i = 0; i < 6; ++i) std::printf("%s%.4f", i ? ", " : "", a[i]);
    std::printf(", ...]\n");
    std::printf("naive vs flash attention: normalised mean squared error %.3g\n", err / ref);
    return 0;
}

}  // namespace
}  // namespace loom::tools
