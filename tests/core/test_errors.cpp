// Bad input becomes loom::Error with a "[module]" prefix, never an abort or a stray write:
// op builders name the offending tensors and their shapes, the arena and graphs stay within
// their budgets, and the CPU backend refuses nodes without memory before running anything.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "loom/core.h"
#include "tests/core/op_harness.h"

namespace loom {
namespace {

// The message of the loom::Error that f throws; fails the test when it throws nothing.
std::string error_of(const std::function<void()> &f) {
    try {
        f();
    } catch (const Error &e) {
        return e.what();
    }
    ADD_FAILURE() << "no loom::Error thrown";
    return "";
}

bool starts_with(const std::string &s, const std::string &prefix) {
    return s.rfind(prefix, 0) == 0;
}

struct BuilderError {
    const char *name;
    const char *op;                         // the expected "[op]" prefix
    std::function<void(Context &)> call;    // the bad call
    std::vector<std::string> must_contain;  // descriptions of the tensors it names
};

Tensor *named(Context &ctx, const char *name, DType type, std::initializer_list<int64_t> ne) {
    return set_name(ctx.new_tensor(type, ne), name);
}

std::vector<BuilderError> builder_errors() {
    using D = DType;
    return {
        {"add_shapes",
         "add",
         [](Context &c) {
             add(c, named(c, "lhs", D::F32, {4, 3}), named(c, "rhs", D::F32, {3, 3}));
         },
         {"'lhs' F32 [4, 3, 1, 1]", "'rhs' F32 [3, 3, 1, 1]"}},
        {"mul_b_dtype",
         "mul",
         [](Context &c) {
             mul(c, named(c, "x", D::F16, {4, 3}), named(c, "y", D::BF16, {4, 3}));
         },
         {"'x' F16 [4, 3, 1, 1]", "'y' BF16 [4, 3, 1, 1]"}},
        {"sub_a_dtype",
         "sub",
         [](Context &c) { sub(c, named(c, "ints", D::I32, {4}), named(c, "y", D::F32, {4})); },
         {"'ints' I32 [4, 1, 1, 1]"}},
        {"div_broadcast",
         "div",
         [](Context &c) {
             div(c, named(c, "a", D::F32, {6, 4, 2}), named(c, "b", D::F32, {4, 4, 2}));
         },
         {"'a' F32 [6, 4, 2, 1]", "'b' F32 [4, 4, 2, 1]"}},
        {"mul_mat_inner",
         "mul_mat",
         [](Context &c) {
             mul_mat(c, named(c, "wq", D::F16, {64, 32}), named(c, "cur", D::F32, {48, 7}));
         },
         {"'wq' F16 [64, 32, 1, 1]", "'cur' F32 [48, 7, 1, 1]"}},
        {"mul_mat_b_dtype",
         "mul_mat",
         [](Context &c) {
             mul_mat(c, named(c, "w", D::F32, {8, 4}), named(c, "x", D::F16, {8, 2}));
         },
         {"'x' F16 [8, 2, 1, 1]"}},
        {"mul_mat_batch",
         "mul_mat",
         [](Context &c) {
             mul_mat(c, named(c, "k", D::F32, {8, 4, 2}), named(c, "q", D::F32, {8, 2, 3}));
         },
         {"'k' F32 [8, 4, 2, 1]", "'q' F32 [8, 2, 3, 1]"}},
        {"mul_mat_id_ids",
         "mul_mat_id",
         [](Context &c) {
             mul_mat_id(c, named(c, "experts", D::F32, {8, 4, 3}), named(c, "x", D::F32, {8, 1, 2}),
                        named(c, "ids", D::F32, {2, 2}));
         },
         {"'ids' F32 [2, 2, 1, 1]"}},
        {"concat_dtype",
         "concat",
         [](Context &c) {
             concat(c, named(c, "a", D::F32, {4, 3}), named(c, "b", D::F16, {4, 3}), 1);
         },
         {"'a' F32 [4, 3, 1, 1]", "'b' F16 [4, 3, 1, 1]"}},
        {"concat_other_dim",
         "concat",
         [](Context &c) {
             concat(c, named(c, "a", D::F32, {4, 3}), named(c, "b", D::F32, {5, 2}), 1);
         },
         {"'a' F32 [4, 3, 1, 1]", "'b' F32 [5, 2, 1, 1]"}},
        {"concat_dim_range",
         "concat",
         [](Context &c) { concat(c, named(c, "a", D::F32, {4}), named(c, "b", D::F32, {4}), 4); },
         {"'a' F32 [4, 1, 1, 1]"}},
        {"get_rows_index_dtype",
         "get_rows",
         [](Context &c) {
             get_rows(c, named(c, "tok_embd", D::F16, {16, 10}), named(c, "inp", D::F32, {3}));
         },
         {"'tok_embd' F16 [16, 10, 1, 1]", "'inp' F32 [3, 1, 1, 1]"}},
        {"set_rows_index_dtype",
         "set_rows",
         [](Context &c) {
             set_rows(c, named(c, "cache", D::F16, {8, 10}), named(c, "k", D::F32, {8, 2}),
                      named(c, "idx", D::F32, {2}));
         },
         {"'cache' F16 [8, 10, 1, 1]", "'idx' F32 [2, 1, 1, 1]"}},
        {"set_rows_row_length",
         "set_rows",
         [](Context &c) {
             set_rows(c, named(c, "cache", D::F32, {8, 10}), named(c, "k", D::F32, {6, 2}),
                      named(c, "idx", D::I64, {2}));
         },
         {"'k' F32 [6, 2, 1, 1]"}},
        {"cpy_count",
         "cpy",
         [](Context &c) {
             cpy(c, named(c, "src", D::F32, {4, 3}), named(c, "dst", D::F16, {5, 2}));
         },
         {"'src' F32 [4, 3, 1, 1]", "'dst' F16 [5, 2, 1, 1]"}},
        {"repeat_multiple",
         "repeat",
         [](Context &c) {
             repeat(c, named(c, "a", D::F32, {3, 2}), named(c, "like", D::F32, {4, 2}));
         },
         {"'a' F32 [3, 2, 1, 1]", "'like' F32 [4, 2, 1, 1]"}},
        {"reshape_count",
         "reshape",
         [](Context &c) {
             reshape(c, named(c, "a", D::F32, {4, 3}), {5, 2});
         },
         {"'a' F32 [4, 3, 1, 1]"}},
        {"view_out_of_range",
         "view",
         [](Context &c) {
             Tensor *a = named(c, "a", D::F32, {4, 3});
             view_2d(c, a, 4, 3, a->nb[1], sizeof(float));
         },
         {"'a' F32 [4, 3, 1, 1]"}},
        {"permute_axes",
         "permute",
         [](Context &c) {
             permute(c, named(c, "a", D::F32, {4, 3}), 0, 0, 2, 3);
         },
         {"'a' F32 [4, 3, 1, 1]"}},
        {"swiglu_shapes",
         "swiglu",
         [](Context &c) {
             swiglu_split(c, named(c, "gate", D::F32, {8, 2}), named(c, "up", D::F32, {8, 3}));
         },
         {"'gate' F32 [8, 2, 1, 1]", "'up' F32 [8, 3, 1, 1]"}},
        {"top_k_too_large",
         "argsort_top_k",
         [](Context &c) {
             argsort_top_k(c, named(c, "logits", D::F32, {5, 2}), 6);
         },
         {"'logits' F32 [5, 2, 1, 1]"}},
        {"argmax_3d",
         "argmax",
         [](Context &c) {
             argmax(c, named(c, "a", D::F32, {5, 2, 2}));
         },
         {"'a' F32 [5, 2, 2, 1]"}},
        {"norm_dtype",
         "norm",
         [](Context &c) {
             norm(c, named(c, "h", D::F16, {8, 2}), 1e-5f);
         },
         {"'h' F16 [8, 2, 1, 1]"}},
        {"rope_positions",
         "rope",
         [](Context &c) {
             rope_ext(c, named(c, "q", D::F32, {64, 4, 5}), named(c, "pos", D::I32, {4}),
                      {.n_dims = 64});
         },
         {"'q' F32 [64, 4, 5, 1]", "'pos' I32 [4, 1, 1, 1]"}},
        {"rope_odd_dims",
         "rope",
         [](Context &c) {
             rope_ext(c, named(c, "q", D::F32, {64, 4, 5}), named(c, "pos", D::I32, {5}),
                      {.n_dims = 33});
         },
         {"'q' F32 [64, 4, 5, 1]"}},
        {"hadamard_block_not_a_power_of_two",
         "hadamard",
         [](Context &c) {
             hadamard(c, named(c, "k", D::F32, {96, 2}), 48);
         },
         {"'k' F32 [96, 2, 1, 1]", "power of two"}},
        {"hadamard_block_past_the_row",
         "hadamard",
         [](Context &c) {
             hadamard(c, named(c, "k", D::F32, {32, 2}), 64);
         },
         {"'k' F32 [32, 2, 1, 1]"}},
        {"soft_max_mask_shape",
         "soft_max",
         [](Context &c) {
             soft_max_ext(c, named(c, "kq", D::F32, {16, 4, 2}),
                          named(c, "kq_mask", D::F16, {15, 4}), {});
         },
         {"'kq' F32 [16, 4, 2, 1]", "'kq_mask' F16 [15, 4, 1, 1]"}},
        {"soft_max_sinks",
         "soft_max",
         [](Context &c) {
             soft_max_ext(c, named(c, "kq", D::F32, {16, 4, 2}), nullptr, {},
                          named(c, "sinks", D::F32, {3}));
         },
         {"'sinks' F32 [3, 1, 1, 1]"}},
        {"flash_attn_heads",
         "flash_attn_ext",
         [](Context &c) {
             flash_attn_ext(c, named(c, "q", D::F32, {64, 2, 6}), named(c, "k", D::F16, {64, 8, 4}),
                            named(c, "v", D::F16, {64, 8, 4}), nullptr, {});
         },
         {"'q' F32 [64, 2, 6, 1]", "'k' F16 [64, 8, 4, 1]"}},
        {"flash_attn_head_size",
         "flash_attn_ext",
         [](Context &c) {
             flash_attn_ext(c, named(c, "q", D::F32, {64, 2, 4}), named(c, "k", D::F16, {32, 8, 4}),
                            named(c, "v", D::F16, {32, 8, 4}), nullptr, {});
         },
         {"'q' F32 [64, 2, 4, 1]", "'k' F16 [32, 8, 4, 1]"}},
        {"clamp_range",
         "clamp",
         [](Context &c) { clamp(c, named(c, "a", D::F32, {4}), 1.0f, -1.0f); },
         {"'a' F32 [4, 1, 1, 1]"}},
        {"pad_dtype",
         "pad",
         [](Context &c) { pad(c, named(c, "a", D::F16, {4}), 1, 0); },
         {"'a' F16 [4, 1, 1, 1]"}},
    };
}

class BuilderErrorTest : public ::testing::TestWithParam<BuilderError> {};

TEST_P(BuilderErrorTest, ThrowsWithOpNameAndShapes) {
    const BuilderError &e = GetParam();
    Context ctx;
    const std::string msg = error_of([&] { e.call(ctx); });
    EXPECT_TRUE(starts_with(msg, std::string("[") + e.op + "] ")) << msg;
    for (const std::string &s : e.must_contain) {
        EXPECT_NE(msg.find(s), std::string::npos) << "'" << msg << "' does not name " << s;
    }
}

INSTANTIATE_TEST_SUITE_P(Ops, BuilderErrorTest, ::testing::ValuesIn(builder_errors()),
                         [](const ::testing::TestParamInfo<BuilderError> &info) {
                             return std::string(info.param.name);
                         });

TEST(ContextErrors, OverBudgetThrowsWithoutWritingPastTheArena) {
    Context ctx({.mem_size = 4096});
    const std::string msg = error_of([&] { ctx.new_tensor(DType::F32, {1 << 20}); });
    EXPECT_TRUE(starts_with(msg, "[context] ")) << msg;
    EXPECT_LE(ctx.used(), ctx.size());
    // The arena is still usable, and small tensors fill it up to the budget, then throw.
    Tensor *small = ctx.new_tensor(DType::F32, {4});
    ASSERT_NE(small->data, nullptr);
    std::memset(small->data, 0, small->nbytes());
    int made = 0;
    const std::string full = error_of([&] {
        for (int i = 0; i < 1000; ++i, ++made) {
            Tensor *t = ctx.new_tensor(DType::F32, {16});
            std::memset(t->data, 0x7F, t->nbytes());  // ASan would catch a write past the arena
        }
    });
    EXPECT_TRUE(starts_with(full, "[context] ")) << full;
    EXPECT_GT(made, 0);
    EXPECT_LT(made, 1000);
    EXPECT_LE(ctx.used(), ctx.size());
}

TEST(ContextErrors, MetadataOnlyContextRunsOutToo) {
    Context ctx({.mem_size = 2048, .no_alloc = true});
    const std::string msg = error_of([&] {
        for (int i = 0; i < 1000; ++i) ctx.new_tensor(DType::F32, {1 << 20});
    });
    EXPECT_TRUE(starts_with(msg, "[context] ")) << msg;
    EXPECT_LE(ctx.used(), ctx.size());
}

TEST(ContextErrors, GraphThatDoesNotFitThrows) {
    Context ctx({.mem_size = 4096});
    const std::string msg = error_of([&] { new_graph(ctx, kDefaultGraphSize); });
    EXPECT_TRUE(starts_with(msg, "[context] ")) << msg;
    EXPECT_LE(ctx.used(), ctx.size());
}

TEST(ContextErrors, BadTensorShapesThrow) {
    Context ctx;
    const int64_t five[] = {1, 1, 1, 1, 1};
    EXPECT_TRUE(starts_with(error_of([&] { ctx.new_tensor(DType::F32, five); }), "[tensor] "));
    EXPECT_TRUE(starts_with(error_of([&] { ctx.new_tensor(DType::F32, {4, -1}); }), "[tensor] "));
    EXPECT_TRUE(starts_with(error_of([] { Context empty({.mem_size = 0}); }), "[context] "));
}

TEST(GraphErrors, OverNodeBudgetThrows) {
    Context ctx;
    Tensor *t = ctx.new_tensor(DType::F32, {4});
    for (int i = 0; i < 9; ++i) t = scale(ctx, t, 1.0f);
    Graph *g = new_graph(ctx, 8);
    const std::string msg = error_of([&] { build_forward_expand(g, t); });
    EXPECT_TRUE(starts_with(msg, "[graph] ")) << msg;
    EXPECT_NE(msg.find("8"), std::string::npos) << msg;
    EXPECT_TRUE(starts_with(error_of([&] { new_graph(ctx, 0); }), "[graph] "));
}

TEST(CpuErrors, NodeWithoutMemoryThrows) {
    Context ctx({.no_alloc = true});
    Tensor *x = set_name(ctx.new_tensor(DType::F32, {8}), "x");
    Tensor *y = set_name(scale(ctx, x, 2.0f), "y");
    ASSERT_EQ(y->data, nullptr);
    Graph *g = new_graph(ctx);
    build_forward_expand(g, y);
    const std::string msg = error_of([&] { test::compute_on_cpu(*g, 2); });
    EXPECT_TRUE(starts_with(msg, "[cpu] ")) << msg;
    EXPECT_NE(msg.find("'y' F32 [8, 1, 1, 1]"), std::string::npos) << msg;
}

TEST(CpuErrors, SourceWithoutMemoryThrows) {
    Context meta({.no_alloc = true});
    Context ctx;
    Tensor *x = set_name(meta.new_tensor(DType::F32, {8}), "unplaced");
    Tensor *y = scale(ctx, x, 2.0f);
    ASSERT_NE(y->data, nullptr);
    Graph *g = new_graph(ctx);
    build_forward_expand(g, y);
    const std::string msg = error_of([&] { test::compute_on_cpu(*g, 1); });
    EXPECT_TRUE(starts_with(msg, "[cpu] ")) << msg;
    EXPECT_NE(msg.find("'unplaced'"), std::string::npos) << msg;
}

TEST(CpuErrors, NothingRunsBeforeTheCheckFails) {
    Context ctx;
    Context meta({.no_alloc = true});
    Tensor *x = ctx.new_tensor(DType::F32, {8});
    for (int i = 0; i < 8; ++i) static_cast<float *>(x->data)[i] = float(i);
    Tensor *first = scale(ctx, x, 2.0f);        // has memory
    Tensor *second = scale(meta, first, 3.0f);  // has none
    std::memset(first->data, 0x5A, first->nbytes());
    Graph *g = new_graph(ctx);
    build_forward_expand(g, second);
    const std::string msg = error_of([&] { test::compute_on_cpu(*g, 2); });
    EXPECT_TRUE(starts_with(msg, "[cpu] ")) << msg;
    const auto *bytes = static_cast<const unsigned char *>(first->data);
    for (size_t i = 0; i < first->nbytes(); ++i) ASSERT_EQ(bytes[i], 0x5A) << "byte " << i;
}

}  // namespace
}  // namespace loom
