// Harness cases for normalisation and rotations: norm, rms_norm, rope_ext (normal and NeoX,
// partial rotation, freq_factors, YaRN, freq_scale, attn_factor, strided input) and hadamard.
#include "tests/core/op_harness.h"

namespace loom::test {
namespace {

void add_norm_cases(std::vector<OpCase> &cases) {
    struct NormShape {
        Shape4 ne;
        float eps;
        Layout layout = Layout::contiguous;
    };
    const NormShape shapes[] = {
        {{257, 3, 1, 1}, 1e-5f},
        {{17, 3, 2, 1}, 1e-6f, Layout::permuted},
        {{64, 4, 2, 1}, 1e-5f, Layout::transposed},
        {{3, 5, 1, 1}, 1e-5f},
        {{33, 4, 2, 3}, 0.0f, Layout::strided},
        {{4096, 2, 1, 1}, 1e-5f},
    };
    for (const bool rms : {false, true}) {
        for (const NormShape &s : shapes) {
            cases.push_back({
                .name = std::string(rms ? "rms_norm" : "norm") + "_f32_" + shape_tag(s.ne) +
                        layout_tag(s.layout) + (s.eps == 0.0f ? "_eps0" : ""),
                .build =
                    [s, rms](CaseEnv &env) {
                        Tensor *a = env.input(DType::F32, s.ne, s.layout, -2.0, 3.0);
                        return rms ? rms_norm(env.ctx, a, s.eps) : norm(env.ctx, a, s.eps);
                    },
                .reference = [s, rms](const CaseEnv &env,
                                      Dense &out) { ref_norm(env.t[0], s.eps, rms, out); },
            });
        }
    }
    // A single element per row: rms_norm gives about sign(x).
    cases.push_back({
        .name = "rms_norm_f32_1x4x1x1",
        .build =
            [](CaseEnv &env) {
                return rms_norm(env.ctx, env.input(DType::F32, {1, 4, 1, 1}), 1e-6f);
            },
        .reference = [](const CaseEnv &env, Dense &out) { ref_norm(env.t[0], 1e-6, true, out); },
    });
}

struct RopeShape {
    const char *tag;
    int64_t head_dim, n_head, n_tokens;
    RopeParams params;
    bool freq_factors = false;
    bool permuted = false;  // input is a permute(0, 2, 1, 3) view
    int64_t ne3 = 1;        // dim 3 shares the positions
};

std::vector<RopeShape> rope_shapes() {
    const RopeMode normal = RopeMode::normal, neox = RopeMode::neox;
    return {
        {"normal", 64, 4, 5, {.n_dims = 64, .mode = normal}},
        {"neox", 64, 4, 5, {.n_dims = 64, .mode = neox}},
        {"normal_partial", 64, 3, 4, {.n_dims = 32, .mode = normal}},
        {"neox_partial", 40, 3, 4, {.n_dims = 24, .mode = neox}},
        {"normal_ff", 64, 2, 6, {.n_dims = 64, .mode = normal}, true},
        {"neox_ff_partial", 80, 2, 3, {.n_dims = 64, .mode = neox}, true},
        {"normal_yarn",
         64,
         4,
         5,
         {.n_dims = 64, .mode = normal, .n_ctx_orig = 64, .freq_scale = 0.25f, .ext_factor = 1.0f}},
        {"neox_yarn",
         64,
         2,
         7,
         {.n_dims = 64,
          .mode = neox,
          .n_ctx_orig = 4096,
          .freq_scale = 0.5f,
          .ext_factor = 0.5f,
          .attn_factor = 0.8f}},
        {"neox_yarn_ff_partial",
         48,
         2,
         4,
         {.n_dims = 32,
          .mode = neox,
          .n_ctx_orig = 256,
          .freq_base = 500000.0f,
          .freq_scale = 0.125f,
          .ext_factor = 1.0f,
          .beta_fast = 16.0f,
          .beta_slow = 2.0f},
         true},
        {"normal_freq_scale", 32, 3, 5, {.n_dims = 32, .mode = normal, .freq_scale = 0.5f}},
        {"neox_attn_factor", 32, 3, 5, {.n_dims = 32, .mode = neox, .attn_factor = 1.5f}},
        {"normal_base500k", 128, 2, 3, {.n_dims = 128, .mode = normal, .freq_base = 500000.0f}},
        {"normal_perm", 64, 4, 5, {.n_dims = 64, .mode = normal}, false, true},
        {"neox_perm_yarn",
         64,
         3,
         4,
         {.n_dims = 48, .mode = neox, .n_ctx_orig = 128, .freq_scale = 0.25f, .ext_factor = 1.0f},
         false,
         true},
        {"normal_tiny", 2, 1, 1, {.n_dims = 2, .mode = normal}},
        {"normal_ne3", 32, 3, 4, {.n_dims = 32, .mode = normal}, false, false, 2},
        {"neox_ne3_perm_ff",
         64,
         2,
         5,
         {.n_dims = 48, .mode = neox, .n_ctx_orig = 128, .freq_scale = 0.5f, .ext_factor = 1.0f},
         true,
         true,
         3},
        {"neox_odd_heads", 18, 3, 17, {.n_dims = 10, .mode = neox}},
    };
}

void add_rope_cases(std::vector<OpCase> &cases) {
    for (const RopeShape &s : rope_shapes()) {
        cases.push_back({
            .name = std::string("rope_") + s.tag + "_d" + std::to_string(s.head_dim) + "_n" +
                    std::to_string(s.params.n_dims) + "_h" + std::to_string(s.n_head) + "_t" +
                    std::to_string(s.n_tokens) + (s.ne3 > 1 ? "x" + std::to_string(s.ne3) : ""),
            .build =
                [s](CaseEnv &env) {
                    const Shape4 ne = {s.head_dim, s.n_head, s.n_tokens, s.ne3};
                    Tensor *a = env.input(DType::F32, ne,
                                          s.permuted ? Layout::permuted : Layout::contiguous);
                    // Distinct positions in [0, 40), not in order.
                    std::vector<double> pos = env.permutation(40);
                    pos.resize(size_t(s.n_tokens));
                    Tensor *tpos = env.values(DType::I32, {s.n_tokens, 1, 1, 1}, pos);
                    Tensor *ff = nullptr;
                    if (s.freq_factors) {
                        ff = env.input(DType::F32, {s.params.n_dims / 2, 1, 1, 1},
                                       Layout::contiguous, 1.0, 4.0);
                    }
                    return rope_ext(env.ctx, a, tpos, s.params, ff);
                },
            .reference =
                [s](const CaseEnv &env, Dense &out) {
                    ref_rope(env.t[0], env.t[1], s.freq_factors ? env.t[2] : nullptr, s.params,
                             out);
                },
        });
    }
}

// Runs of 64 and 128 (a quantized KV cache's K and V heads), the smallest run, a permuted input.
void add_hadamard_cases(std::vector<OpCase> &cases) {
    struct HadamardShape {
        Shape4 ne;
        int64_t n;
        Layout layout = Layout::contiguous;
    };
    const HadamardShape shapes[] = {
        {{128, 3, 2, 1}, 64},
        {{128, 2, 5, 1}, 128},
        {{256, 1, 3, 2}, 128},
        {{6, 4, 1, 1}, 2},
        {{64, 3, 4, 1}, 64, Layout::permuted},
    };
    for (const HadamardShape &s : shapes) {
        cases.push_back({
            .name =
                "hadamard_" + std::to_string(s.n) + "_" + shape_tag(s.ne) + layout_tag(s.layout),
            .build =
                [s](CaseEnv &env) {
                    return hadamard(env.ctx, env.input(DType::F32, s.ne, s.layout, -2.0, 2.0), s.n);
                },
            .reference = [s](const CaseEnv &env, Dense &out) { ref_hadamard(env.t[0], s.n, out); },
        });
    }
}

}  // namespace

std::vector<OpCase> nn_cases() {
    std::vector<OpCase> cases;
    add_norm_cases(cases);
    add_rope_cases(cases);
    add_hadamard_cases(cases);
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Norm, OpTest, ::testing::ValuesIn(nn_cases()), case_name);

}  // namespace loom::test
