#pragma once
// The scheduler: runs one graph over several backends. It assigns every node a backend, cuts
// the node list into per-backend splits, copies each split's inputs that live in another
// backend's memory, plans all memory with one graph allocator (a buffer per backend), and runs
// the splits in order.
#include <memory>
#include <unordered_map>
#include <vector>

#include "loom/alloc.h"
#include "loom/backend.h"

namespace loom {

struct SchedStats {
    size_t n_splits = 0;      // runs of consecutive nodes on one backend (last allocate)
    size_t n_copies = 0;      // split inputs copied between backends (last allocate)
    size_t copied_bytes = 0;  // bytes those copies moved (last compute)
};

class Scheduler {
  public:
    // Backends in priority order: a node goes to the first that supports it unless pinned or
    // drawn elsewhere by its weights or its neighbours.
    explicit Scheduler(std::vector<Backend *> backends);
    ~Scheduler();
    Scheduler(const Scheduler &) = delete;
    Scheduler &operator=(const Scheduler &) = delete;

    // Pins a node to a backend (e.g. attention kept on the CPU); applies to later allocate()s.
    void set_tensor_backend(const Tensor *node, Backend &backend);
    Backend *tensor_backend(const Tensor *node) const;

    // Assigns backends, splits the graph, adds the copies and allocates every tensor without
    // memory. Throws loom::Error naming a node no backend supports. Inputs can be filled after.
    void allocate(Graph &graph);
    // Runs the graph last passed to allocate(): for each split, copies its inputs, then runs it.
    void compute(Graph &graph);

    const SchedStats &stats() const { return stats_; }
    const GraphAllocator &allocator() const { return *allocator_; }

  private:
    struct Split;
    int backend_index(const Backend *b) const;
    void assign_backends(const Graph &graph);
    int memory_backend(const Tensor *t) const;
    void build_splits(Graph &graph);

    std::vector<Backend *> backends_;
    std::unordered_map<const Tensor *, int> pinned_;
    std::unordered_map<const Tensor *, int> assigned_;  // node or input leaf -> backend index
    std::vector<Split> splits_;
    std::unique_ptr<Context> meta_;  // copy tensors and split graphs of the last allocate()
    std::unique_ptr<GraphAllocator> allocator_;
    const Graph *graph_ = nullptr;
    SchedStats stats_;
};

}  // namespace loom
