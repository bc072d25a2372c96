#pragma once
// The CPU backend: runs a graph with a pool of threads that lives across runs.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loom/backend.h"
#include "loom/core.h"

namespace loom {

class CpuBackend : public Backend {
  public:
    // n_threads <= 0 means one per hardware thread. `memory`: the buffer type it calls its own;
    // null for host memory and cpu_repack_buffer_type(). Another type (new_host_buffer_type)
    // makes a second CPU backend stand in for a device in tests of the scheduler.
    explicit CpuBackend(int n_threads = 0, BufferType *memory = nullptr);
    ~CpuBackend() override;
    CpuBackend(const CpuBackend &) = delete;
    CpuBackend &operator=(const CpuBackend &) = delete;

    int n_threads() const;

    const char *name() const override { return "CPU"; }
    BufferType &default_buffer_type() override;
    bool uses_buffer_type(const BufferType &type) override;
    // True when a CPU kernel exists for this node's op, dtypes and layout.
    bool supports_op(const Tensor *node) const override;
    // Runs every node flagged to compute, in graph order. Checks first that each such node is
    // supported and has memory; throws loom::Error("[cpu] ...") otherwise, before running any.
    void graph_compute(const Graph &graph) override;

    // Called after each node is computed, on one thread while the others wait: to look at
    // intermediate results (debugging, activation statistics). Empty: none (the default).
    using EvalCallback = std::function<void(const Tensor *node)>;
    void set_eval_callback(EvalCallback callback);

    // Where graph_compute's time goes, per kind of node: the op, and for matrix products the
    // weights' type. `seconds` runs from a node's start to the barrier after it (so it includes
    // the wait for the slowest thread), `wait_seconds` is the part thread 0 spent in that
    // barrier. Off by default (it reads the clock twice per node); accumulates until taken.
    struct OpTime {
        std::string kind;
        int64_t count = 0;  // nodes
        int64_t steps = 0;  // runs of nodes computed together (Kernel::joins), or single nodes
        double seconds = 0.0, wait_seconds = 0.0;
    };
    void set_profiling(bool on);
    std::vector<OpTime> take_profile();  // the largest first; resets the totals

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Host memory for the weights of matrix products. In AVX-512 VNNI builds, Q4_0, Q8_0, Q4_K, Q6_K,
// F16 and BF16 tensors with a multiple of 16 rows are stored interleaved 16 rows at a time
// (core/cpu/repack.h), for the integer kernels and the float GEMM. set_tensor / get_tensor take and
// give the file's bytes, whole tensors only; such tensors can be read by mul_mat and mul_mat_id as
// weights and by nothing else. Other tensors are stored as given.
BufferType &cpu_repack_buffer_type();
// Whether cpu_repack_buffer_type() would store t interleaved (otherwise it holds a plain copy).
bool cpu_repacks(const Tensor *t);

// Which kernels this process runs: the instruction-set level a portable build chose at start
// (or LOOM_ISA set), or the extensions a native build was compiled for (`loom --version`).
std::string cpu_kernels_description();

}  // namespace loom
