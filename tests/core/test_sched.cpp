// Scheduler: one graph over two backends gives the same bits as over one, with the splits and
// copies the assignment implies; pinned nodes stay where pinned.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>
#include <vector>

#include "loom/cpu.h"
#include "loom/sched.h"

namespace loom {
namespace {

// A CPU backend standing in for a device: its own memory type (so tensors in it count as
// living elsewhere) and a set of ops it refuses.
class StandInDevice : public Backend {
  public:
    explicit StandInDevice(std::set<Op> refused) : refused_(std::move(refused)) {}
    const char *name() const override { return "DEV"; }
    BufferType &default_buffer_type() override { return *memory_; }
    bool supports_op(const Tensor *node) const override {
        return !refused_.contains(node->op) && cpu_.supports_op(node);
    }
    void graph_compute(const Graph &graph) override {
        for (const Tensor *node : graph.node_list()) {
            EXPECT_FALSE(refused_.contains(node->op)) << "ran a refused op: " << op_name(node->op);
        }
        cpu_.graph_compute(graph);
    }

  private:
    std::set<Op> refused_;
    std::unique_ptr<BufferType> memory_ = new_host_buffer_type("DEV");
    CpuBackend cpu_{1};
};

struct Net {
    Tensor *x, *w1, *w2, *out, *soft;
};

// x -> mul_mat(w1) -> silu -> mul_mat(w2) -> soft_max -> add(x-derived) ; weights in host memory
Net build_net(Context &meta, Graph *graph) {
    Net n;
    n.x = set_name(set_input(meta.new_tensor(DType::F32, {32, 6})), "x");
    n.w1 = set_name(meta.new_tensor(DType::F32, {32, 48}), "w1");
    n.w2 = set_name(meta.new_tensor(DType::F32, {48, 32}), "w2");
    Tensor *h = set_name(silu(meta, mul_mat(meta, n.w1, n.x)), "h");  // [48, 6]
    Tensor *y = set_name(mul_mat(meta, n.w2, h), "y");                // [32, 6]
    n.soft = set_name(soft_max_ext(meta, y, nullptr, {.scale = 0.5f}), "soft");
    n.out = set_name(set_output(add(meta, mul(meta, n.soft, n.x), tanh(meta, n.x))), "out");
    build_forward_expand(graph, n.out);
    return n;
}

struct Weights {
    std::unique_ptr<Buffer> buffer;
};

Weights load_weights(const Net &n, BufferType &memory) {
    Weights w{memory.allocate(n.w1->nbytes() + n.w2->nbytes())};
    std::mt19937 rng(5);
    std::normal_distribution<float> dist(0.0f, 0.3f);
    size_t offset = 0;
    for (Tensor *t : {n.w1, n.w2}) {
        t->data = static_cast<std::byte *>(w.buffer->base()) + offset;
        t->buffer = w.buffer.get();
        offset += t->nbytes();
        auto *p = static_cast<float *>(t->data);
        for (int64_t i = 0; i < t->nelements(); ++i) p[i] = dist(rng);
    }
    return w;
}

struct RunOptions {
    BufferType *weight_memory = &host_buffer_type();
    const char *pin = nullptr;  // name of a node to pin
    Backend *pin_to = nullptr;
    Backend *device = nullptr;  // collect the nodes assigned to it
    std::set<std::string> *on_device = nullptr;
};

std::vector<float> run(Scheduler &sched, const RunOptions &opt = {}) {
    Context meta({.mem_size = 1u << 20, .no_alloc = true});
    Graph *graph = new_graph(meta);
    Net n = build_net(meta, graph);
    Weights w = load_weights(n, *opt.weight_memory);
    if (opt.pin != nullptr) sched.set_tensor_backend(graph->find(opt.pin), *opt.pin_to);
    sched.allocate(*graph);
    auto *x = static_cast<float *>(n.x->data);
    for (int64_t i = 0; i < n.x->nelements(); ++i) x[i] = std::sin(0.1f * float(i));
    sched.compute(*graph);
    if (opt.on_device != nullptr) {
        for (const Tensor *node : graph->node_list()) {
            if (sched.tensor_backend(node) == opt.device) opt.on_device->insert(node->name);
        }
    }
    const auto *o = static_cast<const float *>(n.out->data);
    return {o, o + n.out->nelements()};
}

TEST(Scheduler, OneBackendIsOneSplitWithoutCopies) {
    CpuBackend cpu(2);
    Scheduler sched({&cpu});
    const std::vector<float> out = run(sched);
    EXPECT_EQ(sched.stats().n_splits, 1u);
    EXPECT_EQ(sched.stats().n_copies, 0u);
    EXPECT_EQ(sched.stats().copied_bytes, 0u);
    for (float v : out) EXPECT_TRUE(std::isfinite(v));
}

TEST(Scheduler, TwoBackendsGiveIdenticalBitsWithTheExpectedSplits) {
    CpuBackend cpu_only(1);
    Scheduler reference({&cpu_only});
    const std::vector<float> expected = run(reference);

    // Weights live on the device, which refuses soft_max: the matrix products run there (drawn
    // by their weights), soft_max on the CPU, and the ops after it go back to the device
    // (drawn by their neighbours).
    StandInDevice device({Op::soft_max});
    CpuBackend cpu(1);
    Scheduler sched({&device, &cpu});
    std::set<std::string> on_device;
    const std::vector<float> got = run(sched, {.weight_memory = &device.default_buffer_type(),
                                               .device = &device,
                                               .on_device = &on_device});
    EXPECT_EQ(got, expected);
    EXPECT_EQ(sched.stats().n_splits, 3u);
    // y goes to the CPU for soft_max, soft comes back to the device; x (an input) lives on the
    // device with its first reader
    EXPECT_EQ(sched.stats().n_copies, 2u);
    EXPECT_EQ(sched.stats().copied_bytes, 2 * 32 * 6 * sizeof(float));
    EXPECT_FALSE(on_device.contains("soft"));
    EXPECT_TRUE(on_device.contains("h"));
    EXPECT_TRUE(on_device.contains("out"));
}

TEST(Scheduler, PinnedNodeLandsWherePinned) {
    CpuBackend cpu_only(1);
    Scheduler reference({&cpu_only});
    const std::vector<float> expected = run(reference);

    StandInDevice device({});
    CpuBackend cpu(1);
    Scheduler sched({&device, &cpu});
    std::set<std::string> on_device;
    const std::vector<float> got = run(sched, {.weight_memory = &device.default_buffer_type(),
                                               .pin = "h",
                                               .pin_to = &cpu,
                                               .device = &device,
                                               .on_device = &on_device});
    EXPECT_FALSE(on_device.contains("h"));
    EXPECT_TRUE(on_device.contains("y"));
    EXPECT_EQ(sched.stats().n_splits, 3u);
    EXPECT_EQ(got, expected);
}

TEST(Scheduler, WeightsInTheCpusRepackedMemoryDrawTheirProductsToTheCpu) {
    StandInDevice device({});
    CpuBackend cpu(1);
    Scheduler sched({&device, &cpu});  // the device first: it takes what nothing draws away
    std::set<std::string> on_device;
    run(sched,
        {.weight_memory = &cpu_repack_buffer_type(), .device = &device, .on_device = &on_device});
    EXPECT_FALSE(on_device.contains("h"));
    EXPECT_FALSE(on_device.contains("y"));
}

// A cpy into a tensor in the device's memory (a KV cache there) runs on the device, even where
// its neighbours run on the CPU: elsewhere it would write into a copy of its destination.
TEST(Scheduler, WriteIntoMemoryRunsWhereTheMemoryIs) {
    StandInDevice device({});
    CpuBackend cpu(1);
    Scheduler sched({&cpu, &device});  // the CPU first: nothing else draws nodes to the device
    Context meta({.mem_size = 1u << 20, .no_alloc = true});
    Graph *graph = new_graph(meta);
    Tensor *cache = set_name(meta.new_tensor(DType::F32, {8, 4}), "cache");
    std::unique_ptr<Buffer> memory = place_tensors(device.default_buffer_type(), {&cache, 1});
    memory->clear(0);
    Tensor *x = set_input(meta.new_tensor(DType::F32, {8}));
    Tensor *row = view_1d(meta, cache, 8, 2 * cache->nb[1]);
    Tensor *store = set_name(cpy(meta, tanh(meta, x), row), "store");
    build_forward_expand(graph, store);
    sched.allocate(*graph);
    EXPECT_EQ(sched.tensor_backend(store), &device);
    auto *xs = static_cast<float *>(x->data);
    for (int i = 0; i < 8; ++i) xs[i] = 0.25f * float(i);
    sched.compute(*graph);
    const auto *c = static_cast<const float *>(cache->data);
    for (int i = 0; i < 8; ++i) EXPECT_EQ(c[16 + i], std::tanh(0.25f * float(i))) << i;
    EXPECT_EQ(c[0], 0.0f);
}

TEST(Scheduler, NodeNoBackendSupportsIsAnErrorNamingIt) {
    StandInDevice device({Op::tanh});
    Scheduler sched({&device});
    Context meta({.mem_size = 1u << 20, .no_alloc = true});
    Graph *graph = new_graph(meta);
    build_net(meta, graph);
    try {
        sched.allocate(*graph);
        FAIL() << "expected loom::Error";
    } catch (const Error &e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("[sched]"), std::string::npos) << msg;
        EXPECT_NE(msg.find("tanh"), std::string::npos) << msg;
    }
}

}  // namespace
}  // namespace loom
