#pragma once
// The CPU backend: runs a graph with a pool of threads that lives across runs.
#include <memory>

#include "loom/core.h"

namespace loom {

class CpuBackend {
  public:
    // n_threads <= 0 means one per hardware thread.
    explicit CpuBackend(int n_threads = 0);
    ~CpuBackend();
    CpuBackend(const CpuBackend &) = delete;
    CpuBackend &operator=(const CpuBackend &) = delete;

    int n_threads() const;

    // True when a CPU kernel exists for this node's op, dtypes and layout.
    static bool supports(const Tensor *node);

    // Runs every node flagged to compute, in graph order. Checks first that each such node is
    // supported and has memory; throws loom::Error("[cpu] ...") otherwise, before running any.
    void compute(const Graph &graph);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace loom
