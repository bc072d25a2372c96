// Harness cases for attention: soft_max_ext (masks with -inf, broadcast mask dims, scale, ALiBi,
// sinks), diag_mask_inf and flash_attn_ext (GQA, F16 / F32 / BF16 K and V, masks, softcap,
// ALiBi, sinks, odd head sizes); and flash_attn_ext against the unfused mul_mat / soft_max path.
#include <cmath>
#include <limits>

#include "tests/core/op_harness.h"

namespace loom::test {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A mask [n_kv, n_rows, m2, m3] of values in [-1, 0]. causal_past >= 0: -inf where
// kv > causal_past + row (rows past n_q included); otherwise -inf at random with probability
// 0.3, never in column 0. Rows listed in `blocked` are -inf throughout.
Tensor *make_mask(CaseEnv &env, DType type, const Shape4 &ne, int64_t causal_past,
                  int64_t blocked_row = -1) {
    Tensor *m = env.ctx.new_tensor(type, {ne[0], ne[1], ne[2], ne[3]});
    for_each_index(ne, [&](int64_t j, int64_t i, int64_t i2, int64_t i3) {
        double v = env.uniform(-1.0, 0.0);
        if (causal_past >= 0) {
            if (j > causal_past + i) v = kNegInf;
        } else if (j > 0 && env.uniform(0.0, 1.0) < 0.3) {
            v = kNegInf;
        }
        if (i == blocked_row) v = kNegInf;
        env.set(m, j, i, i2, i3, v);
    });
    return env.keep(m);
}

struct SoftMaxShape {
    const char *tag;
    Shape4 a;
    DType mask_type = DType::F32;
    bool with_mask = false;
    Shape4 mask = {0, 0, 1, 1};  // [0] and [1] are taken from a (plus mask_pad rows)
    int64_t mask_pad = 0;
    float scale = 1.0f, max_bias = 0.0f;
    bool sinks = false;
    Layout layout = Layout::contiguous;
    int64_t blocked_row = -1;
};

std::vector<SoftMaxShape> soft_max_shapes() {
    const DType f16 = DType::F16, f32 = DType::F32;
    return {
        {"plain", {17, 3, 2, 1}},
        {"plain", {257, 4, 1, 1}},
        {"plain", {1, 3, 1, 1}},
        {"scale", {33, 5, 2, 1}, f32, false, {0, 0, 1, 1}, 0, 0.125f},
        {"mask", {17, 3, 2, 1}, f32, true},
        {"mask", {33, 4, 3, 1}, f16, true, {0, 0, 1, 1}, 3, 0.25f},
        {"mask_heads", {17, 3, 4, 1}, f16, true, {0, 0, 4, 1}},
        {"mask_bcast3", {17, 3, 2, 3}, f32, true, {0, 0, 1, 3}},
        {"mask_full", {9, 5, 2, 2}, f16, true, {0, 0, 2, 2}, 1},
        {"alibi", {17, 4, 4, 1}, f16, true, {0, 0, 1, 1}, 0, 0.5f, 8.0f},
        {"alibi", {17, 4, 6, 1}, f32, true, {0, 0, 1, 1}, 2, 1.0f, 8.0f},
        {"sinks", {17, 3, 4, 1}, f32, false, {0, 0, 1, 1}, 0, 1.0f, 0.0f, true},
        {"mask_sinks", {33, 5, 4, 1}, f16, true, {0, 0, 1, 1}, 0, 0.5f, 0.0f, true},
        {"alibi_sinks", {17, 4, 6, 2}, f16, true, {0, 0, 6, 1}, 0, 1.0f, 4.0f, true},
        {"mask_sinks_blocked",
         {17, 4, 2, 1},
         f32,
         true,
         {0, 0, 1, 1},
         0,
         1.0f,
         0.0f,
         true,
         Layout::contiguous,
         2},
        {"mask", {17, 3, 4, 1}, f16, true, {0, 0, 1, 1}, 0, 1.0f, 0.0f, false, Layout::permuted},
        {"plain", {17, 3, 2, 2}, f32, false, {0, 0, 1, 1}, 0, 1.0f, 0.0f, false, Layout::strided},
    };
}

void add_soft_max_cases(std::vector<OpCase> &cases) {
    for (const SoftMaxShape &s : soft_max_shapes()) {
        std::string name =
            std::string("soft_max_") + s.tag + "_" + shape_tag(s.a) + layout_tag(s.layout);
        if (s.with_mask) {
            name += std::string("_mask_") + dtype_tag(s.mask_type) + "_" +
                    std::to_string(s.mask[2]) + "x" + std::to_string(s.mask[3]);
        }
        cases.push_back({
            .name = name,
            .build =
                [s](CaseEnv &env) {
                    Tensor *a = env.input(DType::F32, s.a, s.layout, -3.0, 3.0);
                    Tensor *mask = nullptr;
                    if (s.with_mask) {
                        mask = make_mask(env, s.mask_type,
                                         {s.a[0], s.a[1] + s.mask_pad, s.mask[2], s.mask[3]}, -1,
                                         s.blocked_row);
                    }
                    Tensor *sinks = s.sinks ? env.input(DType::F32, {s.a[2], 1, 1, 1},
                                                        Layout::contiguous, -1.0, 2.0)
                                            : nullptr;
                    return soft_max_ext(env.ctx, a, mask,
                                        {.scale = s.scale, .max_bias = s.max_bias}, sinks);
                },
            .reference =
                [s](const CaseEnv &env, Dense &out) {
                    const Tensor *mask = s.with_mask ? env.t[1] : nullptr;
                    const Tensor *sinks = s.sinks ? env.t[s.with_mask ? 2 : 1] : nullptr;
                    ref_soft_max(env.t[0], mask, s.scale, s.max_bias, sinks, out);
                },
            .max_nmse = kNmseSoftMax,
        });
    }
}

void add_diag_mask_cases(std::vector<OpCase> &cases) {
    struct DiagShape {
        Shape4 a;
        int n_past;
        Layout layout = Layout::contiguous;
    };
    const DiagShape shapes[] = {
        {{8, 5, 2, 1}, 0}, {{10, 4, 3, 1}, 3},
        {{1, 1, 1, 1}, 0}, {{17, 3, 2, 2}, 2, Layout::permuted},
        {{5, 7, 1, 1}, 0}, {{33, 4, 1, 1}, 40},
    };
    for (const DiagShape &s : shapes) {
        cases.push_back({
            .name = "diag_mask_inf_f32_" + shape_tag(s.a) + layout_tag(s.layout) + "_past" +
                    std::to_string(s.n_past),
            .build =
                [s](CaseEnv &env) {
                    return diag_mask_inf(env.ctx, env.input(DType::F32, s.a, s.layout), s.n_past);
                },
            .reference = [s](const CaseEnv &env,
                             Dense &out) { ref_diag_mask_inf(env.t[0], s.n_past, out); },
        });
    }
}

struct FlashShape {
    const char *tag;
    int64_t D, Dv, n_q, n_kv, n_head, n_head_kv;
    DType kv_type = DType::F16;
    // 0 none, 1 causal F16, 2 causal F32, 3 random F16 with per-head dims, 4 causal F16 with a
    // sliding window of 50 positions (whole kv blocks hidden from some rows)
    int mask = 1;
    float scale = 0.0f;  // 0: 1/sqrt(D)
    float max_bias = 0.0f, softcap = 0.0f;
    bool sinks = false;
    int64_t ne3 = 1;
    bool permuted = false;  // q, k, v are permute(0, 2, 1, 3) views, as read from a KV cache
};

std::vector<FlashShape> flash_shapes() {
    const DType f16 = DType::F16, f32 = DType::F32, bf16 = DType::BF16;
    return {
        {"base", 64, 64, 7, 33, 4, 4},
        {"gqa2", 64, 64, 7, 33, 4, 2, f16},
        {"gqa4", 64, 64, 5, 40, 8, 2, f32},
        {"gqa4", 64, 64, 5, 40, 8, 2, f16, 2},
        {"f32kv", 64, 64, 7, 33, 4, 4, f32},
        {"bf16kv", 64, 64, 4, 17, 2, 1, bf16},
        {"nomask", 64, 64, 3, 17, 2, 2, f16, 0},
        {"decode", 64, 64, 1, 257, 4, 2, f16},
        {"one_kv", 64, 64, 1, 1, 2, 1, f32},
        {"softcap", 64, 64, 6, 20, 4, 2, f16, 1, 0.5f, 0.0f, 2.0f},
        {"alibi", 64, 64, 5, 21, 6, 3, f16, 1, 0.0f, 8.0f},
        {"alibi_softcap", 32, 32, 4, 12, 4, 4, f32, 3, 0.2f, 4.0f, 5.0f},
        {"sinks", 64, 64, 5, 19, 4, 2, f16, 1, 0.0f, 0.0f, 0.0f, true},
        {"sinks_nomask", 64, 64, 3, 9, 4, 4, f32, 0, 0.0f, 0.0f, 0.0f, true},
        {"mask_heads", 64, 64, 4, 16, 4, 2, f16, 3},
        {"odd", 17, 17, 5, 23, 3, 1, f16},
        {"odd", 3, 3, 2, 5, 2, 2, f32},
        {"dv", 40, 24, 4, 18, 4, 2, f16},
        {"batch3", 32, 32, 3, 10, 2, 1, f16, 1, 0.0f, 0.0f, 0.0f, false, 2},
        {"perm", 64, 64, 6, 24, 4, 2, f16, 1, 0.0f, 0.0f, 0.0f, false, 1, true},
        {"perm_gqa4_sinks", 64, 64, 3, 20, 8, 2, f32, 2, 0.0f, 2.0f, 0.0f, true, 1, true},
        {"long", 64, 64, 37, 150, 8, 2, f16},
        {"window", 64, 64, 21, 200, 4, 1, f16, 4},
        {"window_sinks", 32, 32, 9, 130, 4, 2, f32, 4, 0.0f, 0.0f, 0.0f, true},
        // A quantized KV cache: every block format llama.cpp allows for K and V.
        {"q8_0kv", 64, 64, 7, 70, 4, 2, DType::Q8_0},
        {"q4_0kv", 64, 64, 1, 130, 8, 2, DType::Q4_0},
        {"q4_1kv", 64, 64, 5, 33, 4, 4, DType::Q4_1},
        {"q5_0kv", 128, 128, 3, 40, 4, 1, DType::Q5_0},
        {"q5_1kv", 64, 64, 4, 65, 4, 2, DType::Q5_1, 2},
        {"iq4_nlkv", 64, 64, 6, 37, 4, 2, DType::IQ4_NL},
        {"q8_0kv_softcap_sinks", 32, 32, 5, 20, 4, 2, DType::Q8_0, 1, 0.0f, 0.0f, 3.0f, true},
    };
}

void add_flash_cases(std::vector<OpCase> &cases) {
    for (const FlashShape &s : flash_shapes()) {
        const char *mask_tag[] = {"_nomask", "_causal_f16", "_causal_f32", "_random_f16",
                                  "_window_f16"};
        cases.push_back({
            .name = std::string("flash_attn_ext_") + s.tag + "_D" + std::to_string(s.D) + "_Dv" +
                    std::to_string(s.Dv) + "_q" + std::to_string(s.n_q) + "_kv" +
                    std::to_string(s.n_kv) + "_h" + std::to_string(s.n_head) + "x" +
                    std::to_string(s.n_head_kv) + "_" + dtype_tag(s.kv_type) + mask_tag[s.mask] +
                    (s.ne3 > 1 ? "_b" + std::to_string(s.ne3) : ""),
            .build =
                [s](CaseEnv &env) {
                    const Layout l = s.permuted ? Layout::permuted : Layout::contiguous;
                    Tensor *q = env.input(DType::F32, {s.D, s.n_q, s.n_head, s.ne3}, l);
                    Tensor *k = env.input(s.kv_type, {s.D, s.n_kv, s.n_head_kv, s.ne3}, l);
                    Tensor *v = env.input(s.kv_type, {s.Dv, s.n_kv, s.n_head_kv, s.ne3}, l);
                    Tensor *mask = nullptr;
                    if (s.mask == 1 || s.mask == 2) {
                        // Causal over a past of n_kv - n_q, rows padded to a multiple of 8.
                        const int64_t rows = (s.n_q + 7) / 8 * 8;
                        mask = make_mask(env, s.mask == 1 ? DType::F16 : DType::F32,
                                         {s.n_kv, rows, 1, 1}, s.n_kv - s.n_q);
                    } else if (s.mask == 3) {
                        mask = make_mask(env, DType::F16, {s.n_kv, s.n_q, s.n_head, 1}, -1);
                    } else if (s.mask == 4) {
                        const int64_t n_past = s.n_kv - s.n_q;
                        mask = make_mask(env, DType::F16, {s.n_kv, s.n_q, 1, 1}, n_past);
                        for_each_index(shape_of(mask), [&](int64_t j, int64_t i, int64_t, int64_t) {
                            if (j <= n_past + i - 50) env.set(mask, j, i, 0, 0, kNegInf);
                        });
                    }
                    Tensor *sinks = s.sinks ? env.input(DType::F32, {s.n_head, 1, 1, 1},
                                                        Layout::contiguous, -1.0, 2.0)
                                            : nullptr;
                    const float scale = s.scale != 0.0f ? s.scale : 1.0f / std::sqrt(float(s.D));
                    return flash_attn_ext(
                        env.ctx, q, k, v, mask,
                        {.scale = scale, .max_bias = s.max_bias, .logit_softcap = s.softcap},
                        sinks);
                },
            .reference =
                [s](const CaseEnv &env, Dense &out) {
                    const Tensor *mask = s.mask != 0 ? env.t[3] : nullptr;
                    const Tensor *sinks = s.sinks ? env.t[s.mask != 0 ? 4 : 3] : nullptr;
                    const double scale =
                        s.scale != 0.0f ? double(s.scale) : double(1.0f / std::sqrt(float(s.D)));
                    ref_flash_attn(env.t[0], env.t[1], env.t[2], mask, sinks,
                                   {.scale = scale, .max_bias = s.max_bias, .softcap = s.softcap},
                                   out);
                },
            .max_nmse = kNmseMatMul,
        });
    }
}

}  // namespace

std::vector<OpCase> attention_cases() {
    std::vector<OpCase> cases;
    add_soft_max_cases(cases);
    add_diag_mask_cases(cases);
    add_flash_cases(cases);
    return cases;
}

INSTANTIATE_TEST_SUITE_P(Attention, OpTest, ::testing::ValuesIn(attention_cases()), case_name);

// ---------------------------------------------------------------------------------------------
// flash_attn_ext against the unfused path on random causal inputs.

struct NaiveCase {
    int64_t gqa;  // n_head / n_head_kv
    DType kv_type;
};

class FlashVsNaive : public ::testing::TestWithParam<NaiveCase> {};

TEST_P(FlashVsNaive, AgreesWithMulMatSoftMaxPath) {
    const NaiveCase p = GetParam();
    const int64_t D = 64, Dv = 64, n_q = 9, n_past = 16, n_kv = n_q + n_past, n_head = 8;
    const int64_t n_head_kv = n_head / p.gqa;
    const float scale = 1.0f / std::sqrt(float(D));

    Context ctx({.mem_size = 32u << 20});
    CaseEnv env(ctx, 1234u + uint32_t(p.gqa));
    Tensor *q = env.input(DType::F32, {D, n_q, n_head, 1});
    Tensor *k = env.input(p.kv_type, {D, n_kv, n_head_kv, 1});
    Tensor *v = env.input(p.kv_type, {Dv, n_kv, n_head_kv, 1});
    Tensor *mask = make_mask(env, DType::F16, {n_kv, n_q, 1, 1}, n_past);
    // Keep the causal mask 0 / -inf, as the model code builds it.
    for_each_index(shape_of(mask), [&](int64_t j, int64_t i, int64_t, int64_t) {
        if (j <= n_past + i) env.set(mask, j, i, 0, 0, 0.0);
    });

    Tensor *kq = mul_mat(ctx, k, q);                     // F32 [n_kv, n_q, n_head]
    kq = soft_max_ext(ctx, kq, mask, {.scale = scale});  // F32 [n_kv, n_q, n_head]
    Tensor *vt = cont(ctx, transpose(ctx, v));           // [n_kv, Dv, n_head_kv]
    Tensor *kqv = mul_mat(ctx, vt, kq);                  // F32 [Dv, n_q, n_head]
    Tensor *naive = permute(ctx, kqv, 0, 2, 1, 3);       // F32 [Dv, n_head, n_q]
    Tensor *fused = flash_attn_ext(ctx, q, k, v, mask, {.scale = scale});  // F32 [Dv, n_head, n_q]
    ASSERT_EQ(shape_of(naive), shape_of(fused));

    Graph *graph = new_graph(ctx);
    build_forward_expand(graph, naive);
    build_forward_expand(graph, fused);
    ASSERT_NO_THROW(compute_on_cpu(*graph, 2));

    const Dense a(naive), b(fused);
    double num = 0.0, den = 0.0;
    size_t n_nan = 0;
    for (size_t i = 0; i < a.v.size(); ++i) {
        if (std::isnan(a.v[i]) || std::isnan(b.v[i])) {
            ++n_nan;
            continue;
        }
        num += (b.v[i] - a.v[i]) * (b.v[i] - a.v[i]);
        den += a.v[i] * a.v[i];
    }
    EXPECT_EQ(n_nan, 0u);
    ASSERT_GT(den, 0.0);
    EXPECT_LE(num / den, kNmseMatMul);
}

INSTANTIATE_TEST_SUITE_P(Attention, FlashVsNaive,
                         ::testing::Values(NaiveCase{1, DType::F16}, NaiveCase{2, DType::F16},
                                           NaiveCase{4, DType::F16}, NaiveCase{1, DType::F32},
                                           NaiveCase{2, DType::F32}, NaiveCase{4, DType::F32}),
                         [](const ::testing::TestParamInfo<NaiveCase> &info) {
                             return "gqa" + std::to_string(info.param.gqa) + "_" +
                                    dtype_tag(info.param.kv_type);
                         });

}  // namespace loom::test
