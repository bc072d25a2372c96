// Graph construction: the topological node list, leafs, and the compute flags that
// build_forward_select uses to keep one graph shape for several branches.
#include <algorithm>
#include <cstring>
#include <unordered_set>
#include <vector>

#include "loom/core.h"

namespace loom {
namespace {

size_t hash_slot(const Graph &g, const Tensor *t) {
    return (reinterpret_cast<uintptr_t>(t) >> 4) * 0x9E3779B97F4A7C15ull % g.hash_size;
}

// Inserts t into the set; returns false when it was already there.
bool hash_insert(Graph &g, Tensor *t) {
    for (size_t i = hash_slot(g, t), n = 0; n < g.hash_size; i = (i + 1) % g.hash_size, ++n) {
        if (g.hash_keys[i] == t) return false;
        if (g.hash_keys[i] == nullptr) {
            g.hash_keys[i] = t;
            return true;
        }
    }
    LOOM_ASSERT(false && "graph hash set full");  // sized at twice both budgets: cannot happen
}

// Post-order walk from t: parents are added before t. With compute set, also flags every node
// on the way, including ones already present but not yet flagged (from an unchosen branch).
void visit(Graph &g, Tensor *t, bool compute) {
    const bool is_new = !g.contains(t);
    const bool needs_flag = compute && t->op != Op::none && !(t->flags & kFlagCompute);
    if (!is_new && !needs_flag) return;

    for (Tensor *s : t->src) {
        if (s != nullptr) visit(g, s, compute);
    }
    if (t->view_src != nullptr) visit(g, t->view_src, compute);

    if (compute && t->op != Op::none) t->flags |= kFlagCompute;
    if (!is_new) return;
    hash_insert(g, t);
    if (t->op == Op::none) {
        if (g.n_leafs >= g.size) fail("graph", "more than {} leafs adding {}", g.size, describe(t));
        g.leafs[g.n_leafs++] = t;
    } else {
        if (g.n_nodes >= g.size) fail("graph", "more than {} nodes adding {}", g.size, describe(t));
        g.nodes[g.n_nodes++] = t;
    }
}

}  // namespace

bool Graph::contains(const Tensor *t) const {
    for (size_t i = hash_slot(*this, t), n = 0; n < hash_size; i = (i + 1) % hash_size, ++n) {
        if (hash_keys[i] == t) return true;
        if (hash_keys[i] == nullptr) return false;
    }
    return false;
}

Tensor *Graph::find(std::string_view name) const {
    for (Tensor *t : node_list()) {
        if (name == t->name) return t;
    }
    for (Tensor *t : leaf_list()) {
        if (name == t->name) return t;
    }
    return nullptr;
}

Graph *new_graph(Context &ctx, size_t size) {
    if (size == 0) fail("graph", "node budget must be positive");
    auto *g = new (ctx.allocate(sizeof(Graph), alignof(Graph), "graph")) Graph{};
    g->size = size;
    g->hash_size = 4 * size + 1;  // nodes + leafs at most 2*size: load factor stays <= 1/2
    auto alloc_array = [&](size_t n, const char *what) {
        auto *p =
            static_cast<Tensor **>(ctx.allocate(n * sizeof(Tensor *), alignof(Tensor *), what));
        std::fill_n(p, n, nullptr);
        return p;
    };
    g->nodes = alloc_array(size, "graph nodes");
    g->leafs = alloc_array(size, "graph leafs");
    g->hash_keys = alloc_array(g->hash_size, "graph hash set");
    return g;
}

void build_forward_expand(Graph *graph, Tensor *t) {
    visit(*graph, t, /*compute=*/true);
}

Tensor *build_forward_select(Graph *graph, std::span<Tensor *const> branches, size_t chosen) {
    if (chosen >= branches.size()) {
        fail("graph", "select: branch {} of {}", chosen, branches.size());
    }
    // Unchosen branches first, without flags, so the chosen one's flags are the only ones set.
    for (size_t i = 0; i < branches.size(); ++i) {
        if (i != chosen) visit(*graph, branches[i], /*compute=*/false);
    }
    visit(*graph, branches[chosen], /*compute=*/true);
    return branches[chosen];
}

void build_forward_order(Graph *graph, Tensor *t) {
    build_forward_expand(graph, t);
    // t and everything it depends on form a set closed under "parent of": moving that set to
    // the front, keeping relative order on both sides, leaves the order topological.
    std::unordered_set<const Tensor *> ancestors;
    std::vector<const Tensor *> stack = {t};
    while (!stack.empty()) {
        const Tensor *n = stack.back();
        stack.pop_back();
        if (!ancestors.insert(n).second) continue;
        for (const Tensor *s : n->src) {
            if (s != nullptr) stack.push_back(s);
        }
        if (n->view_src != nullptr) stack.push_back(n->view_src);
    }
    std::stable_partition(graph->nodes, graph->nodes + graph->n_nodes,
                          [&](const Tensor *n) { return ancestors.contains(n); });
}

}  // namespace loom
