// build_attn without a cache (InputAttnNoCache), flash and naive, causal and not, two sequences
// in one ubatch: against attention computed in double precision here.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/graph/graph_context.h"
#include "loom/alloc.h"
#include "loom/cpu.h"
#include "tests/engine/model/fixture.h"

namespace loom::engine {
namespace {

struct Setup {
    bool flash = false;
    bool causal = true;
};

class AttentionNoCache : public ::testing::TestWithParam<Setup> {};

// softmax(q·k * scale + mask) · v per head, in double; q [n_head][n][d], k/v [n_head_kv][n][d].
std::vector<double> reference(const std::vector<float> &q, const std::vector<float> &k,
                              const std::vector<float> &v, const Ubatch &u, const HParams &hp,
                              bool causal, double scale) {
    const int64_t n = u.n_tokens(), d = hp.n_embd_head_k;
    std::vector<double> out(size_t(n * hp.n_head * d), 0.0);  // [n][n_head][d]
    const auto at = [&](const std::vector<float> &x, int64_t heads, int64_t t, int64_t h,
                        int64_t i) { return double(x[size_t((t * heads + h) * d + i)]); };
    for (int64_t t = 0; t < n; ++t) {
        for (int64_t h = 0; h < hp.n_head; ++h) {
            const int64_t hk = h / hp.n_gqa();
            std::vector<double> w(size_t(n), 0.0);
            double max = -INFINITY, sum = 0.0;
            for (int64_t j = 0; j < n; ++j) {
                const bool visible = u.seq_id[size_t(j)] == u.seq_id[size_t(t)] &&
                                     (!causal || u.pos[size_t(j)] <= u.pos[size_t(t)]);
                if (!visible) {
                    w[size_t(j)] = -INFINITY;
                    continue;
                }
                double dot = 0.0;
                for (int64_t i = 0; i < d; ++i) {
                    dot += at(q, hp.n_head, t, h, i) * at(k, hp.n_head_kv, j, hk, i);
                }
                w[size_t(j)] = dot * scale;
                max = std::max(max, w[size_t(j)]);
            }
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

TEST_P(AttentionNoCache, MatchesDoubleReference) {
    const auto model = Model::load(test::load_fixture("stories260K").model_path);
    const HParams &hp = model->hparams();
    // Sequences 0 and 1 interleaved, positions 0.. in each.
    Batch batch;
    for (int i = 0; i < 9; ++i) batch.add(1, Pos(i / 2), SeqId(i % 2), true);
    GraphParams params{.model = model.get(),
                       .cparams = {.flash_attn = GetParam().flash, .causal = GetParam().causal},
                       .ubatch = split_batch(batch, 64, hp.n_embd, 1)[0]};
    params.n_outputs = params.ubatch.n_tokens();
    const int64_t n = params.ubatch.n_tokens(), d = hp.n_embd_head_k;

    GraphResult result(1 << 20);
    GraphContext g(params, result);
    Tensor *q = set_input(g.ctx0.new_tensor(DType::F32, {d, hp.n_head, n}));
    Tensor *k = set_input(g.ctx0.new_tensor(DType::F32, {d, hp.n_head_kv, n}));
    Tensor *v = set_input(g.ctx0.new_tensor(DType::F32, {d, hp.n_head_kv, n}));
    const float scale = 1.0f / std::sqrt(float(d));
    Tensor *out =
        set_output(g.build_attn(g.build_attn_inp_no_cache(), {q, k, v}, {.kq_scale = scale}, 0));
    build_forward_expand(g.gf, out);
    GraphAllocator allocator(host_buffer_type());
    allocator.allocate(*g.gf);
    result.set_inputs(params);
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> qs(size_t(q->nelements())), ks(size_t(k->nelements())),
        vs(size_t(v->nelements()));
    for (auto *xs : {&qs, &ks, &vs}) {
        for (float &x : *xs) x = normal(rng);
    }
    std::memcpy(q->data, qs.data(), qs.size() * sizeof(float));
    std::memcpy(k->data, ks.data(), ks.size() * sizeof(float));
    std::memcpy(v->data, vs.data(), vs.size() * sizeof(float));
    CpuBackend(2).graph_compute(*g.gf);

    const std::vector<double> want =
        reference(qs, ks, vs, params.ubatch, hp, GetParam().causal, scale);
    ASSERT_EQ(out->nelements(), int64_t(want.size()));
    const std::span<const float> got(static_cast<const float *>(out->data), want.size());
    const double err = test::nmse<double>(got, want);
    // flash attention rounds K and V to F16, as llama.cpp's CPU kernel does
    EXPECT_LT(err, GetParam().flash ? 1e-5 : 1e-10);
}

INSTANTIATE_TEST_SUITE_P(Paths, AttentionNoCache,
                         ::testing::Values(Setup{false, true}, Setup{false, false},
                                           Setup{true, true}, Setup{true, false}),
                         [](const auto &info) {
                             return std::string(info.param.flash ? "flash" : "naive") +
                                    (info.param.causal ? "_causal" : "_bidirectional");
                         });

}  // namespace
}  // namespace loom::engine
