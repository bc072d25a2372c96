// Harness cases for the row reductions and sorts: sum_rows, mean, argmax, argsort,
// argsort_top_k. Integer results are compared exactly, on inputs whose ties (where there are
// any) exercise the documented tie rules.
#include "tests/core/op_harness.h"

namespace loom::test {
namespace {

struct ReduceShape {
    Shape4 ne;
    Layout layout = Layout::contiguous;
};

void add_sum_cases(std::vector<OpCase> &cases) {
    const ReduceShape shapes[] = {
        {{257, 3, 2, 1}},
        {{1, 5, 1, 1}},
        {{17, 3, 2, 3}},
        {{17, 3, 2, 1}, Layout::permuted},
        {{17, 3, 1, 1}, Layout::transposed},
        {{33, 4, 2, 1}, Layout::strided},
    };
    for (const bool is_mean : {false, true}) {
        for (const ReduceShape &s : shapes) {
            cases.push_back({
                .name = std::string(is_mean ? "mean" : "sum_rows") + "_f32_" + shape_tag(s.ne) +
                        layout_tag(s.layout),
                .build =
                    [s, is_mean](CaseEnv &env) {
                        // Offset from zero so the sums are not tiny compared with their terms.
                        Tensor *a = env.input(DType::F32, s.ne, s.layout, -0.5, 1.0);
                        return is_mean ? mean(env.ctx, a) : sum_rows(env.ctx, a);
                    },
                .reference = [is_mean](const CaseEnv &env,
                                       Dense &out) { ref_sum_rows(env.t[0], is_mean, out); },
            });
        }
    }
}

// Each row a shuffled set of distinct values (or, with n_levels > 0, values drawn from
// n_levels levels so ties occur), written through the view's strides.
Tensor *sortable_input(CaseEnv &env, const Shape4 &ne, Layout layout, int n_levels) {
    Tensor *a = env.input(DType::F32, ne, layout);
    for_each_index({1, ne[1], ne[2], ne[3]}, [&](int64_t, int64_t i1, int64_t i2, int64_t i3) {
        const std::vector<double> perm = env.permutation(ne[0]);
        for (int64_t i0 = 0; i0 < ne[0]; ++i0) {
            const double v = n_levels > 0 ? double(int64_t(perm[size_t(i0)]) % n_levels)
                                          : perm[size_t(i0)] * 0.25 - double(ne[0]) / 8.0;
            env.set(a, i0, i1, i2, i3, v);
        }
    });
    return a;
}

void add_argmax_cases(std::vector<OpCase> &cases) {
    struct ArgmaxShape {
        Shape4 ne;
        Layout layout;
        int n_levels;  // 0: distinct values
    };
    const ArgmaxShape shapes[] = {
        {{17, 5, 1, 1}, Layout::contiguous, 0}, {{257, 3, 1, 1}, Layout::contiguous, 0},
        {{1, 4, 1, 1}, Layout::contiguous, 0},  {{17, 5, 1, 1}, Layout::transposed, 0},
        {{33, 4, 1, 1}, Layout::strided, 0},    {{9, 6, 1, 1}, Layout::contiguous, 3},
    };
    for (const ArgmaxShape &s : shapes) {
        cases.push_back({
            .name = "argmax_f32_" + shape_tag(s.ne) + layout_tag(s.layout) +
                    (s.n_levels ? "_ties" : ""),
            .build =
                [s](CaseEnv &env) {
                    return argmax(env.ctx, sortable_input(env, s.ne, s.layout, s.n_levels));
                },
            .reference = [](const CaseEnv &env, Dense &out) { ref_argmax(env.t[0], out); },
            .exact = true,
        });
    }
}

void add_argsort_cases(std::vector<OpCase> &cases) {
    struct SortShape {
        Shape4 ne;
        Layout layout;
        int n_levels;
    };
    const SortShape shapes[] = {
        {{17, 3, 2, 1}, Layout::contiguous, 0}, {{257, 2, 1, 1}, Layout::contiguous, 0},
        {{1, 3, 1, 1}, Layout::contiguous, 0},  {{17, 3, 2, 1}, Layout::permuted, 0},
        {{16, 3, 1, 1}, Layout::transposed, 0}, {{9, 4, 2, 1}, Layout::contiguous, 3},
    };
    for (const SortOrder order : {SortOrder::ascending, SortOrder::descending}) {
        const bool desc = order == SortOrder::descending;
        for (const SortShape &s : shapes) {
            cases.push_back({
                .name = std::string("argsort_") + (desc ? "desc" : "asc") + "_f32_" +
                        shape_tag(s.ne) + layout_tag(s.layout) + (s.n_levels ? "_ties" : ""),
                .build =
                    [s, order](CaseEnv &env) {
                        return argsort(env.ctx, sortable_input(env, s.ne, s.layout, s.n_levels),
                                       order);
                    },
                .reference = [desc](const CaseEnv &env,
                                    Dense &out) { ref_argsort(env.t[0], desc, out); },
                .exact = true,
            });
        }
    }
}

void add_top_k_cases(std::vector<OpCase> &cases) {
    struct TopKShape {
        Shape4 ne;
        int k;
        Layout layout = Layout::contiguous;
    };
    const TopKShape shapes[] = {
        {{17, 3, 2, 1}, 1},   {{17, 3, 2, 1}, 3}, {{17, 3, 2, 1}, 17},
        {{257, 2, 1, 1}, 10}, {{1, 4, 1, 1}, 1},  {{33, 3, 2, 1}, 5, Layout::permuted},
    };
    for (const TopKShape &s : shapes) {
        cases.push_back({
            .name = "argsort_top_k_f32_" + shape_tag(s.ne) + "_k" + std::to_string(s.k) +
                    layout_tag(s.layout),
            .build =
                [s](CaseEnv &env) {
                    return argsort_top_k(env.ctx, sortable_input(env, s.ne, s.layout, 0), s.k);
                },
            .reference = [s](const CaseEnv &env, Dense &out) { ref_top_k(env.t[0], s.k, out); },
            .exact = true,
        });
    }
}

}  // namespace

std::vector<OpCase> reduce_cases() {
    std::vector<OpCase> cases;
    add_sum_cases(cases);
    add_argmax_cases(cases);
    add_argsort_cases(cases);
    add_top_k_cases(cases);
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Reduce, OpTest, ::testing::ValuesIn(reduce_cases()), case_name);

}  // namespace loom::test
