// CpuBackend: validates a graph, sizes the scratch buffer and runs every node on all threads
// with a barrier between steps: single nodes, or runs of adjacent nodes one kernel computes
// together (Kernel::joins).
#include <algorithm>
#include <chrono>
#include <map>
#include <vector>

#include "core/cpu/kernels.h"
#include "core/cpu/repack.h"
#include "core/cpu/team_size.h"
#include "core/cpu/threadpool.h"
#include "loom/cpu.h"

namespace loom {

using cpu::Kernel;
using cpu::KernelTable;

namespace cpu {

void ComputeParams::barrier() const {
    pool->barrier();
}

const float *load_row(DType type, const void *p, size_t stride, int64_t n, float *buf) {
    const DTypeTraits &tr = traits(type);
    if (stride == tr.type_size) {
        if (type == DType::F32) return static_cast<const float *>(p);
        tr.to_float(p, buf, n);
        return buf;
    }
    const auto *bytes = static_cast<const std::byte *>(p);
    for (int64_t i = 0; i < n; ++i) tr.to_float(bytes + size_t(i) * stride, buf + i, 1);
    return buf;
}

void store_row(DType type, const float *src, void *p, size_t stride, int64_t n) {
    const DTypeTraits &tr = traits(type);
    if (stride == tr.type_size) {
        tr.from_float_in_ops(src, p, n);
        return;
    }
    auto *bytes = static_cast<std::byte *>(p);
    for (int64_t i = 0; i < n; ++i) tr.from_float_in_ops(src + i, bytes + size_t(i) * stride, 1);
}

}  // namespace cpu

namespace {

constexpr size_t kScratchAlign = 64;

// Repacked weights (core/cpu/repack.h) are readable only as the weights of a matrix product.
bool reads_repacked_bytes(const Tensor *node) {
    const bool matmul = node->op == Op::mul_mat || node->op == Op::mul_mat_id;
    for (size_t i = 0; i < std::size(node->src); ++i) {
        const Tensor *s = node->src[i];
        if (s == nullptr) continue;
        if (s->view_src != nullptr && cpu::is_repacked(s->view_src)) return true;
        if (cpu::is_repacked(s) && !(matmul && i == 0)) return true;
    }
    return false;
}

bool has_kernel(const Tensor *node) {
    if (reads_repacked_bytes(node)) return false;
    const Kernel &k = cpu::kernel_table()[size_t(node->op)];
    return (k.compute != nullptr || is_view_op(node->op)) &&
           (k.supports == nullptr || k.supports(node));
}

// The profile's key for a node: matrix products are told apart by their weights' type.
std::string profile_kind(const Tensor *node) {
    std::string kind = op_name(node->op);
    if ((node->op == Op::mul_mat || node->op == Op::mul_mat_id) && node->src[0] != nullptr) {
        kind += ' ';
        kind += dtype_name(node->src[0]->type);
    }
    return kind;
}

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
}

// The graph's computing nodes in order, as steps of one node or of a run of consecutive nodes
// whose kernel computes them together (Kernel::joins).
std::vector<std::span<Tensor *const>> plan_steps(const Graph &graph, const KernelTable &table) {
    std::vector<Tensor *const *> nodes;
    for (Tensor *const &node : graph.node_list()) {
        if ((node->flags & kFlagCompute) && table[size_t(node->op)].compute != nullptr) {
            nodes.push_back(&node);
        }
    }
    std::vector<std::span<Tensor *const>> steps;
    for (size_t i = 0; i < nodes.size();) {
        const Kernel &k = table[size_t((*nodes[i])->op)];
        size_t j = i + 1;
        if (k.joins != nullptr) {
            while (j < nodes.size() && nodes[j] == nodes[j - 1] + 1 &&
                   (*nodes[j])->op == (*nodes[i])->op && k.joins(*nodes[i], *nodes[j])) {
                ++j;
            }
        }
        steps.emplace_back(nodes[i], j - i);
        i = j;
    }
    return steps;
}

}  // namespace

struct CpuBackend::Impl {
    Impl(int n, BufferType *memory) : pool(n), team(n), memory(memory) {}
    cpu::ThreadPool pool;
    cpu::TeamSize team;  // how many of the pool's threads the next graph uses
    BufferType *memory;  // null: host memory and the repacked weights
    std::vector<std::byte> scratch;
    EvalCallback eval_callback;
    bool profiling = false;
    std::map<std::string, OpTime> profile;
};

CpuBackend::CpuBackend(int n_threads, BufferType *memory)
    : impl_(std::make_unique<Impl>(
          n_threads > 0 ? n_threads : int(std::max(1u, std::thread::hardware_concurrency())),
          memory)) {}

BufferType &CpuBackend::default_buffer_type() {
    return impl_->memory != nullptr ? *impl_->memory : host_buffer_type();
}

bool CpuBackend::uses_buffer_type(const BufferType &type) {
    if (impl_->memory != nullptr) return &type == impl_->memory;
    return &type == &host_buffer_type() || &type == &cpu_repack_buffer_type();
}

CpuBackend::~CpuBackend() = default;

int CpuBackend::n_threads() const {
    return impl_->pool.size();
}

// The CPU backend announces itself to the registry when this file is linked in, which any
// program that can run a graph does.
const bool kRegistered = [] {
    register_backend({.name = "CPU",
                      .description = "multi-threaded SIMD kernels on this machine's cores",
                      .create = [](int n_threads) -> std::unique_ptr<Backend> {
                          return std::make_unique<CpuBackend>(n_threads);
                      }});
    return true;
}();

bool CpuBackend::supports_op(const Tensor *node) const {
    return has_kernel(node);
}

void CpuBackend::graph_compute(const Graph &graph) {
    const KernelTable &table = cpu::kernel_table();
    size_t per_thread = 0, shared = 0;
    for (const Tensor *node : graph.node_list()) {
        if (!(node->flags & kFlagCompute)) continue;
        if (!has_kernel(node))
            fail("cpu", "no kernel for {} {}", op_name(node->op), describe(node));
        if (node->data == nullptr && node->nelements() > 0) {
            fail("cpu", "{} {} has no memory", op_name(node->op), describe(node));
        }
        for (const Tensor *s : node->src) {
            if (s != nullptr && s->data == nullptr && s->nelements() > 0) {
                fail("cpu", "{} reads {} which has no memory", describe(node), describe(s));
            }
        }
        const Kernel &k = table[size_t(node->op)];
        if (k.work_size != nullptr) per_thread = std::max(per_thread, k.work_size(node));
        if (k.shared_size != nullptr) shared = std::max(shared, k.shared_size(node));
    }
    per_thread = (per_thread + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
    shared = (shared + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
    const int nth = impl_->pool.size();
    auto &scratch = impl_->scratch;
    const size_t total = per_thread * size_t(nth) + shared + kScratchAlign;
    if (scratch.size() < total) scratch.resize(total);
    auto *base = reinterpret_cast<std::byte *>(
        (reinterpret_cast<uintptr_t>(scratch.data()) + kScratchAlign - 1) / kScratchAlign *
        kScratchAlign);

    const std::vector<std::span<Tensor *const>> steps = plan_steps(graph, table);
    const auto start = cpu::TeamSize::Clock::now();
    const int used = impl_->team.next(start);
    const double slept = impl_->pool.run(used, [&](int ith, int n_used) {
        const cpu::ComputeParams params{.ith = ith,
                                        .nth = n_used,
                                        .work = base + per_thread * size_t(ith),
                                        .work_size = per_thread,
                                        .shared = base + per_thread * size_t(nth),
                                        .pool = &impl_->pool};
        for (const std::span<Tensor *const> step : steps) {
            const Kernel &k = table[size_t(step[0]->op)];
            auto compute = [&] {
                if (step.size() == 1) {
                    k.compute(params, step[0]);
                } else {
                    k.compute_run(params, step);
                }
            };
            if (impl_->profiling && ith == 0) {
                const auto start = Clock::now();
                compute();
                const auto computed = Clock::now();
                params.barrier();
                OpTime &t = impl_->profile[profile_kind(step[0])];
                t.count += int64_t(step.size());
                ++t.steps;
                t.seconds += seconds_between(start, Clock::now());
                t.wait_seconds += seconds_between(computed, Clock::now());
            } else {
                compute();
                params.barrier();
            }
            if (impl_->eval_callback) {
                if (ith == 0) {
                    for (Tensor *node : step) impl_->eval_callback(node);
                }
                impl_->pool.barrier(cpu::ThreadPool::Wait::kSerial);
            }
        }
    });
    const auto end = cpu::TeamSize::Clock::now();
    const double wall = std::chrono::duration<double>(end - start).count();
    impl_->team.report(used, wall, slept, end);
}

void CpuBackend::set_eval_callback(EvalCallback callback) {
    impl_->eval_callback = std::move(callback);
}

void CpuBackend::set_profiling(bool on) {
    impl_->profiling = on;
}

std::vector<CpuBackend::OpTime> CpuBackend::take_profile() {
    std::vector<OpTime> out;
    for (auto &[kind, t] : impl_->profile) {
        t.kind = kind;
        out.push_back(t);
    }
    impl_->profile.clear();
    std::sort(out.begin(), out.end(),
              [](const OpTime &a, const OpTime &b) { return a.seconds > b.seconds; });
    return out;
}

}  // namespace loom
