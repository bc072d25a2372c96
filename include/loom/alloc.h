#pragma once
// The graph allocator: plans where every intermediate of a graph lives inside one buffer,
// reusing the memory of tensors whose last reader has run.
#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

#include "loom/backend.h"
#include "loom/core.h"

namespace loom {

struct AllocStats {
    size_t planned_peak = 0;  // bytes the plan needs at its high-water mark
    size_t naive_size = 0;    // bytes if every tensor had its own memory
    size_t n_tensors = 0;     // tensors placed by the plan (views excluded)
    size_t n_in_place = 0;    // results that took over their source's memory
};

// Which of the allocator's buffers (an index into its buffer types) a tensor's memory goes in.
using BufferChooser = std::function<size_t(const Tensor *)>;

class GraphAllocator {
  public:
    explicit GraphAllocator(BufferType &type);
    // One buffer per type; a BufferChooser passed to reserve / allocate picks each tensor's.
    explicit GraphAllocator(std::vector<BufferType *> types);
    ~GraphAllocator();
    GraphAllocator(const GraphAllocator &) = delete;
    GraphAllocator &operator=(const GraphAllocator &) = delete;

    // Plans `graph` and sizes the buffers for it, so later graphs of the same or smaller shapes
    // allocate without growing them. Sets no data pointers.
    void reserve(const Graph &graph, const BufferChooser &choose = {});

    // Plans `graph`, grows a buffer if the plan needs more (counted in n_grows()), and points
    // every tensor without memory (and every view of one) into the buffers.
    //   - inputs (kFlagInput) and outputs (kFlagOutput) get memory no other tensor shares;
    //   - tensors that already have memory elsewhere (weights, KV cache) are left alone;
    //   - an intermediate's memory is reused once its last reader (and its views' readers) ran;
    //   - an in-place op (op.def) takes over src[0]'s memory when nothing else reads it.
    void allocate(Graph &graph, const BufferChooser &choose = {});

    // Totals over all buffers of the last plan.
    const AllocStats &stats() const { return stats_; }
    size_t buffer_size(size_t i = 0) const;
    Buffer *buffer(size_t i = 0) const { return buffers_[i].get(); }
    int n_grows() const { return n_grows_; }

  private:
    struct Plan;
    void plan(const Graph &graph, const BufferChooser &choose, Plan &out) const;
    void ensure_capacity(const Plan &plan);

    std::vector<BufferType *> types_;
    std::vector<std::unique_ptr<Buffer>> buffers_;
    AllocStats stats_;
    int n_grows_ = 0;
};

}  // namespace loom
