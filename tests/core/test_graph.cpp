// Graph semantics: build_forward_select, build_forward_order, views aliasing their source,
// de-duplication, the node budget and lookup by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "loom/core.h"
#include "tests/core/op_harness.h"

namespace loom {
namespace {

float *f32(Tensor *t) {
    return static_cast<float *>(t->data);
}

Tensor *iota_f32(Context &ctx, std::initializer_list<int64_t> ne, float start = 1.0f) {
    Tensor *t = ctx.new_tensor(DType::F32, ne);
    for (int64_t i = 0; i < t->nelements(); ++i) f32(t)[i] = start + float(i);
    return t;
}

size_t position(const Graph *g, const Tensor *t) {
    const auto nodes = g->node_list();
    return size_t(std::find(nodes.begin(), nodes.end(), t) - nodes.begin());
}

// Every source of every node that is itself a node comes earlier in the list.
void expect_topological(const Graph *g) {
    for (size_t i = 0; i < g->n_nodes; ++i) {
        const Tensor *n = g->nodes[i];
        std::vector<const Tensor *> parents(n->src, n->src + kMaxSrc);
        parents.push_back(n->view_src);
        for (const Tensor *s : parents) {
            if (s == nullptr || s->op == Op::none) continue;
            EXPECT_LT(position(g, s), i) << n->name << " comes before its source " << s->name;
        }
    }
}

TEST(Graph, SelectComputesOnlyTheChosenBranch) {
    Context ctx;
    Tensor *x = set_name(iota_f32(ctx, {8}), "x");
    Tensor *shared = set_name(scale(ctx, x, 2.0f), "shared");  // both branches read it
    Tensor *only0 = set_name(scale(ctx, x, 3.0f), "only0");    // branch 0 alone reads it
    Tensor *b0 = set_name(add(ctx, shared, only0), "b0");      // 5x
    Tensor *b1 = set_name(mul(ctx, shared, x), "b1");          // 2x^2
    const std::array<Tensor *, 2> branches = {b0, b1};

    Graph *g = new_graph(ctx);
    EXPECT_EQ(build_forward_select(g, branches, 1), b1);
    for (const Tensor *t : {shared, only0, b0, b1}) EXPECT_TRUE(g->contains(t)) << t->name;
    EXPECT_EQ(g->n_nodes, 4u);
    EXPECT_TRUE(b1->flags & kFlagCompute);
    EXPECT_TRUE(shared->flags & kFlagCompute);
    EXPECT_FALSE(b0->flags & kFlagCompute);
    EXPECT_FALSE(only0->flags & kFlagCompute);

    std::memset(b0->data, 0x5A, b0->nbytes());
    std::memset(only0->data, 0x5A, only0->nbytes());
    test::compute_on_cpu(*g, 2);
    for (const Tensor *t : {b0, only0}) {
        const auto *bytes = static_cast<const unsigned char *>(t->data);
        EXPECT_TRUE(
            std::all_of(bytes, bytes + t->nbytes(), [](unsigned char c) { return c == 0x5A; }))
            << t->name << " was written although its branch was not chosen";
    }
    for (int i = 0; i < 8; ++i) EXPECT_FLOAT_EQ(f32(b1)[i], 2.0f * float(i + 1) * float(i + 1));
}

TEST(Graph, SelectKeepsTheSameShapeForEveryChoice) {
    size_t n_nodes[2], n_leafs[2];
    for (size_t chosen = 0; chosen < 2; ++chosen) {
        Context ctx;
        Tensor *x = iota_f32(ctx, {4});
        Tensor *b0 = add(ctx, scale(ctx, x, 2.0f), x);
        Tensor *b1 = relu(ctx, x);
        const std::array<Tensor *, 2> branches = {b0, b1};
        Graph *g = new_graph(ctx);
        build_forward_select(g, branches, chosen);
        n_nodes[chosen] = g->n_nodes;
        n_leafs[chosen] = g->n_leafs;
        size_t n_flagged = 0;
        for (const Tensor *n : g->node_list()) n_flagged += (n->flags & kFlagCompute) ? 1 : 0;
        EXPECT_EQ(n_flagged, chosen == 0 ? 2u : 1u);
    }
    EXPECT_EQ(n_nodes[0], n_nodes[1]);
    EXPECT_EQ(n_nodes[0], 3u);
    EXPECT_EQ(n_leafs[0], n_leafs[1]);
}

TEST(Graph, SelectRejectsAMissingBranch) {
    Context ctx;
    Tensor *x = iota_f32(ctx, {4});
    const std::array<Tensor *, 1> branches = {relu(ctx, x)};
    Graph *g = new_graph(ctx);
    try {
        build_forward_select(g, branches, 1);
        ADD_FAILURE() << "no error";
    } catch (const Error &e) {
        EXPECT_EQ(std::string(e.what()).rfind("[graph]", 0), 0u) << e.what();
    }
}

TEST(Graph, ExpandingAnUnchosenBranchLaterFlagsIt) {
    Context ctx;
    Tensor *x = iota_f32(ctx, {4});
    Tensor *b0 = scale(ctx, x, 2.0f);
    Tensor *b1 = scale(ctx, x, 3.0f);
    const std::array<Tensor *, 2> branches = {b0, b1};
    Graph *g = new_graph(ctx);
    build_forward_select(g, branches, 0);
    ASSERT_FALSE(b1->flags & kFlagCompute);
    build_forward_expand(g, b1);
    EXPECT_TRUE(b1->flags & kFlagCompute);
    EXPECT_EQ(g->n_nodes, 2u);
    test::compute_on_cpu(*g, 1);
    EXPECT_FLOAT_EQ(f32(b1)[3], 12.0f);
}

TEST(Graph, ForwardOrderPutsTheSubgraphFirstAndStaysTopological) {
    Context ctx;
    Tensor *x = set_name(iota_f32(ctx, {6}), "x");
    Tensor *y = set_name(iota_f32(ctx, {6}, 10.0f), "y");
    Tensor *a1 = set_name(scale(ctx, x, 2.0f), "a1");
    Tensor *a2 = set_name(add(ctx, a1, x), "a2");  // 3x
    Tensor *b1 = set_name(scale(ctx, y, 3.0f), "b1");
    Tensor *b2 = set_name(mul(ctx, b1, y), "b2");  // 3y^2
    Tensor *c = set_name(add(ctx, a2, b2), "c");
    Tensor *t = set_name(mul(ctx, b1, x), "t");  // 3xy: shares b1 with c's subgraph

    Graph *g = new_graph(ctx);
    build_forward_expand(g, c);
    ASSERT_EQ(g->n_nodes, 5u);
    EXPECT_LT(position(g, a1), position(g, b1));  // post-order: c's first source first

    build_forward_order(g, t);
    ASSERT_EQ(g->n_nodes, 6u);
    EXPECT_EQ(g->nodes[0], b1);
    EXPECT_EQ(g->nodes[1], t);
    // The rest keep their relative order.
    EXPECT_LT(position(g, a1), position(g, a2));
    EXPECT_LT(position(g, a2), position(g, b2));
    EXPECT_LT(position(g, b2), position(g, c));
    expect_topological(g);

    test::compute_on_cpu(*g, 2);
    for (int i = 0; i < 6; ++i) {
        const float xv = float(1 + i), yv = float(10 + i);
        EXPECT_FLOAT_EQ(f32(t)[i], 3.0f * xv * yv);
        EXPECT_FLOAT_EQ(f32(c)[i], 3.0f * xv + 3.0f * yv * yv);
    }
}

TEST(Graph, ForwardOrderOfANewChainMovesItAheadOfEverything) {
    Context ctx;
    Tensor *x = iota_f32(ctx, {4});
    Tensor *first = relu(ctx, scale(ctx, x, -1.0f));
    Tensor *second = sqrt(ctx, x);
    Tensor *third = scale(ctx, second, 0.5f);
    Graph *g = new_graph(ctx);
    build_forward_expand(g, first);
    build_forward_order(g, third);
    ASSERT_EQ(g->n_nodes, 4u);
    EXPECT_EQ(g->nodes[0], second);
    EXPECT_EQ(g->nodes[1], third);
    EXPECT_EQ(g->nodes[3], first);
    expect_topological(g);
}

// contiguous() copies only what is out of order: a decoded token's heads permuted across its
// one position are already in order (no node), heads permuted across several positions are not.
TEST(Graph, ContiguousCopiesOnlyWhatIsOutOfOrder) {
    Context ctx;
    Tensor *one = iota_f32(ctx, {4, 3, 1});               // [head_dim, n_head, 1 token]
    Tensor *heads_first = permute(ctx, one, 0, 2, 1, 3);  // [head_dim, 1, n_head]
    EXPECT_EQ(contiguous(ctx, heads_first), heads_first);
    Tensor *r = reshape(ctx, contiguous(ctx, heads_first), {12});
    for (int64_t i = 0; i < 12; ++i) {
        EXPECT_EQ(*static_cast<float *>(r->element_ptr(i, 0)), 1.0f + float(i));
    }

    Tensor *two = iota_f32(ctx, {4, 3, 2});            // two tokens
    Tensor *permuted = permute(ctx, two, 0, 2, 1, 3);  // [head_dim, 2, n_head]
    Tensor *copy = contiguous(ctx, permuted);
    ASSERT_NE(copy, permuted);
    EXPECT_EQ(copy->op, Op::cont);
    Graph *g = new_graph(ctx);
    build_forward_expand(g, copy);
    test::compute_on_cpu(*g, 2);
    for (int64_t h = 0; h < 3; ++h) {
        for (int64_t t = 0; t < 2; ++t) {
            for (int64_t d = 0; d < 4; ++d) {  // element (d, t, h) is two's (d, h, t)
                EXPECT_EQ(*static_cast<float *>(copy->element_ptr(d, t, h)),
                          1.0f + float(d + 4 * h + 12 * t));
            }
        }
    }
}

TEST(Graph, ViewsAliasTheirSource) {
    Context ctx;
    Tensor *x = iota_f32(ctx, {8, 4});  // x[i1][i0] = 1 + 8 i1 + i0
    const size_t offset = x->nb[1] + 2 * sizeof(float);
    Tensor *v = view_2d(ctx, x, 3, 2, x->nb[1], offset);  // x[1..2][2..4]
    EXPECT_EQ(v->view_src, x);
    EXPECT_EQ(v->view_offs, offset);
    EXPECT_EQ(v->data, static_cast<char *>(x->data) + offset);
    EXPECT_EQ(*static_cast<float *>(v->element_ptr(0, 0)), 11.0f);
    EXPECT_EQ(*static_cast<float *>(v->element_ptr(2, 1)), 21.0f);

    // A view of a view aliases the original source, offsets added.
    Tensor *vv = view_1d(ctx, v, 2, sizeof(float));
    EXPECT_EQ(vv->view_src, x);
    EXPECT_EQ(vv->view_offs, offset + sizeof(float));
    EXPECT_EQ(vv->data, static_cast<char *>(x->data) + offset + sizeof(float));

    Tensor *p = permute(ctx, x, 1, 0, 2, 3);
    EXPECT_EQ(p->data, x->data);
    EXPECT_EQ(p->ne[0], 4);
    EXPECT_EQ(p->nb[0], x->nb[1]);
    EXPECT_FALSE(p->is_contiguous());
    Tensor *r = reshape(ctx, x, {32});
    EXPECT_EQ(r->data, x->data);
    EXPECT_TRUE(r->is_contiguous());

    // Writing through cpy into the view changes the source there and nowhere else.
    Tensor *src = iota_f32(ctx, {3, 2}, 100.0f);
    Tensor *c = cpy(ctx, src, v);
    EXPECT_EQ(c->data, v->data);
    EXPECT_EQ(c->view_src, x);
    Graph *g = new_graph(ctx);
    build_forward_expand(g, c);
    test::compute_on_cpu(*g, 2);
    for (int i1 = 0; i1 < 4; ++i1) {
        for (int i0 = 0; i0 < 8; ++i0) {
            const bool inside = i1 >= 1 && i1 <= 2 && i0 >= 2 && i0 <= 4;
            const float expected =
                inside ? 100.0f + float((i1 - 1) * 3 + (i0 - 2)) : 1.0f + float(8 * i1 + i0);
            EXPECT_EQ(f32(x)[i1 * 8 + i0], expected) << "at " << i0 << ", " << i1;
        }
    }
}

TEST(Graph, ANodeAddedTwiceAppearsOnce) {
    Context ctx;
    Tensor *x = iota_f32(ctx, {4});
    Tensor *p = scale(ctx, x, 2.0f);
    Tensor *t = add(ctx, p, p);  // p reached twice
    Graph *g = new_graph(ctx);
    build_forward_expand(g, t);
    build_forward_expand(g, t);
    build_forward_expand(g, p);
    EXPECT_EQ(g->n_nodes, 2u);
    EXPECT_EQ(g->n_leafs, 1u);
    EXPECT_EQ(std::count(g->nodes, g->nodes + g->n_nodes, p), 1);
    EXPECT_EQ(g->nodes[0], p);
    EXPECT_EQ(g->nodes[1], t);
    EXPECT_TRUE(g->contains(x));
    EXPECT_FALSE(g->contains(scale(ctx, x, 1.0f)));
}

TEST(Graph, NodeBudgetExceededThrows) {
    Context ctx;
    Tensor *x = iota_f32(ctx, {4});
    Tensor *t = x;
    for (int i = 0; i < 4; ++i) t = scale(ctx, t, 2.0f);
    Graph *g = new_graph(ctx, 3);
    try {
        build_forward_expand(g, t);
        ADD_FAILURE() << "a graph of 3 nodes took 4";
    } catch (const Error &e) {
        EXPECT_EQ(std::string(e.what()).rfind("[graph]", 0), 0u) << e.what();
    }
    EXPECT_LE(g->n_nodes, 3u);
}

TEST(Graph, FindByName) {
    Context ctx;
    Tensor *x = set_name(iota_f32(ctx, {4}), "inp_embd");
    Tensor *n = set_name(scale(ctx, x, 2.0f), "attn_out-0");
    Tensor *o = set_name(relu(ctx, n), "result_output");
    Graph *g = new_graph(ctx);
    build_forward_expand(g, o);
    EXPECT_EQ(g->find("attn_out-0"), n);
    EXPECT_EQ(g->find("result_output"), o);
    EXPECT_EQ(g->find("inp_embd"), x);
    EXPECT_EQ(g->find("attn_out"), nullptr);
    EXPECT_EQ(g->find("missing"), nullptr);

    // Names are truncated to kMaxName - 1 bytes.
    const std::string long_name(100, 'n');
    set_name(n, long_name);
    EXPECT_EQ(std::strlen(n->name), size_t(kMaxName - 1));
    EXPECT_EQ(g->find(long_name.substr(0, kMaxName - 1)), n);
}

}  // namespace
}  // namespace loom
