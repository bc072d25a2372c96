// Graph allocator: a walk over the nodes in execution order that gives each intermediate a
// range of one buffer and returns it to a best-fit free list after its last reader.
#include "loom/alloc.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace loom {
namespace {

size_t align_up(size_t n, size_t align) {
    return (n + align - 1) / align * align;
}

// Free ranges of a buffer that grows at its end while planning.
class FreeList {
  public:
    size_t allocate(size_t size) {
        // best fit: the smallest free range that holds `size`
        auto best = blocks_.end();
        for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
            if (it->size >= size && (best == blocks_.end() || it->size < best->size)) best = it;
        }
        if (best != blocks_.end()) {
            const size_t offset = best->offset;
            best->offset += size;
            best->size -= size;
            if (best->size == 0) blocks_.erase(best);
            return offset;
        }
        // none fits: grow at the end, starting inside a free range that touches the end
        size_t offset = end_;
        if (!blocks_.empty() && blocks_.back().offset + blocks_.back().size == end_) {
            offset = blocks_.back().offset;
            blocks_.pop_back();
        }
        end_ = offset + size;
        return offset;
    }

    void release(size_t offset, size_t size) {
        auto it = std::lower_bound(blocks_.begin(), blocks_.end(), offset,
                                   [](const Block &b, size_t o) { return b.offset < o; });
        it = blocks_.insert(it, {offset, size});
        if (auto next = it + 1; next != blocks_.end() && it->offset + it->size == next->offset) {
            it->size += next->size;
            blocks_.erase(next);
        }
        if (it != blocks_.begin()) {
            auto prev = it - 1;
            if (prev->offset + prev->size == it->offset) {
                prev->size += it->size;
                blocks_.erase(it);
            }
        }
    }

    size_t end() const { return end_; }

  private:
    struct Block {
        size_t offset, size;
    };
    std::vector<Block> blocks_;  // sorted by offset, never adjacent
    size_t end_ = 0;
};

struct TensorState {
    int n_children = 0;  // readers not yet run
    int n_views = 0;     // views of it that still have readers
    bool placed = false;
    bool owns = false;  // holds its range (false once an in-place result took it over)
    bool permanent = false;
    size_t buffer = 0;
    size_t offset = 0;
    size_t size = 0;
};

}  // namespace

struct GraphAllocator::Plan {
    std::unordered_map<const Tensor *, TensorState> states;
    std::vector<FreeList> free_lists;
    std::vector<size_t> peaks;  // per buffer
    AllocStats stats;
};

GraphAllocator::GraphAllocator(BufferType &type)
    : GraphAllocator(std::vector<BufferType *>{&type}) {}

GraphAllocator::GraphAllocator(std::vector<BufferType *> types)
    : types_(std::move(types)), buffers_(types_.size()) {
    LOOM_ASSERT(!types_.empty());
}

GraphAllocator::~GraphAllocator() = default;

size_t GraphAllocator::buffer_size(size_t i) const {
    return buffers_[i] ? buffers_[i]->size() : 0;
}

void GraphAllocator::plan(const Graph &graph, const BufferChooser &choose, Plan &p) const {
    p.free_lists.assign(types_.size(), FreeList{});
    p.states.reserve(2 * (graph.n_nodes + graph.n_leafs));

    // Ours: no memory yet, or memory in one of our buffers from an earlier allocate(); not a view.
    auto is_ours = [&](const Tensor *t) {
        if (t->view_src != nullptr) return false;
        if (t->data == nullptr) return true;
        for (const auto &b : buffers_) {
            if (b && b->contains(t)) return true;
        }
        return false;
    };
    auto place = [&](const Tensor *t, TensorState &st, bool permanent) {
        st.buffer = choose ? choose(t) : 0;
        LOOM_ASSERT(st.buffer < types_.size());
        const BufferType &type = *types_[st.buffer];
        FreeList &free_list = p.free_lists[st.buffer];
        st.size = align_up(t->nbytes(), type.alignment());
        st.offset = free_list.allocate(st.size);
        st.placed = st.owns = true;
        st.permanent = permanent;
        p.stats.naive_size += st.size;
        ++p.stats.n_tensors;
        if (free_list.end() > type.max_size()) {
            fail("alloc", "{} needs the buffer to grow to {} bytes, more than {} allows ({} bytes)",
                 describe(t), free_list.end(), type.name(), type.max_size());
        }
    };
    auto release_range = [&](const Tensor *t) {
        TensorState &st = p.states[t];
        if (!st.owns || st.permanent || (t->flags & (kFlagInput | kFlagOutput))) return;
        p.free_lists[st.buffer].release(st.offset, st.size);
        st.owns = false;
    };
    // Called when t has no readers left: frees it, or, for a view, what it aliases once that
    // has no readers and no other live views either.
    auto release = [&](const Tensor *t) {
        if (t->view_src == nullptr) {
            release_range(t);
            return;
        }
        if (t->flags & kFlagOutput) return;  // an output view keeps what it aliases
        TensorState &base = p.states[t->view_src];
        if (--base.n_views == 0 && base.n_children == 0) release_range(t->view_src);
    };
    // An in-place result takes over src[0]'s range when nothing else will read src[0].
    auto try_in_place = [&](const Tensor *node, TensorState &st) {
        const Tensor *parent = node->src[0];
        if (!op_can_run_in_place(node->op) || parent == nullptr || !is_ours(parent)) return false;
        if ((parent->flags & (kFlagInput | kFlagOutput)) || parent->type != node->type ||
            parent->nbytes() != node->nbytes() || !parent->is_contiguous() ||
            !node->is_contiguous()) {
            return false;
        }
        TensorState &ps = p.states[parent];
        const size_t buffer = choose ? choose(node) : 0;
        if (!ps.owns || ps.permanent || ps.n_children != 1 || ps.n_views != 0 ||
            ps.buffer != buffer) {
            return false;
        }
        st = ps;
        st.n_children = 0;
        st.n_views = 0;
        ps.owns = false;
        ++p.stats.n_in_place;
        ++p.stats.n_tensors;
        p.stats.naive_size += st.size;
        return true;
    };

    for (const Tensor *node : graph.node_list()) {
        for (const Tensor *s : node->src) {
            if (s != nullptr) ++p.states[s].n_children;
        }
        if (node->view_src != nullptr) ++p.states[node->view_src].n_views;
    }
    for (const Tensor *leaf : graph.leaf_list()) {
        if (is_ours(leaf)) place(leaf, p.states[leaf], /*permanent=*/true);
    }
    for (const Tensor *node : graph.node_list()) {
        TensorState &st = p.states[node];
        if (is_ours(node)) {
            // keep the counts gathered above: they belong to this node's own readers
            const int n_children = st.n_children, n_views = st.n_views;
            if (!try_in_place(node, st)) place(node, st, /*permanent=*/false);
            st.n_children = n_children;
            st.n_views = n_views;
        }
        for (const Tensor *s : node->src) {
            if (s == nullptr) continue;
            TensorState &ss = p.states[s];
            if (--ss.n_children == 0 && ss.n_views == 0) release(s);
        }
    }
    for (const FreeList &f : p.free_lists) p.stats.planned_peak += f.end();
    p.peaks.clear();
    for (const FreeList &f : p.free_lists) p.peaks.push_back(f.end());
}

void GraphAllocator::ensure_capacity(const Plan &p) {
    for (size_t i = 0; i < buffers_.size(); ++i) {
        if (buffers_[i] && buffers_[i]->size() >= p.peaks[i]) continue;
        if (buffers_[i]) ++n_grows_;
        buffers_[i].reset();
        buffers_[i] = types_[i]->allocate(std::max<size_t>(p.peaks[i], 1));
    }
}

void GraphAllocator::reserve(const Graph &graph, const BufferChooser &choose) {
    Plan p;
    plan(graph, choose, p);
    stats_ = p.stats;
    ensure_capacity(p);
}

void GraphAllocator::allocate(Graph &graph, const BufferChooser &choose) {
    Plan p;
    plan(graph, choose, p);
    stats_ = p.stats;
    ensure_capacity(p);
    auto assign = [&](Tensor *t) {
        if (t->view_src != nullptr) {
            if (t->view_src->data != nullptr) {
                t->data = static_cast<std::byte *>(t->view_src->data) + t->view_offs;
                t->buffer = t->view_src->buffer;
            }
            return;
        }
        auto it = p.states.find(t);
        if (it == p.states.end() || !it->second.placed) return;
        Buffer &b = *buffers_[it->second.buffer];
        t->data = static_cast<std::byte *>(b.base()) + it->second.offset;
        t->buffer = &b;
    };
    for (Tensor *leaf : graph.leaf_list()) assign(leaf);
    for (Tensor *node : graph.node_list()) assign(node);
}

}  // namespace loom
