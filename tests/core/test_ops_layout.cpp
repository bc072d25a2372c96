// Harness cases for data movement: repeat, concat, pad, cont, cast / cpy (also into strided
// destinations, where the whole destination buffer is checked), get_rows and set_rows.
#include "tests/core/op_harness.h"

namespace loom::test {
namespace {

void add_repeat_cases(std::vector<OpCase> &cases) {
    struct RepeatShape {
        DType type;
        Shape4 a, to;
        Layout layout = Layout::contiguous;
    };
    const RepeatShape shapes[] = {
        {DType::F32, {3, 2, 1, 1}, {6, 4, 3, 2}},
        {DType::F32, {1, 1, 1, 1}, {17, 3, 2, 1}},
        {DType::F32, {17, 3, 2, 1}, {17, 3, 2, 1}},
        {DType::F32, {5, 3, 2, 1}, {10, 3, 4, 1}, Layout::permuted},
        {DType::F32, {3, 5, 1, 1}, {6, 5, 2, 1}, Layout::transposed},
        {DType::F16, {3, 2, 1, 1}, {9, 4, 1, 2}},
        {DType::BF16, {4, 1, 2, 1}, {8, 3, 2, 1}, Layout::strided},
    };
    for (const RepeatShape &s : shapes) {
        cases.push_back({
            .name = std::string("repeat_") + dtype_tag(s.type) + "_" + shape_tag(s.a) +
                    layout_tag(s.layout) + "_to_" + shape_tag(s.to),
            .build =
                [s](CaseEnv &env) {
                    Tensor *a = env.input(s.type, s.a, s.layout);
                    Tensor *like = env.ctx.new_tensor(s.type, {s.to[0], s.to[1], s.to[2], s.to[3]});
                    return repeat(env.ctx, a, like);
                },
            .reference = [](const CaseEnv &env, Dense &out) { ref_repeat(env.t[0], out); },
        });
    }
}

void add_concat_cases(std::vector<OpCase> &cases) {
    struct ConcatShape {
        DType type;
        Shape4 a;
        int64_t b_len;  // b's size along dim
        Layout a_layout = Layout::contiguous, b_layout = Layout::contiguous;
    };
    const ConcatShape shapes[] = {
        {DType::F32, {3, 4, 2, 2}, 5},
        {DType::F32, {17, 1, 3, 1}, 1},
        {DType::F32, {5, 3, 2, 2}, 2, Layout::permuted, Layout::transposed},
        {DType::F16, {4, 3, 2, 1}, 3, Layout::contiguous, Layout::strided},
    };
    for (int dim = 0; dim < 4; ++dim) {
        for (const ConcatShape &s : shapes) {
            Shape4 b = s.a;
            b[size_t(dim)] = s.b_len;
            cases.push_back({
                .name = std::string("concat_dim") + std::to_string(dim) + "_" + dtype_tag(s.type) +
                        "_" + shape_tag(s.a) + layout_tag(s.a_layout) + "_" + shape_tag(b) +
                        layout_tag(s.b_layout),
                .build =
                    [s, b, dim](CaseEnv &env) {
                        Tensor *ta = env.input(s.type, s.a, s.a_layout);
                        Tensor *tb = env.input(s.type, b, s.b_layout);
                        return concat(env.ctx, ta, tb, dim);
                    },
                .reference = [dim](const CaseEnv &env,
                                   Dense &out) { ref_concat(env.t[0], env.t[1], dim, out); },
            });
        }
    }
}

void add_pad_cases(std::vector<OpCase> &cases) {
    struct PadShape {
        Shape4 a;
        std::array<int, 4> p;
        Layout layout = Layout::contiguous;
    };
    const PadShape shapes[] = {
        {{3, 4, 2, 1}, {2, 1, 1, 1}},
        {{17, 1, 1, 1}, {0, 3, 0, 0}},
        {{1, 1, 1, 1}, {1, 1, 1, 1}},
        {{5, 3, 2, 1}, {1, 2, 0, 0}, Layout::permuted},
        {{4, 3, 2, 1}, {3, 0, 1, 0}, Layout::transposed},
    };
    for (const PadShape &s : shapes) {
        cases.push_back({
            .name = "pad_f32_" + shape_tag(s.a) + layout_tag(s.layout) + "_p" +
                    std::to_string(s.p[0]) + std::to_string(s.p[1]) + std::to_string(s.p[2]) +
                    std::to_string(s.p[3]),
            .build =
                [s](CaseEnv &env) {
                    Tensor *a = env.input(DType::F32, s.a, s.layout);
                    return pad(env.ctx, a, s.p[0], s.p[1], s.p[2], s.p[3]);
                },
            .reference = [](const CaseEnv &env, Dense &out) { ref_pad(env.t[0], out); },
        });
    }
}

void add_cont_cases(std::vector<OpCase> &cases) {
    struct ContShape {
        DType type;
        Shape4 ne;
        std::array<int, 4> axes;
        const char *tag;
    };
    const ContShape shapes[] = {
        {DType::F32, {17, 3, 2, 1}, {0, 2, 1, 3}, "perm0213"},
        {DType::F32, {17, 3, 2, 1}, {1, 0, 2, 3}, "trans"},
        {DType::F16, {17, 3, 2, 1}, {1, 0, 2, 3}, "trans"},
        {DType::BF16, {17, 3, 2, 1}, {1, 0, 2, 3}, "trans"},
        {DType::F32, {17, 3, 5, 2}, {1, 2, 0, 3}, "perm1203"},
        {DType::F32, {4, 3, 2, 5}, {3, 2, 1, 0}, "perm3210"},
        {DType::F16, {257, 1, 3, 1}, {2, 0, 1, 3}, "perm2013"},
    };
    for (const ContShape &s : shapes) {
        cases.push_back({
            .name = std::string("cont_") + dtype_tag(s.type) + "_" + shape_tag(s.ne) + "_" + s.tag,
            .build =
                [s](CaseEnv &env) { return cont(env.ctx, env.permuted(s.type, s.ne, s.axes)); },
            .reference = [](const CaseEnv &env, Dense &out) { ref_copy_flat(env.t[0], out); },
        });
    }
    cases.push_back({
        .name = "cont_f32_33x4x3x2_strided",
        .build =
            [](CaseEnv &env) {
                return cont(env.ctx, env.input(DType::F32, {33, 4, 3, 2}, Layout::strided));
            },
        .reference = [](const CaseEnv &env, Dense &out) { ref_copy_flat(env.t[0], out); },
    });
}

void add_cast_cases(std::vector<OpCase> &cases) {
    struct CastShape {
        DType from, to;
        Shape4 ne;
        Layout layout = Layout::contiguous;
        double lo = -3.0, hi = 3.0;
        const char *tag = "";
    };
    const CastShape shapes[] = {
        {DType::F32, DType::F16, {17, 3, 2, 1}},
        {DType::F32, DType::F16, {257, 3, 1, 1}, Layout::permuted},
        {DType::F32, DType::F16, {33, 4, 1, 1}, Layout::contiguous, -7e4, 7e4, "_overflow"},
        {DType::F32, DType::F16, {33, 4, 1, 1}, Layout::contiguous, -1e-5, 1e-5, "_subnormal"},
        {DType::F16, DType::F32, {17, 3, 2, 1}, Layout::transposed},
        {DType::F32, DType::BF16, {17, 3, 2, 1}},
        {DType::F32, DType::BF16, {17, 3, 2, 1}, Layout::strided, -1e30, 1e30, "_large"},
        {DType::BF16, DType::F32, {17, 3, 2, 1}, Layout::permuted},
        {DType::F16, DType::BF16, {17, 3, 2, 1}},
        {DType::BF16, DType::F16, {17, 3, 2, 1}, Layout::transposed},
        {DType::F32, DType::F32, {1, 1, 1, 1}},
    };
    for (const CastShape &s : shapes) {
        cases.push_back({
            .name = std::string("cast_") + dtype_tag(s.from) + "_" + dtype_tag(s.to) + "_" +
                    shape_tag(s.ne) + layout_tag(s.layout) + s.tag,
            .build =
                [s](CaseEnv &env) {
                    return cast(env.ctx, env.input(s.from, s.ne, s.layout, s.lo, s.hi), s.to);
                },
            .reference = [](const CaseEnv &env, Dense &out) { ref_copy_flat(env.t[0], out); },
        });
    }
}

// Expected contents of `base` after copying a into `dst`, a view of base: every element of dst
// is located in base through dst's own strides and offset.
void ref_cpy_into_base(const Tensor *a, const Tensor *dst, const Tensor *base, Dense &out) {
    out = Dense(base);
    const Dense da(a);
    const size_t es = traits(base->type).type_size;
    size_t l = 0;
    for_each_index(shape_of(dst), [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
        const size_t byte = dst->view_offs + size_t(i0) * dst->nb[0] + size_t(i1) * dst->nb[1] +
                            size_t(i2) * dst->nb[2] + size_t(i3) * dst->nb[3];
        out.v[byte / es] = da.v[l++];
    });
}

void add_cpy_cases(std::vector<OpCase> &cases) {
    // Into views of a larger destination; the whole destination must match (gaps untouched).
    struct CpyShape {
        DType from, to;
        Shape4 ne;
        Layout src_layout;
        bool transposed_dst;  // else a window at an offset with padded rows
    };
    const CpyShape shapes[] = {
        {DType::F32, DType::F32, {17, 3, 2, 1}, Layout::contiguous, false},
        {DType::F32, DType::F16, {17, 3, 2, 1}, Layout::permuted, false},
        {DType::F16, DType::F32, {33, 4, 1, 1}, Layout::transposed, false},
        {DType::BF16, DType::F16, {17, 3, 2, 1}, Layout::contiguous, false},
        {DType::F32, DType::BF16, {5, 3, 2, 1}, Layout::contiguous, true},
        {DType::F32, DType::F32, {17, 3, 2, 1}, Layout::permuted, true},
        {DType::F16, DType::F16, {1, 1, 1, 1}, Layout::contiguous, false},
    };
    for (const CpyShape &s : shapes) {
        cases.push_back({
            .name = std::string("cpy_") + dtype_tag(s.from) + "_" + dtype_tag(s.to) + "_" +
                    shape_tag(s.ne) + layout_tag(s.src_layout) +
                    (s.transposed_dst ? "_into_transposed" : "_into_window"),
            .build =
                [s](CaseEnv &env) {
                    Tensor *a = env.input(s.from, s.ne, s.src_layout);
                    Tensor *dst = nullptr;
                    Tensor *base = nullptr;
                    if (s.transposed_dst) {
                        base = env.input(s.to, {s.ne[1], s.ne[0], s.ne[2], s.ne[3]});
                        dst = env.keep(transpose(env.ctx, base));
                    } else {
                        base = env.input(s.to, {s.ne[0] + 4, s.ne[1] + 1, s.ne[2], s.ne[3]});
                        const size_t offset = base->nb[1] + 2 * base->nb[0];
                        dst = env.keep(view_4d(env.ctx, base, s.ne[0], s.ne[1], s.ne[2], s.ne[3],
                                               base->nb[1], base->nb[2], base->nb[3], offset));
                    }
                    env.check = base;
                    return cpy(env.ctx, a, dst);
                },
            .reference = [](const CaseEnv &env,
                            Dense &out) { ref_cpy_into_base(env.t[0], env.t[2], env.t[1], out); },
        });
    }
    // Different shapes with the same element count copy in logical (row-major) order.
    cases.push_back({
        .name = "cpy_f32_f16_8x3x1x1_to_6x4x1x1",
        .build =
            [](CaseEnv &env) {
                Tensor *a = env.input(DType::F32, {8, 3, 1, 1});
                return cpy(env.ctx, a, env.ctx.new_tensor(DType::F16, {6, 4}));
            },
        .reference = [](const CaseEnv &env, Dense &out) { ref_copy_flat(env.t[0], out); },
    });
    cases.push_back({
        .name = "cpy_f32_f32_4x6x1x1_trans_to_24",
        .build =
            [](CaseEnv &env) {
                Tensor *a = env.input(DType::F32, {4, 6, 1, 1}, Layout::transposed);
                return cpy(env.ctx, a, env.ctx.new_tensor(DType::F32, {24}));
            },
        .reference = [](const CaseEnv &env, Dense &out) { ref_copy_flat(env.t[0], out); },
    });
    cases.push_back({
        .name = "cpy_i32_i32_5x3x2x1_perm",
        .build =
            [](CaseEnv &env) {
                Tensor *base = env.ctx.new_tensor(DType::I32, {5, 2, 3, 1});
                for_each_index(shape_of(base), [&](int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
                    env.set(base, i0, i1, i2, i3, std::floor(env.uniform(-1e6, 1e6)));
                });
                Tensor *a = env.keep(permute(env.ctx, base, 0, 2, 1, 3));
                return cpy(env.ctx, a, env.ctx.new_tensor(DType::I32, {5, 3, 2, 1}));
            },
        .reference = [](const CaseEnv &env, Dense &out) { ref_copy_flat(env.t[0], out); },
        .exact = true,
    });
}

// n random row indices in [0, n_rows) (repeats allowed) for each of n_batch batches.
std::vector<double> random_rows(CaseEnv &env, int64_t n, int64_t n_batch, int64_t n_rows) {
    std::vector<double> v;
    for (int64_t i = 0; i < n * n_batch; ++i) {
        v.push_back(double(std::uniform_int_distribution<int64_t>(0, n_rows - 1)(env.rng)));
    }
    return v;
}

void add_get_rows_cases(std::vector<OpCase> &cases) {
    struct GetRowsShape {
        DType type;
        Shape4 a;
        int64_t n;
        Layout layout = Layout::contiguous;
    };
    const GetRowsShape shapes[] = {
        {DType::F32, {17, 10, 1, 1}, 5},
        {DType::F16, {33, 7, 2, 1}, 4},
        {DType::BF16, {17, 5, 1, 1}, 6},
        {DType::I32, {9, 6, 1, 1}, 3},
        {DType::F32, {1, 5, 2, 3}, 7},
        {DType::F32, {257, 4, 1, 1}, 1},
        {DType::F32, {17, 10, 2, 1}, 4, Layout::permuted},
        {DType::F16, {16, 5, 2, 1}, 3, Layout::strided},
    };
    for (const GetRowsShape &s : shapes) {
        cases.push_back({
            .name = std::string("get_rows_") + dtype_tag(s.type) + "_" + shape_tag(s.a) +
                    layout_tag(s.layout) + "_n" + std::to_string(s.n),
            .build =
                [s](CaseEnv &env) {
                    Tensor *a = nullptr;
                    if (s.type == DType::I32) {
                        std::vector<double> v;
                        for (int64_t i = 0; i < count(s.a); ++i)
                            v.push_back(double(i * 7919 - 30000));
                        a = env.values(DType::I32, s.a, v);
                    } else {
                        a = env.input(s.type, s.a, s.layout);
                    }
                    Tensor *idx = env.values(DType::I32, {s.n, s.a[2], s.a[3], 1},
                                             random_rows(env, s.n, s.a[2] * s.a[3], s.a[1]));
                    return get_rows(env.ctx, a, idx);
                },
            .reference = [](const CaseEnv &env,
                            Dense &out) { ref_get_rows(env.t[0], env.t[1], out); },
            .exact = s.type == DType::I32,
        });
    }
}

void add_set_rows_cases(std::vector<OpCase> &cases) {
    struct SetRowsShape {
        DType dst_type, idx_type;
        Shape4 dst;
        int64_t n;       // rows written per batch
        int64_t c2, c3;  // index batch dims (broadcast over dst dims 2, 3)
        Layout b_layout = Layout::contiguous;
    };
    const SetRowsShape shapes[] = {
        {DType::F32, DType::I64, {17, 10, 1, 1}, 4, 1, 1},
        {DType::F32, DType::I32, {17, 10, 1, 1}, 10, 1, 1},
        {DType::F16, DType::I32, {33, 8, 2, 1}, 3, 2, 1},
        {DType::F16, DType::I64, {64, 8, 2, 1}, 1, 1, 1},
        {DType::F32, DType::I64, {17, 8, 4, 3}, 2, 2, 1},
        {DType::F16, DType::I32, {16, 6, 2, 2}, 3, 1, 1},
        {DType::F32, DType::I32, {17, 8, 2, 3}, 3, 2, 3, Layout::permuted},
        {DType::BF16, DType::I64, {17, 5, 1, 1}, 2, 1, 1},
        // rows of one element, as the transposed V cache writes them
        {DType::F16, DType::I64, {1, 300, 1, 1}, 200, 1, 1},
        {DType::F32, DType::I64, {1, 40, 1, 1}, 40, 1, 1},
        {DType::BF16, DType::I64, {1, 50, 1, 1}, 7, 1, 1},
        {DType::F16, DType::I32, {1, 30, 1, 1}, 9, 1, 1},
    };
    for (const SetRowsShape &s : shapes) {
        cases.push_back({
            .name = std::string("set_rows_") + dtype_tag(s.dst_type) + "_" + dtype_tag(s.idx_type) +
                    "_" + shape_tag(s.dst) + "_n" + std::to_string(s.n) + "_c" +
                    std::to_string(s.c2) + "x" + std::to_string(s.c3) + layout_tag(s.b_layout),
            .build =
                [s](CaseEnv &env) {
                    Tensor *dst = env.input(s.dst_type, s.dst);
                    Tensor *b = env.input(DType::F32, {s.dst[0], s.n, s.dst[2], s.dst[3]},
                                          s.b_layout, -4.0, 4.0);
                    // Distinct rows within each index batch: the write order does not matter.
                    std::vector<double> rows;
                    for (int64_t i = 0; i < s.c2 * s.c3; ++i) {
                        const std::vector<double> perm = env.permutation(s.dst[1]);
                        rows.insert(rows.end(), perm.begin(), perm.begin() + s.n);
                    }
                    Tensor *idx = env.values(s.idx_type, {s.n, s.c2, s.c3, 1}, rows);
                    return set_rows(env.ctx, dst, b, idx);
                },
            .reference = [](const CaseEnv &env,
                            Dense &out) { ref_set_rows(env.t[0], env.t[1], env.t[2], out); },
        });
    }
}

}  // namespace

std::vector<OpCase> layout_cases() {
    std::vector<OpCase> cases;
    add_repeat_cases(cases);
    add_concat_cases(cases);
    add_pad_cases(cases);
    add_cont_cases(cases);
    add_cast_cases(cases);
    add_cpy_cases(cases);
    add_get_rows_cases(cases);
    add_set_rows_cases(cases);
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Layout, OpTest, ::testing::ValuesIn(layout_cases()), case_name);

}  // namespace loom::test
