// build_attn without a cache (InputAttnNoCache), flash and naive, causal and not, two sequences
// in one ubatch, with each of AttnOptions' score options (soft-capping as each path applies it,
// sinks, a score bias): against attention computed in double precision here.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/graph/graph_context.h"
#include "loom/alloc.h"
#include "loom/cpu.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

struct AttnCase {
    bool flash = false;
    bool causal = true;
    float softcap = 0.0f;
    bool sinks = false;
    bool kq_b = false;  // a bias [n, n, n_head] on the scores (which takes the naive path)
    std::string name() const {
        return std::string(flash ? "flash" : "naive") + (causal ? "_causal" : "_bidirectional") +
               (softcap != 0.0f ? "_softcap" : "") + (sinks ? "_sinks" : "") +
               (kq_b ? "_kq_b" : "");
    }
};

// The extra inputs of a setup, as doubles the reference reads.
struct Extras {
    std::vector<float> sinks;  // [n_head]
    std::vector<float> kq_b;   // [n_head][n][n]: head h, query t, key j at (h * n + t) * n + j
};

class AttentionNoCache : public ::testing::TestWithParam<AttnCase> {};

// softmax(score + mask) · v per head, with score = cap(q·k * scale) on the flash path and
// cap(q·k) * scale on the naive one (cap: x -> c tanh(x / c), or none), plus the bias; a head's
// sink joins its softmax without a value. q [n_head][n][d], k/v [n_head_kv][n][d].
std::vector<double> reference(const std::vector<float> &q, const std::vector<float> &k,
                              const std::vector<float> &v, const Ubatch &u, const HParams &hp,
                              const AttnCase &setup, const Extras &extras, double scale) {
    const int64_t n = u.n_tokens(), d = hp.n_embd_head_k;
    std::vector<double> out(size_t(n * hp.n_head * d), 0.0);  // [n][n_head][d]
    const auto at = [&](const std::vector<float> &x, int64_t heads, int64_t t, int64_t h,
                        int64_t i) { return double(x[size_t((t * heads + h) * d + i)]); };
    const auto cap = [&](double x) {
        return setup.softcap == 0.0f ? x : setup.softcap * std::tanh(x / setup.softcap);
    };
    for (int64_t t = 0; t < n; ++t) {
        for (int64_t h = 0; h < hp.n_head; ++h) {
            const int64_t hk = h / hp.n_gqa();
            std::vector<double> w(size_t(n), 0.0);
            double max = setup.sinks ? double(extras.sinks[size_t(h)]) : -INFINITY;
            for (int64_t j = 0; j < n; ++j) {
                const bool visible = u.seq_id[size_t(j)] == u.seq_id[size_t(t)] &&
                                     (!setup.causal || u.pos[size_t(j)] <= u.pos[size_t(t)]);
                if (!visible) {
                    w[size_t(j)] = -INFINITY;
                    continue;
                }
                double dot = 0.0;
                for (int64_t i = 0; i < d; ++i) {
                    dot += at(q, hp.n_head, t, h, i) * at(k, hp.n_head_kv, j, hk, i);
                }
                const double bias =
                    setup.kq_b ? double(extras.kq_b[size_t((h * n + t) * n + j)]) : 0.0;
                const bool naive = !setup.flash || setup.kq_b;
                w[size_t(j)] = naive ? (cap(dot) + bias) * scale : cap(dot * scale);
                max = std::max(max, w[size_t(j)]);
            }
            double sum = setup.sinks ? std::exp(double(extras.sinks[size_t(h)]) - max) : 0.0;
            for (double &x : w) sum += x = std::exp(x - max);
            for (int64_t i = 0; i < d; ++i) {
                double acc = 0.0;
                for (int64_t j = 0; j < n; ++j) acc += w[size_t(j)] * at(v, hp.n_head_kv, j, hk, i);
                out[size_t((t * hp.n_head + h) * d + i)] = acc / sum;
            }
        }
    }
    return out;
}

std::vector<float> random_floats(std::mt19937 &rng, int64_t n, float stddev) {
    std::normal_distribution<float> normal(0.0f, stddev);
    std::vector<float> xs(static_cast<size_t>(n));
    for (float &x : xs) x = normal(rng);
    return xs;
}

TEST_P(AttentionNoCache, MatchesDoubleReference) {
    const AttnCase &setup = GetParam();
    const auto model = Model::load(test::load_fixture("stories260K").model_path);
    const HParams &hp = model->hparams();
    // Sequences 0 and 1 interleaved, positions 0.. in each.
    Batch batch;
    for (int i = 0; i < 9; ++i) batch.add(1, Pos(i / 2), SeqId(i % 2), true);
    GraphParams params{.model = model.get(),
                       .cparams = {.flash_attn = setup.flash, .causal = setup.causal},
                       .ubatch = split_batch(batch, 64, hp.n_embd, 1)[0]};
    params.n_outputs = params.ubatch.n_tokens();
    const int64_t n = params.ubatch.n_tokens(), d = hp.n_embd_head_k;

    GraphResult result(1 << 20);
    GraphContext g(params, result);
    Tensor *q = set_input(g.ctx0.new_tensor(DType::F32, {d, hp.n_head, n}));
    Tensor *k = set_input(g.ctx0.new_tensor(DType::F32, {d, hp.n_head_kv, n}));
    Tensor *v = set_input(g.ctx0.new_tensor(DType::F32, {d, hp.n_head_kv, n}));
    Tensor *sinks = setup.sinks ? set_input(g.ctx0.new_tensor(DType::F32, {hp.n_head})) : nullptr;
    Tensor *kq_b =
        setup.kq_b ? set_input(g.ctx0.new_tensor(DType::F32, {n, n, hp.n_head, 1})) : nullptr;
    // A scale other than 1 where soft-capping tells the paths' orders apart.
    const float scale = setup.softcap != 0.0f ? 0.7f : 1.0f / std::sqrt(float(d));
    Tensor *out = set_output(g.build_attn(
        g.build_attn_inp_no_cache(), {q, k, v},
        {.kq_scale = scale, .softcap = setup.softcap, .sinks = sinks, .kq_b = kq_b}, 0));
    build_forward_expand(g.gf, out);
    GraphAllocator allocator(host_buffer_type());
    allocator.allocate(*g.gf);
    result.set_inputs(params);
    std::mt19937 rng(7);
    const std::vector<float> qs = random_floats(rng, q->nelements(), 1.0f),
                             ks = random_floats(rng, k->nelements(), 1.0f),
                             vs = random_floats(rng, v->nelements(), 1.0f);
    Extras extras;
    std::memcpy(q->data, qs.data(), qs.size() * sizeof(float));
    std::memcpy(k->data, ks.data(), ks.size() * sizeof(float));
    std::memcpy(v->data, vs.data(), vs.size() * sizeof(float));
    if (sinks != nullptr) {
        extras.sinks = random_floats(rng, hp.n_head, 2.0f);
        std::memcpy(sinks->data, extras.sinks.data(), extras.sinks.size() * sizeof(float));
    }
    if (kq_b != nullptr) {
        extras.kq_b = random_floats(rng, kq_b->nelements(), 1.0f);
        std::memcpy(kq_b->data, extras.kq_b.data(), extras.kq_b.size() * sizeof(float));
    }
    CpuBackend(2).graph_compute(*g.gf);

    const std::vector<double> want = reference(qs, ks, vs, params.ubatch, hp, setup, extras, scale);
    ASSERT_EQ(out->nelements(), int64_t(want.size()));
    const std::span<const float> got(static_cast<const float *>(out->data), want.size());
    const double err = test::nmse<double>(got, want);
    // flash attention rounds K and V to F16, as llama.cpp's CPU kernel does
    EXPECT_LT(err, setup.flash && !setup.kq_b ? 1e-5 : 1e-10);
}

INSTANTIATE_TEST_SUITE_P(Paths, AttentionNoCache,
                         ::testing::Values(AttnCase{false, true}, AttnCase{false, false},
                                           AttnCase{true, true}, AttnCase{true, false},
                                           AttnCase{.flash = false, .softcap = 1.5f},
                                           AttnCase{.flash = true, .softcap = 1.5f},
                                           AttnCase{.flash = false, .sinks = true},
                                           AttnCase{.flash = true, .sinks = true},
                                           AttnCase{.flash = false, .kq_b = true},
                                           AttnCase{.flash = true, .kq_b = true}),
                         [](const auto &info) { return info.param.name(); });

}  // namespace
}  // namespace loom::engine
