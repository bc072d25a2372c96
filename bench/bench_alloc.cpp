// Planning cost of the graph allocator on large graphs (the target: a 5,000-node graph
// plans in under 1 ms).
#include <benchmark/benchmark.h>

#include <vector>

#include "loom/alloc.h"

namespace loom {
namespace {

// A chain of transformer-like layers: each layer reads the residual stream and a few
// intermediates, so lifetimes overlap the way a real model's do.
Graph *build_layers(Context &meta, int64_t n_nodes) {
    Graph *graph = new_graph(meta, size_t(n_nodes) + 64);
    Tensor *x = set_input(meta.new_tensor(DType::F32, {512, 32}));
    Tensor *w = meta.new_tensor(DType::F32, {512, 512});
    w->data =
        reinterpret_cast<void *>(uintptr_t(4096));  // a weight: memory of its own, never touched
    while (graph->n_nodes + 8 < size_t(n_nodes)) {
        Tensor *h = rms_norm(meta, x, 1e-5f);
        Tensor *a = mul_mat(meta, w, h);
        Tensor *b = silu(meta, mul_mat(meta, w, h));
        Tensor *c = mul(meta, a, b);
        Tensor *d = mul_mat(meta, w, c);
        x = add(meta, x, scale(meta, d, 0.5f));
        build_forward_expand(graph, x);
    }
    set_output(x);
    return graph;
}

void BM_PlanGraph(benchmark::State &state) {
    Context meta({.mem_size = 64u << 20, .no_alloc = true});
    Graph *graph = build_layers(meta, state.range(0));
    GraphAllocator alloc(host_buffer_type());
    alloc.reserve(*graph);
    for (auto _ : state) alloc.reserve(*graph);
    state.counters["nodes"] = double(graph->n_nodes);
    state.counters["peak_MiB"] = double(alloc.stats().planned_peak) / (1 << 20);
    state.counters["naive_MiB"] = double(alloc.stats().naive_size) / (1 << 20);
}
BENCHMARK(BM_PlanGraph)->Arg(1000)->Arg(5000)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace loom
