// Matrix-product benchmarks, read against the machine's own FMA peak measured in this binary.
//
//   mul_mat/<type>/n<N>/threads:<t>  a [4096, 4096] · b F32 [4096, N] through the graph API
//                                    (Context, mul_mat, new_graph, CpuBackend::graph_compute)
//   fma_peak/threads:<t>             register-blocked FMAs on the widest vectors of the build
//   naive_matmul_512                 a plain triple loop, next to mul_mat/f32/512 for the ratio
//
// GFLOPS counts 2 * M * N * K per product; GB/s (N = 1) counts the weight bytes read.
// Run: make bench   (or build/release/bench/loom-bench-matmul --benchmark_counters_tabular=true)
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "core/cpu/threadpool.h"
#include "loom/core.h"
#include "loom/cpu.h"

#if defined(__AVX512F__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace {

using namespace loom;

// Deterministic values in [-1, 1) (xorshift), so runs are comparable.
void fill_random(Tensor *t, uint32_t seed) {
    std::vector<float> v(size_t(t->nelements()));
    uint32_t x = seed;
    for (float &f : v) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        f = float(x) * 0x1p-31f - 1.0f;
    }
    traits(t->type).from_float(v.data(), t->data, t->nelements());
}

void set_flops(benchmark::State &state, double flops_per_iter) {
    state.counters["GFLOPS"] = benchmark::Counter(
        flops_per_iter * 1e-9 * double(state.iterations()), benchmark::Counter::kIsRate);
}

// a [K, M] of `type` · b F32 [K, N] on state.range(0) threads.
void bm_mul_mat(benchmark::State &state, DType type, int64_t K, int64_t M, int64_t N) {
    const size_t bytes = size_t(K * M) * traits(type).type_size + size_t(K * N + M * N) * 4;
    Context ctx({.mem_size = bytes + (4u << 20)});
    Tensor *a = ctx.new_tensor(type, {K, M});  // the weight
    Tensor *b = ctx.new_tensor(DType::F32, {K, N});
    fill_random(a, 1);
    fill_random(b, 2);
    Tensor *out = mul_mat(ctx, a, b);  // F32 [M, N]
    Graph *graph = new_graph(ctx);
    build_forward_expand(graph, out);
    CpuBackend backend(int(state.range(0)));
    backend.graph_compute(*graph);  // warm-up: scratch allocation, caches
    for (auto _ : state) {
        backend.graph_compute(*graph);
        benchmark::DoNotOptimize(out->data);
        benchmark::ClobberMemory();
    }
    set_flops(state, 2.0 * double(M) * double(N) * double(K));
    if (N == 1) {
        const double weight_bytes = double(K * M) * double(traits(type).type_size);
        state.counters["GB/s"] = benchmark::Counter(
            weight_bytes * 1e-9 * double(state.iterations()), benchmark::Counter::kIsRate);
    }
}

// ---------------------------------------------------------------------------------------------
// FMA peak: kChains independent accumulators (an FMA's 4-cycle latency on two ports needs at
// least 8 in flight), each updated kSteps times per call, on the build's widest vectors.

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec fma_op(Vec a, Vec b, Vec c) {
    return _mm512_fmadd_ps(a, b, c);
}
inline Vec splat(float x) {
    return _mm512_set1_ps(x);
}
inline float first_lane(Vec v) {
    return _mm512_cvtss_f32(v);
}
#elif defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec fma_op(Vec a, Vec b, Vec c) {
    return _mm256_fmadd_ps(a, b, c);
}
inline Vec splat(float x) {
    return _mm256_set1_ps(x);
}
inline float first_lane(Vec v) {
    return _mm256_cvtss_f32(v);
}
#else
typedef float Vec __attribute__((vector_size(16)));
constexpr int kLanes = 4;
inline Vec fma_op(Vec a, Vec b, Vec c) {
    return a * b + c;
}  // no FMA: mul + add
inline Vec splat(float x) {
    return Vec{} + x;
}
inline float first_lane(Vec v) {
    return v[0];
}
#endif

constexpr int kChains = 16;
constexpr int64_t kSteps = 1 << 20;

float fma_loop(float seed) {
    Vec acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = splat(seed + float(i));
    // acc = acc * 0.999999 + 1e-6 stays finite and normal forever.
    const Vec mul = splat(0.999999f), add = splat(1e-6f);
    for (int64_t s = 0; s < kSteps; ++s) {
#pragma GCC unroll 16
        for (int i = 0; i < kChains; ++i) acc[i] = fma_op(acc[i], mul, add);
    }
    float sum = 0.0f;
    for (int i = 0; i < kChains; ++i) sum += first_lane(acc[i]);
    return sum;
}

void bm_fma_peak(benchmark::State &state) {
    const int n_threads = int(state.range(0));
    cpu::ThreadPool pool(n_threads);  // the pool CpuBackend runs kernels on
    std::vector<float> sink(static_cast<size_t>(n_threads));
    for (auto _ : state) {
        pool.run([&](int ith) { sink[size_t(ith)] = fma_loop(float(ith)); });
        benchmark::DoNotOptimize(sink.data());
    }
    set_flops(state, 2.0 * kLanes * kChains * double(kSteps) * n_threads);
}

// ---------------------------------------------------------------------------------------------
// The reference: dst[n][m] = sum_k a[m][k] * b[n][k], three plain loops, one thread.

void bm_naive_matmul(benchmark::State &state) {
    const int64_t n = state.range(0);
    std::vector<float> a(size_t(n * n)), b(size_t(n * n)), c(size_t(n * n));
    for (size_t i = 0; i < a.size(); ++i) {
        a[i] = float(i % 7) * 0.25f - 0.75f;
        b[i] = float(i % 5) * 0.25f - 0.5f;
    }
    for (auto _ : state) {
        for (int64_t j = 0; j < n; ++j) {
            for (int64_t i = 0; i < n; ++i) {
                float sum = 0.0f;
                for (int64_t k = 0; k < n; ++k) sum += a[size_t(i * n + k)] * b[size_t(j * n + k)];
                c[size_t(j * n + i)] = sum;
            }
        }
        benchmark::DoNotOptimize(c.data());
    }
    set_flops(state, 2.0 * double(n) * double(n) * double(n));
}

constexpr int64_t kDim = 4096;

}  // namespace

BENCHMARK(bm_fma_peak)->Name("fma_peak")->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();

#define LOOM_BENCH_MUL_MAT(label, type, k, m, n)               \
    BENCHMARK_CAPTURE(bm_mul_mat, label, DType::type, k, m, n) \
        ->Name("mul_mat/" #label)                              \
        ->ArgName("threads")                                   \
        ->Arg(1)                                               \
        ->Arg(2)                                               \
        ->UseRealTime()                                        \
        ->Unit(benchmark::kMillisecond)

LOOM_BENCH_MUL_MAT(f32_n1, F32, kDim, kDim, 1);
LOOM_BENCH_MUL_MAT(f16_n1, F16, kDim, kDim, 1);
LOOM_BENCH_MUL_MAT(f32_n512, F32, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(f16_n512, F16, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(f32_512x512x512, F32, 512, 512, 512);

BENCHMARK(bm_naive_matmul)
    ->Name("naive_matmul_512")
    ->Arg(512)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
