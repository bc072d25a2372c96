// Scheduler: backend assignment, splits, cross-backend input copies, and running the splits.
#include "loom/sched.h"

#include "core/huge_pages.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace loom {

struct Scheduler::Split {
    int backend = 0;
    std::vector<Tensor *> nodes;
    struct Copy {
        Tensor *src;  // in another backend's memory
        Tensor *dst;  // contiguous, in this split's backend memory
    };
    std::vector<Copy> copies;
    struct Rewire {
        Tensor *node;
        int slot;
        Tensor *copy;
    };
    std::vector<Rewire> rewires;  // reads redirected to copies while the split runs
    Graph *graph = nullptr;
};

namespace {

// Copies t's elements (any strides) into contiguous dst of the same type, both in host memory.
void copy_to_contiguous(const Tensor *src, Tensor *dst) {
    if (src->is_contiguous()) {
        std::memcpy(dst->data, src->data, dst->nbytes());
        return;
    }
    const size_t row = row_size(src->type, src->ne[0]);
    const size_t elem = traits(src->type).type_size;
    auto *out = static_cast<std::byte *>(dst->data);
    for (int64_t i3 = 0; i3 < src->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < src->ne[2]; ++i2) {
            for (int64_t i1 = 0; i1 < src->ne[1]; ++i1, out += row) {
                if (src->rows_contiguous()) {
                    std::memcpy(out, src->row_ptr(i1, i2, i3), row);
                    continue;
                }
                for (int64_t i0 = 0; i0 < src->ne[0]; ++i0) {
                    std::memcpy(out + size_t(i0) * elem, src->element_ptr(i0, i1, i2, i3), elem);
                }
            }
        }
    }
}

}  // namespace

Scheduler::Scheduler(std::vector<Backend *> backends) : backends_(std::move(backends)) {
    if (backends_.empty()) fail("sched", "at least one backend is needed");
    std::vector<BufferType *> types;
    for (Backend *b : backends_) types.push_back(&b->default_buffer_type());
    allocator_ = std::make_unique<GraphAllocator>(std::move(types));
}

Scheduler::~Scheduler() = default;

int Scheduler::backend_index(const Backend *b) const {
    for (size_t i = 0; i < backends_.size(); ++i) {
        if (backends_[i] == b) return int(i);
    }
    return -1;
}

void Scheduler::set_tensor_backend(const Tensor *node, Backend &backend) {
    const int i = backend_index(&backend);
    if (i < 0)
        fail("sched", "{} pinned to backend {} which this scheduler does not have", describe(node),
             backend.name());
    pinned_[node] = i;
}

Backend *Scheduler::tensor_backend(const Tensor *node) const {
    auto it = assigned_.find(node);
    return it == assigned_.end() ? nullptr : backends_[size_t(it->second)];
}

// The backend whose memory holds t, or -1 for memory any backend may read (a plain host
// tensor that no buffer owns, or one in memory no backend calls its own).
int Scheduler::memory_backend(const Tensor *t) const {
    if (t->view_src != nullptr) return memory_backend(t->view_src);
    if (auto it = assigned_.find(t); it != assigned_.end()) return it->second;
    if (t->buffer == nullptr) return -1;
    for (size_t i = 0; i < backends_.size(); ++i) {
        if (backends_[i]->uses_buffer_type(t->buffer->type())) return int(i);
    }
    return -1;
}

void Scheduler::assign_backends(const Graph &graph) {
    assigned_.clear();
    std::vector<Tensor *> compute_nodes;
    for (Tensor *node : graph.node_list()) {
        if (!is_view_op(node->op)) compute_nodes.push_back(node);
    }
    // 1. a node that writes into memory (cpy, set_rows: a KV cache) where that memory is, as a
    // copy would take its result away; else pinned by the caller, else where its weights live
    for (Tensor *node : compute_nodes) {
        if (node->view_src != nullptr) {
            const int b = memory_backend(node->view_src);
            if (b >= 0) {
                if (!backends_[size_t(b)]->supports_op(node)) {
                    fail("sched", "{} {} writes into memory of {}, which does not support it",
                         op_name(node->op), describe(node), backends_[size_t(b)]->name());
                }
                assigned_[node] = b;
                continue;
            }
        }
        if (auto it = pinned_.find(node); it != pinned_.end()) {
            if (!backends_[size_t(it->second)]->supports_op(node)) {
                fail("sched", "{} {} is pinned to {}, which does not support it", op_name(node->op),
                     describe(node), backends_[size_t(it->second)]->name());
            }
            assigned_[node] = it->second;
            continue;
        }
        for (const Tensor *s : node->src) {
            if (s == nullptr || s->op != Op::none || s->buffer == nullptr) continue;
            const int b = memory_backend(s);
            if (b >= 0 && backends_[size_t(b)]->supports_op(node)) {
                assigned_[node] = b;
                break;
            }
        }
    }
    // 2. spread to neighbours, forward then backward, so runs stay long
    auto spread = [&](auto begin, auto end) {
        int last = -1;
        for (auto it = begin; it != end; ++it) {
            if (auto a = assigned_.find(*it); a != assigned_.end()) {
                last = a->second;
            } else if (last >= 0 && backends_[size_t(last)]->supports_op(*it)) {
                assigned_[*it] = last;
            }
        }
    };
    spread(compute_nodes.begin(), compute_nodes.end());
    spread(compute_nodes.rbegin(), compute_nodes.rend());
    // 3. the rest: the first backend in priority order that supports the node
    for (Tensor *node : compute_nodes) {
        if (assigned_.contains(node)) continue;
        for (size_t i = 0; i < backends_.size() && !assigned_.contains(node); ++i) {
            if (backends_[i]->supports_op(node)) assigned_[node] = int(i);
        }
        if (!assigned_.contains(node)) {
            fail("sched", "no backend supports {} {}", op_name(node->op), describe(node));
        }
    }
    // inputs without memory live with their first reader
    for (Tensor *node : compute_nodes) {
        for (const Tensor *s : node->src) {
            if (s != nullptr && s->op == Op::none && s->data == nullptr && !assigned_.contains(s)) {
                assigned_[s] = assigned_[node];
            }
        }
    }
}

void Scheduler::build_splits(Graph &graph) {
    splits_.clear();
    const size_t n = graph.n_nodes + graph.n_leafs;
    meta_ = std::make_unique<Context>(
        ContextParams{.mem_size = (1u << 16) + n * (2 * sizeof(Tensor) + 64 * sizeof(Tensor *)),
                      .no_alloc = true});
    for (Tensor *node : graph.node_list()) {
        const int b = is_view_op(node->op) ? (splits_.empty() ? std::max(0, memory_backend(node))
                                                              : splits_.back().backend)
                                           : assigned_.at(node);
        if (splits_.empty() || splits_.back().backend != b) {
            splits_.emplace_back();
            splits_.back().backend = b;
        }
        splits_.back().nodes.push_back(node);
    }
    stats_.n_copies = 0;
    for (Split &split : splits_) {
        BufferType &here = backends_[size_t(split.backend)]->default_buffer_type();
        std::map<const Tensor *, Tensor *> copy_of;
        for (Tensor *node : split.nodes) {
            if (is_view_op(node->op)) continue;
            for (int slot = 0; slot < kMaxSrc; ++slot) {
                Tensor *s = node->src[slot];
                if (s == nullptr) continue;
                const int mb = memory_backend(s);
                if (mb < 0 || &backends_[size_t(mb)]->default_buffer_type() == &here) continue;
                Tensor *&copy = copy_of[s];
                if (copy == nullptr) {
                    copy = meta_->new_tensor(s->type, std::span<const int64_t>(s->ne, kMaxDims));
                    set_input(set_name(copy, std::string("copy:") + s->name));
                    assigned_[copy] = split.backend;
                    split.copies.push_back({s, copy});
                    ++stats_.n_copies;
                }
                split.rewires.push_back({node, slot, copy});
            }
        }
        split.graph = new_graph(*meta_, std::max<size_t>(1, split.nodes.size()));
        for (Tensor *node : split.nodes) split.graph->nodes[split.graph->n_nodes++] = node;
    }
    stats_.n_splits = splits_.size();
}

void Scheduler::allocate(Graph &graph) {
    assign_backends(graph);
    build_splits(graph);
    // One plan over the whole graph, with the copies as extra leafs, so a tensor read by a
    // later split on its own backend stays alive across the splits in between.
    size_t n_copies = 0;
    for (const Split &s : splits_) n_copies += s.copies.size();
    Graph *plan = new_graph(*meta_, std::max<size_t>({graph.n_nodes, graph.n_leafs + n_copies, 1}));
    std::copy_n(graph.nodes, graph.n_nodes, plan->nodes);
    plan->n_nodes = graph.n_nodes;
    std::copy_n(graph.leafs, graph.n_leafs, plan->leafs);
    plan->n_leafs = graph.n_leafs;
    for (const Split &s : splits_) {
        for (const Split::Copy &c : s.copies) plan->leafs[plan->n_leafs++] = c.dst;
    }
    allocator_->allocate(*plan, [&](const Tensor *t) {
        auto it = assigned_.find(t);
        return it == assigned_.end() ? size_t(0) : size_t(it->second);
    });
    graph_ = &graph;
}

void Scheduler::compute(Graph &graph) {
    if (&graph != graph_) fail("sched", "compute() of a graph that allocate() has not seen");
    const ComputeInProgress computing;  // no huge-page merges beside it (core/huge_pages.h)
    stats_.copied_bytes = 0;
    for (Split &split : splits_) {
        for (const Split::Copy &c : split.copies) {
            copy_to_contiguous(c.src, c.dst);
            stats_.copied_bytes += c.dst->nbytes();
        }
        // Swapping twice restores the graph, also when the backend throws.
        auto rewire = [&split] {
            for (Split::Rewire &r : split.rewires) std::swap(r.node->src[r.slot], r.copy);
        };
        rewire();
        struct Restore {
            decltype(rewire) &undo;
            ~Restore() { undo(); }
        } restore{rewire};
        backends_[size_t(split.backend)]->graph_compute(*split.graph);
    }
}

}  // namespace loom
