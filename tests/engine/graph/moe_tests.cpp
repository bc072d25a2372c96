// build_moe_ffn for each gating function, with and without the selection bias, expert groups,
// weight normalisation and scale, separate or merged gate/up experts: against the routing and
// the experts computed in double precision here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include "engine/graph/graph_context.h"
#include "loom/alloc.h"
#include "loom/cpu.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

struct MoeCase {
    const char *name;
    MoeGating gating;
    bool bias = false;
    bool groups = false;
    bool norm = false;
    float scale = 0.0f;
    bool merged = false;
};

constexpr int64_t kEmbd = 16, kFf = 8, kExpert = 8, kUsed = 2, kTokens = 32;
constexpr int64_t kGroups = 4, kGroupUsed = 2;

using Matrix = std::vector<float>;  // row-major [rows][cols] as ggml stores [cols, rows]

double dot(const float *a, const float *b, int64_t n) {
    double s = 0.0;
    for (int64_t i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
    return s;
}

double silu(double x) {
    return x / (1.0 + std::exp(-x));
}

// Indices of the k largest values, largest first.
std::vector<int64_t> top_k(const std::vector<double> &v, int64_t k) {
    std::vector<int64_t> idx(v.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return v[a] > v[b]; });
    idx.resize(size_t(k));
    return idx;
}

struct Weights {
    Matrix router, bias, gate, up, down;  // gate/up [expert][ff][embd], down [expert][embd][ff]
};

std::vector<double> reference(const MoeCase &c, const Weights &w, const Matrix &x) {
    std::vector<double> out(size_t(kEmbd * kTokens), 0.0);
    for (int64_t t = 0; t < kTokens; ++t) {
        const float *xt = x.data() + t * kEmbd;
        std::vector<double> logits(kExpert), probs(kExpert);
        for (int64_t e = 0; e < kExpert; ++e) logits[e] = dot(&w.router[e * kEmbd], xt, kEmbd);
        const double max = *std::max_element(logits.begin(), logits.end());
        double sum = 0.0;
        for (int64_t e = 0; e < kExpert; ++e) {
            switch (c.gating) {
                case MoeGating::softmax:
                    sum += probs[e] = std::exp(logits[e] - max);
                    break;
                case MoeGating::sigmoid:
                    probs[e] = 1.0 / (1.0 + std::exp(-logits[e]));
                    break;
                case MoeGating::softmax_weight:
                    probs[e] = logits[e];
                    break;
                case MoeGating::sqrt_softplus:
                    probs[e] = std::sqrt(std::log1p(std::exp(logits[e])));
                    break;
            }
        }
        if (c.gating == MoeGating::softmax) {
            for (double &p : probs) p /= sum;
        }
        std::vector<double> selection = probs;
        if (c.bias) {
            for (int64_t e = 0; e < kExpert; ++e) selection[e] += w.bias[e];
        }
        if (c.groups) {
            const int64_t per = kExpert / kGroups;
            std::vector<double> group_score(kGroups);
            for (int64_t g = 0; g < kGroups; ++g) {
                std::vector<double> members(selection.begin() + g * per,
                                            selection.begin() + (g + 1) * per);
                std::sort(members.rbegin(), members.rend());
                group_score[g] = members[0] + members[1];
            }
            const auto kept = top_k(group_score, kGroupUsed);
            for (int64_t e = 0; e < kExpert; ++e) {
                if (std::find(kept.begin(), kept.end(), e / per) == kept.end()) {
                    selection[e] = -INFINITY;
                }
            }
        }
        const auto chosen = top_k(selection, kUsed);
        std::vector<double> weights;
        for (const int64_t e : chosen) weights.push_back(probs[e]);
        if (c.gating == MoeGating::softmax_weight) {
            const double m = *std::max_element(weights.begin(), weights.end());
            double s = 0.0;
            for (double &v : weights) s += v = std::exp(v - m);
            for (double &v : weights) v /= s;
        }
        if (c.norm) {
            const double s =
                std::max(std::accumulate(weights.begin(), weights.end(), 0.0), 6.103515625e-5);
            for (double &v : weights) v /= s;
        }
        if (c.scale != 0.0f) {
            for (double &v : weights) v *= c.scale;
        }
        for (size_t slot = 0; slot < chosen.size(); ++slot) {
            const int64_t e = chosen[slot];
            std::vector<float> act(kFf);
            for (int64_t f = 0; f < kFf; ++f) {
                const double g = dot(&w.gate[(e * kFf + f) * kEmbd], xt, kEmbd);
                const double u = dot(&w.up[(e * kFf + f) * kEmbd], xt, kEmbd);
                act[size_t(f)] = float(silu(g) * u);
            }
            for (int64_t i = 0; i < kEmbd; ++i) {
                out[size_t(t * kEmbd + i)] +=
                    weights[slot] * dot(&w.down[(e * kEmbd + i) * kFf], act.data(), kFf);
            }
        }
    }
    return out;
}

class MoeFfn : public ::testing::TestWithParam<MoeCase> {};

TEST_P(MoeFfn, MatchesDoubleReference) {
    const MoeCase &c = GetParam();
    const auto model = Model::load(test::load_fixture("stories260K").model_path);
    Batch batch;
    for (int i = 0; i < kTokens; ++i) batch.add(1, i, 0, true);
    GraphParams params{.model = model.get(), .ubatch = split_batch(batch, 64, 64, 1)[0]};
    GraphResult result(1 << 20);
    GraphContext g(params, result);

    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    const auto random = [&](size_t n, float sd) {
        Matrix m(n);
        for (float &v : m) v = sd * normal(rng);
        return m;
    };
    Weights w{.router = random(kExpert * kEmbd, 0.5f),
              .bias = random(kExpert, 0.3f),
              .gate = random(kExpert * kFf * kEmbd, 0.3f),
              .up = random(kExpert * kFf * kEmbd, 0.3f),
              .down = random(kExpert * kEmbd * kFf, 0.3f)};
    const Matrix x = random(kEmbd * kTokens, 1.0f);

    std::vector<std::pair<Tensor *, const float *>> inputs;
    const auto tensor = [&](std::initializer_list<int64_t> ne, const float *data) {
        Tensor *t = set_input(g.ctx0.new_tensor(DType::F32, ne));
        inputs.emplace_back(t, data);
        return t;
    };
    MoeWeights moe{.gate_inp = tensor({kEmbd, kExpert}, w.router.data()),
                   .down_exps = tensor({kFf, kEmbd, kExpert}, w.down.data())};
    Matrix gate_up;  // per expert: the gate rows, then the up rows
    if (c.merged) {
        for (int64_t e = 0; e < kExpert; ++e) {
            gate_up.insert(gate_up.end(), w.gate.begin() + e * kFf * kEmbd,
                           w.gate.begin() + (e + 1) * kFf * kEmbd);
            gate_up.insert(gate_up.end(), w.up.begin() + e * kFf * kEmbd,
                           w.up.begin() + (e + 1) * kFf * kEmbd);
        }
        moe.gate_up_exps = tensor({kEmbd, 2 * kFf, kExpert}, gate_up.data());
    } else {
        moe.gate_exps = tensor({kEmbd, kFf, kExpert}, w.gate.data());
        moe.up_exps = tensor({kEmbd, kFf, kExpert}, w.up.data());
    }
    if (c.bias) moe.exp_probs_b = tensor({kExpert}, w.bias.data());
    Tensor *cur = tensor({kEmbd, kTokens}, x.data());
    const MoeOptions options{.n_expert = kExpert,
                             .n_expert_used = kUsed,
                             .gating = c.gating,
                             .norm_weights = c.norm,
                             .weights_scale = c.scale,
                             .n_groups = c.groups ? kGroups : 0,
                             .n_group_used = c.groups ? kGroupUsed : 0};
    Tensor *out = set_output(g.build_moe_ffn(cur, moe, options, 0));
    build_forward_expand(g.gf, out);
    GraphAllocator allocator(host_buffer_type());
    allocator.allocate(*g.gf);
    for (auto [t, data] : inputs) std::memcpy(t->data, data, size_t(t->nelements()) * 4);
    CpuBackend(2).graph_compute(*g.gf);

    const std::vector<double> want = reference(c, w, x);
    // The case must exercise what it names: without groups (or the bias) some token would
    // choose other experts.
    for (bool MoeCase::*option : {&MoeCase::groups, &MoeCase::bias}) {
        if (!(c.*option)) continue;
        MoeCase without = c;
        without.*option = false;
        EXPECT_NE(reference(without, w, x), want) << "the data never needs this option";
    }
    ASSERT_EQ(out->nelements(), int64_t(want.size()));
    const std::span<const float> got(static_cast<const float *>(out->data), want.size());
    const double err = test::nmse<double>(got, want);
    EXPECT_LT(err, 1e-10);
}

INSTANTIATE_TEST_SUITE_P(
    Gating, MoeFfn,
    ::testing::Values(
        MoeCase{"softmax", MoeGating::softmax},
        MoeCase{"softmax_norm", MoeGating::softmax, false, false, true},
        MoeCase{"softmax_merged_gate_up", MoeGating::softmax, false, false, true, 0.0f, true},
        MoeCase{"sigmoid", MoeGating::sigmoid},
        MoeCase{"sigmoid_bias_groups_norm_scale", MoeGating::sigmoid, true, true, true, 2.5f},
        MoeCase{"sigmoid_bias", MoeGating::sigmoid, true},
        MoeCase{"softmax_groups", MoeGating::softmax, false, true},
        MoeCase{"softmax_weight", MoeGating::softmax_weight},
        MoeCase{"sqrt_softplus_norm_scale", MoeGating::sqrt_softplus, false, false, true, 1.5f}),
    [](const auto &info) { return std::string(info.param.name); });

}  // namespace
}  // namespace loom::engine
