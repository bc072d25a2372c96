// End to end: a generated Llama-shaped model (n_embd 2048, 16 layers, GQA 32/8, n_ff 5632,
// about 0.85 B parameters) through Model::load and Context::decode.
//
//   e2e/<type>/pp512/threads:t      one decode of a 512-token prompt: prompt tokens/s
//   e2e/<type>/tg64/threads:t       64 decodes of 1 token after a 16-token prompt: tokens/s
//   e2e/<type>/tg64_no_reuse/...    the same with graph reuse off
//   e2e/Q4_0/varied_ubatches_*      48 ubatches of 1-48 tokens, padded to buckets or not
// Counters: t/s, and graph_ms/token (building + allocating graphs and setting inputs, per
// token) which shows what reusing the graph saves.
//
// The models are written once to build/bench-models/ (several hundred MB each; a minute to make).
// Run: make bench, or build/release/bench/loom-bench-e2e --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "engine/context/context.h"
#include "engine/model/synthetic_llama.h"

namespace {

using namespace loom;
using namespace loom::engine;

const engine::Model &model_of(DType type) {
    static std::map<DType, std::unique_ptr<engine::Model>> models;
    auto &m = models[type];
    if (m == nullptr) {
        const std::filesystem::path dir = "build/bench-models";
        std::filesystem::create_directories(dir);
        const std::string path =
            (dir / fmt::format("llama-2048x16-{}.gguf", dtype_name(type))).string();
        if (!std::filesystem::exists(path)) {
            std::fprintf(stderr, "writing %s ...\n", path.c_str());
            write_synthetic_llama(path, {}, type);
        }
        m = engine::Model::load(path);
        m->finish_moving_weights();  // measure the steady state
    }
    return *m;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Token ids spread over the vocabulary (values do not change the speed).
int32_t token_at(int64_t i, int64_t n_vocab) {
    return int32_t(3 + (i * 7919) % (n_vocab - 3));
}

void bm_prompt(benchmark::State &state, DType type) {
    const engine::Model &model = model_of(type);
    constexpr int64_t kPrompt = 512;
    engine::Context ctx(model, {.n_ctx = 1024, .n_threads = int(state.range(0))});
    Batch batch;
    for (int64_t i = 0; i < kPrompt; ++i) {
        batch.add(token_at(i, model.hparams().n_vocab), Pos(i), 0, i == kPrompt - 1);
    }
    double seconds = 0.0;
    for (auto _ : state) {
        ctx.memory().clear();
        const auto start = std::chrono::steady_clock::now();
        ctx.decode(batch);
        seconds += seconds_since(start);
    }
    state.counters["t/s"] = double(kPrompt) * double(state.iterations()) / seconds;
}

void bm_generate(benchmark::State &state, DType type, bool reuse) {
    const engine::Model &model = model_of(type);
    constexpr int64_t kPrompt = 16, kGenerate = 64;
    engine::Context ctx(model,
                        {.n_ctx = 256, .n_threads = int(state.range(0)), .graph_reuse = reuse});
    const int64_t n_vocab = model.hparams().n_vocab;
    double seconds = 0.0, graph_seconds = 0.0;
    for (auto _ : state) {
        ctx.memory().clear();
        Batch batch;
        for (int64_t i = 0; i < kPrompt; ++i) batch.add(token_at(i, n_vocab), Pos(i), 0, false);
        ctx.decode(batch);
        const double graph_before = ctx.stats().build_seconds;
        const auto start = std::chrono::steady_clock::now();
        for (int64_t i = 0; i < kGenerate; ++i) {
            batch.clear();
            batch.add(token_at(kPrompt + i, n_vocab), Pos(kPrompt + i), 0, true);
            ctx.decode(batch);
        }
        seconds += seconds_since(start);
        graph_seconds += ctx.stats().build_seconds - graph_before;
    }
    const double tokens = double(kGenerate) * double(state.iterations());
    state.counters["t/s"] = tokens / seconds;
    state.counters["graph_ms/token"] = 1e3 * graph_seconds / tokens;
}

// A serving-like run: 48 decodes of one sequence with ubatch sizes between 1 and 48 tokens
// (a fixed pseudo-random series, ~1,200 tokens in all), with and without padding ubatches to
// bucketed sizes. Counters: graph builds per run, graph_ms/ubatch (building, allocating, inputs)
// and compute_ms/ubatch.
void bm_varied_ubatches(benchmark::State &state, DType type, bool pad) {
    const engine::Model &model = model_of(type);
    constexpr int kUbatches = 48;
    engine::Context ctx(model,
                        {.n_ctx = 2048, .n_threads = int(state.range(0)), .pad_ubatches = pad});
    const int64_t n_vocab = model.hparams().n_vocab;
    const int64_t builds_before = ctx.stats().graph_builds;
    const double graph_before = ctx.stats().build_seconds;
    const double compute_before = ctx.stats().compute_seconds;
    for (auto _ : state) {
        ctx.memory().clear();
        uint32_t lcg = 12345;
        Pos pos = 0;
        for (int u = 0; u < kUbatches; ++u) {
            lcg = lcg * 1103515245u + 12345u;
            const int n = 1 + int((lcg >> 16) % 48);
            Batch batch;
            for (int i = 0; i < n; ++i, ++pos) {
                batch.add(token_at(pos, n_vocab), pos, 0, i == n - 1);
            }
            ctx.decode(batch);
        }
    }
    const double ubatches = double(kUbatches) * double(state.iterations());
    state.counters["builds/run"] =
        double(ctx.stats().graph_builds - builds_before) / double(state.iterations());
    state.counters["graph_ms/ubatch"] = 1e3 * (ctx.stats().build_seconds - graph_before) / ubatches;
    state.counters["compute_ms/ubatch"] =
        1e3 * (ctx.stats().compute_seconds - compute_before) / ubatches;
}

#define LOOM_BENCH_E2E(type)                                            \
    BENCHMARK_CAPTURE(bm_prompt, type, DType::type)                     \
        ->Name("e2e/" #type "/pp512")                                   \
        ->ArgName("threads")                                            \
        ->Arg(2)                                                        \
        ->Iterations(2)                                                 \
        ->UseRealTime()                                                 \
        ->Unit(benchmark::kMillisecond);                                \
    BENCHMARK_CAPTURE(bm_generate, type, DType::type, true)             \
        ->Name("e2e/" #type "/tg64")                                    \
        ->ArgName("threads")                                            \
        ->Arg(1)                                                        \
        ->Arg(2)                                                        \
        ->Iterations(2)                                                 \
        ->UseRealTime()                                                 \
        ->Unit(benchmark::kMillisecond);                                \
    BENCHMARK_CAPTURE(bm_generate, type##_no_reuse, DType::type, false) \
        ->Name("e2e/" #type "/tg64_no_reuse")                           \
        ->ArgName("threads")                                            \
        ->Arg(2)                                                        \
        ->Iterations(2)                                                 \
        ->UseRealTime()                                                 \
        ->Unit(benchmark::kMillisecond)

LOOM_BENCH_E2E(Q4_0);
LOOM_BENCH_E2E(Q8_0);

BENCHMARK_CAPTURE(bm_varied_ubatches, padded, DType::Q4_0, true)
    ->Name("e2e/Q4_0/varied_ubatches_padded")
    ->ArgName("threads")
    ->Arg(2)
    ->Iterations(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_varied_ubatches, unpadded, DType::Q4_0, false)
    ->Name("e2e/Q4_0/varied_ubatches_unpadded")
    ->ArgName("threads")
    ->Arg(2)
    ->Iterations(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
