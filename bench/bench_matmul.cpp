// Matrix-product benchmarks, read against the machine's own FMA peak measured in this binary.
//
//   mul_mat/<type>/n<N>/threads:<t>  a [4096, 4096] · b F32 [4096, N] through the graph API
//                                    (Context, mul_mat, new_graph, CpuBackend::graph_compute)
//   fma_peak/threads:<t>             register-blocked FMAs on the widest vectors of the build
//   naive_matmul_512                 a plain triple loop, next to mul_mat/f32/512 for the ratio
//   read_bw/threads:<t>              a streaming sum over 1 GiB: the machine's read bandwidth
//                                    (bench/read_loop.h; read_bw_plain: one stream per thread)
//   mul_mat/<type>_n<N>/threads:<t>  block formats (Q4_0, Q8_0, Q4_K, Q6_K, MXFP4, IQ4_NL,
//                                    IQ4_XS) next to F16, same shape
//   mul_mat/<type>_n1_dram/...       weights of at least 1 GiB ([4096, M]), as read_bw's buffer
//                                    (also Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q5_K)
//   mul_mat/<type>_n1_l2/...         [4096, 256] weights inside one core's L2 (Q4_0, Q8_0, the
//                                    K-quants, IQ4_NL, IQ4_XS): the generation kernel's compute
//                                    rate; F16 and BF16 on [4096, 64], grouped and _plain (the
//                                    file's layout)
//   layer_chain/q4_0/threads:<t>     the 112 products of a token of the 1B Llama in one graph
//   flash_attn/<case>/threads:<t>    flash_attn_ext over 16 layers with the 1B Llama's heads (64
//                                    wide, 32 query heads on 8 kv heads, causal mask) for a
//                                    ubatch of 512 queries or one, after `depth` positions, on an
//                                    F16 cache (or the type the case names: a quantized cache)
//   attn_products/<case>/threads:<t> the same heads without flash attention, as the engine
//                                    builds it: K·Q, softmax, V·softmax in llama.cpp's sum order
//                                    (_kq: the scores alone); GB/s counts the cache bytes read
//
// GFLOPS counts 2 * M * N * K per product (for attention, 4 * head size per visible score); GB/s (N
// = 1) counts the weight bytes read. %peak (N > 1) divides GFLOPS by fma_peak at the same thread
// count, %bw (N = 1) divides GB/s by read_bw at the same thread count; both need those cases to
// have run first in the same process. The machine's figures are the median over iterations
// (median_GFLOPS, median_GB/s): on a shared machine one iteration that another process interrupted,
// or one at a passing turbo clock, would move a mean (or a best) and every ratio with it. Run: make
// bench   (or build/release/bench/loom-bench-matmul --benchmark_counters_tabular=true)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <vector>

#include "bench/read_loop.h"
#include "core/cpu/simd.h"
#include "core/cpu/threadpool.h"
#include "loom/backend.h"
#include "loom/core.h"
#include "loom/cpu.h"
#include "loom/fp16.h"

namespace {

using namespace loom;

// Measured by fma_peak and read_bw earlier in the same run, per thread count (0: not measured).
double g_fma_gflops[3] = {};
double g_read_gbps[3] = {};

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

// The bytes of a weight [K, M] of `type`: rows [0, kChunkRows) are random values put through
// traits(type).from_float, the rest copies of them (quantizing hundreds of MiB with the reference
// K-quant fitters would take minutes; the kernels' speed does not depend on the values).
constexpr int64_t kChunkRows = 512;
std::vector<std::byte> weight_bytes(DType type, int64_t K, int64_t M, uint32_t seed) {
    const size_t row_bytes = row_size(type, K);
    const int64_t rows = std::min(M, kChunkRows);
    std::vector<float> v(size_t(K * rows));
    uint32_t x = seed;
    for (float &f : v) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        f = float(x) * 0x1p-31f - 1.0f;
    }
    std::vector<std::byte> data(row_bytes * size_t(M));
    traits(type).from_float(v.data(), data.data(), K * rows);
    for (int64_t r = rows; r < M; r += rows) {
        std::memcpy(data.data() + size_t(r) * row_bytes, data.data(),
                    size_t(std::min(rows, M - r)) * row_bytes);
    }
    return data;
}

// Rates for the ratio counters, from the loop's own wall clock (the framework's kIsRate
// counters are divided by its time only after the function returns).
double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
}

int thread_slot(const benchmark::State &state) {
    return int(std::clamp<int64_t>(state.range(0), 0, 2));
}

// Where the weight lives: cpu_repack_buffer_type(), as a model's weights do (block formats with
// integer kernels are stored interleaved), or plain host memory in the file's layout.
enum class Weights { repacked, plain };

// a [K, M] of `type` · b F32 [K, N] on state.range(0) threads.
void bm_mul_mat(benchmark::State &state, DType type, int64_t K, int64_t M, int64_t N,
                Weights weights = Weights::repacked) {
    Context weight_ctx({.mem_size = 1u << 16, .no_alloc = true});
    Tensor *a = weight_ctx.new_tensor(type, {K, M});
    Tensor *const placed[] = {a};
    const std::unique_ptr<Buffer> buffer = place_tensors(
        weights == Weights::repacked ? cpu_repack_buffer_type() : host_buffer_type(), placed);
    {
        const std::vector<std::byte> bytes = weight_bytes(type, K, M, 1);
        buffer->set_tensor(a, bytes.data(), 0, bytes.size());
    }
    Context ctx({.mem_size = size_t(K * N + M * N) * 4 + (4u << 20)});
    Tensor *b = ctx.new_tensor(DType::F32, {K, N});
    fill_random(b, 2);
    Tensor *out = mul_mat(ctx, a, b);  // F32 [M, N]
    Graph *graph = new_graph(ctx);
    build_forward_expand(graph, out);
    CpuBackend backend(int(state.range(0)));
    backend.graph_compute(*graph);  // warm-up: scratch allocation, caches
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) {
        backend.graph_compute(*graph);
        benchmark::DoNotOptimize(out->data);
        benchmark::ClobberMemory();
    }
    const double seconds = seconds_since(start), iters = double(state.iterations());
    const double flops = 2.0 * double(M) * double(N) * double(K);
    set_flops(state, flops);
    const int slot = thread_slot(state);
    if (N == 1) {
        const double weight_bytes = double(row_size(type, K)) * double(M);
        state.counters["GB/s"] =
            benchmark::Counter(weight_bytes * 1e-9 * iters, benchmark::Counter::kIsRate);
        state.counters["MiB"] = weight_bytes / double(1 << 20);
        if (g_read_gbps[slot] > 0.0) {
            state.counters["%bw"] =
                100.0 * weight_bytes * iters * 1e-9 / seconds / g_read_gbps[slot];
        }
    } else if (g_fma_gflops[slot] > 0.0) {
        state.counters["%peak"] = 100.0 * flops * iters * 1e-9 / seconds / g_fma_gflops[slot];
    }
}

// The generation products of a model: the seven weights of each of 16 layers of the generated 1B
// Llama (n_embd 2048, GQA 32/8 heads of 64, n_ff 5632), each [K, M] matrix times one column, in
// one graph in layer order: what a token's products stream, with a synchronisation after each
// product as in a model, beside the single long product of the *_n1_dram cases.
void bm_layer_chain(benchmark::State &state, DType type) {
    constexpr int64_t kEmbd = 2048, kKv = 512, kFf = 5632, kLayers = 16;
    const std::pair<int64_t, int64_t> shapes[] = {{kEmbd, kEmbd}, {kEmbd, kKv}, {kEmbd, kKv},
                                                  {kEmbd, kEmbd}, {kEmbd, kFf}, {kEmbd, kFf},
                                                  {kFf, kEmbd}};
    Context weight_ctx({.mem_size = 1u << 20, .no_alloc = true});
    std::vector<Tensor *> weights;
    for (int64_t l = 0; l < kLayers; ++l) {
        for (const auto &[k, m] : shapes) weights.push_back(weight_ctx.new_tensor(type, {k, m}));
    }
    const std::unique_ptr<Buffer> buffer = place_tensors(cpu_repack_buffer_type(), weights);
    double total_bytes = 0.0;
    uint32_t seed = 1;
    for (Tensor *w : weights) {
        const std::vector<std::byte> bytes = weight_bytes(type, w->ne[0], w->ne[1], seed++);
        buffer->set_tensor(w, bytes.data(), 0, bytes.size());
        total_bytes += double(bytes.size());
    }
    Context ctx({.mem_size = size_t(64) << 20});
    Tensor *x = ctx.new_tensor(DType::F32, {kEmbd, 1});
    Tensor *h = ctx.new_tensor(DType::F32, {kFf, 1});
    fill_random(x, 2);
    fill_random(h, 3);
    Graph *graph = new_graph(ctx);
    for (Tensor *w : weights)
        build_forward_expand(graph, mul_mat(ctx, w, w->ne[0] == kEmbd ? x : h));
    CpuBackend backend(int(state.range(0)));
    backend.graph_compute(*graph);  // warm-up
    for (auto _ : state) {
        backend.graph_compute(*graph);
        benchmark::ClobberMemory();
    }
    state.counters["GB/s"] = benchmark::Counter(total_bytes * 1e-9 * double(state.iterations()),
                                                benchmark::Counter::kIsRate);
    state.counters["MiB"] = total_bytes / double(1 << 20);
}
BENCHMARK_CAPTURE(bm_layer_chain, q4_0, DType::Q4_0)
    ->Name("layer_chain/q4_0")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// FMA peak: kChains independent accumulators (an FMA's 4-cycle latency on two ports needs at
// least 8 in flight), each updated kSteps times per call, on the build's widest vectors.

using cpu::simd::fmadd;
using cpu::simd::load;
using cpu::simd::splat;
using cpu::simd::VL;
using Vec = cpu::simd::vf;

constexpr int kChains = 16;
constexpr int64_t kSteps = 1 << 20;

float fma_loop(float seed) {
    Vec acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = splat(seed + float(i));
    // acc = acc * 0.999999 + 1e-6 stays finite and normal forever.
    const Vec mul = splat(0.999999f), add = splat(1e-6f);
    for (int64_t s = 0; s < kSteps; ++s) {
#pragma GCC unroll 16
        for (int i = 0; i < kChains; ++i) acc[i] = fmadd(acc[i], mul, add);
    }
    float sum = 0.0f;
    for (int i = 0; i < kChains; ++i) sum += acc[i][0];
    return sum;
}

void bm_fma_peak(benchmark::State &state) {
    const int n_threads = int(state.range(0));
    cpu::ThreadPool pool(n_threads);  // the pool CpuBackend runs kernels on
    std::vector<float> sink(static_cast<size_t>(n_threads));
    const double flops = 2.0 * VL * kChains * double(kSteps) * n_threads;
    std::vector<double> rates;
    for (auto _ : state) {
        const auto start = std::chrono::steady_clock::now();
        pool.run(n_threads, [&](int ith, int) { sink[size_t(ith)] = fma_loop(float(ith)); });
        benchmark::DoNotOptimize(sink.data());
        rates.push_back(flops * 1e-9 / seconds_since(start));
    }
    g_fma_gflops[thread_slot(state)] = median(rates);
    set_flops(state, flops);
    state.counters["median_GFLOPS"] = median(rates);
}

// ---------------------------------------------------------------------------------------------
// Read bandwidth: bench/read_loop.h over a 1 GiB buffer.

constexpr size_t kReadBytes = size_t(1) << 30;

// kFastest: each iteration is one pass of every loop, its rate the fastest's (the bound);
// otherwise one pass of sum_plain (read_bw_plain, the loop before).
template <bool kFastest>
void bm_read_bw(benchmark::State &state) {
    const int n_threads = int(state.range(0));
    const size_t n = kReadBytes / sizeof(float);
    // Host memory as the weights get it (huge pages where the kernel grants them).
    const std::unique_ptr<Buffer> memory = host_buffer_type().allocate(kReadBytes);
    std::span<float> buf(static_cast<float *>(memory->base()), n);
    cpu::ThreadPool pool(n_threads);
    // First touch by the threads that read, then one untimed pass.
    pool.run(n_threads, [&](int ith, int) {
        const size_t b = n * size_t(ith) / size_t(n_threads),
                     e = n * size_t(ith + 1) / size_t(n_threads);
        for (size_t i = b; i < e; ++i) buf[i] = float(i & 1023) * 1e-3f;
    });
    std::vector<float> sink;
    auto pass = [&] {  // seconds
        if constexpr (kFastest) {
            return bench::fastest_read_seconds(pool, n_threads, buf.data(), n, sink);
        }
        const auto start = std::chrono::steady_clock::now();
        bench::read_pass<bench::sum_plain>(pool, n_threads, buf.data(), n, sink);
        return seconds_since(start);
    };
    pass();
    std::vector<double> rates;
    for (auto _ : state) rates.push_back(double(kReadBytes) * 1e-9 / pass());
    if (kFastest) g_read_gbps[thread_slot(state)] = median(rates);
    state.counters["median_GB/s"] = median(rates);
    // (not bytes over the iterations' time: a fastest-of iteration reads the buffer three times)
    state.counters["GB/s"] = median(rates);
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

// Rows M for the DRAM-sized matrix-vector cases: the least multiple of 4096 whose [4096, M]
// weight holds at least 1 GiB. Not less: an L3 keeps part of a smaller matrix from one pass to
// the next (the Zen 5's 32 MiB victim cache: the read loop streams 105-114 GB/s over the same 128
// MiB, 93-98 over 256 MiB, 86-90 over 512 MiB and 85-87 over 1 GiB, one burst, alternating).
int64_t dram_rows(DType type) {
    const size_t row = row_size(type, kDim), want = size_t(1) << 30;
    const int64_t rows = int64_t((want + row - 1) / row);
    return (rows + kDim - 1) / kDim * kDim;
}

}  // namespace

BENCHMARK(bm_fma_peak)->Name("fma_peak")->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();
BENCHMARK(bm_read_bw<true>)
    ->Name("read_bw")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_read_bw<false>)
    ->Name("read_bw_plain")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

#define LOOM_BENCH_MUL_MAT(label, type, k, m, n, ...)                         \
    BENCHMARK_CAPTURE(bm_mul_mat, label, DType::type, k, m, n, ##__VA_ARGS__) \
        ->Name("mul_mat/" #label)                                             \
        ->ArgName("threads")                                                  \
        ->Arg(1)                                                              \
        ->Arg(2)                                                              \
        ->UseRealTime()                                                       \
        ->Unit(benchmark::kMillisecond)

LOOM_BENCH_MUL_MAT(f32_n1, F32, kDim, kDim, 1);
LOOM_BENCH_MUL_MAT(f16_n1, F16, kDim, kDim, 1);
LOOM_BENCH_MUL_MAT(f32_n512, F32, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(f16_n512, F16, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(f32_512x512x512, F32, 512, 512, 512);

// Block formats next to F16: [4096, 4096] at n = 1 (fits the L3) and n = 512, then n = 1 on a
// weight of at least 1 GiB, which streams from DRAM.
LOOM_BENCH_MUL_MAT(q4_0_n1, Q4_0, kDim, kDim, 1);
LOOM_BENCH_MUL_MAT(q8_0_n1, Q8_0, kDim, kDim, 1);
LOOM_BENCH_MUL_MAT(q4_k_n1, Q4_K, kDim, kDim, 1);
LOOM_BENCH_MUL_MAT(q6_k_n1, Q6_K, kDim, kDim, 1);
LOOM_BENCH_MUL_MAT(q4_0_n512, Q4_0, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(q8_0_n512, Q8_0, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(q4_k_n512, Q4_K, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(q6_k_n512, Q6_K, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(f16_n1_dram, F16, kDim, dram_rows(DType::F16), 1);
LOOM_BENCH_MUL_MAT(q4_0_n1_dram, Q4_0, kDim, dram_rows(DType::Q4_0), 1);
LOOM_BENCH_MUL_MAT(q8_0_n1_dram, Q8_0, kDim, dram_rows(DType::Q8_0), 1);
LOOM_BENCH_MUL_MAT(q4_k_n1_dram, Q4_K, kDim, dram_rows(DType::Q4_K), 1);
LOOM_BENCH_MUL_MAT(q6_k_n1_dram, Q6_K, kDim, dram_rows(DType::Q6_K), 1);
// Generation kernels on [4096, 256] weights that stay in one core's L2 (<= 0.86 MiB): what the
// kernel computes per second when memory does not bound it.
LOOM_BENCH_MUL_MAT(q4_0_n1_l2, Q4_0, kDim, 256, 1);
LOOM_BENCH_MUL_MAT(q8_0_n1_l2, Q8_0, kDim, 256, 1);
LOOM_BENCH_MUL_MAT(q4_k_n1_l2, Q4_K, kDim, 256, 1);
LOOM_BENCH_MUL_MAT(q6_k_n1_l2, Q6_K, kDim, 256, 1);
LOOM_BENCH_MUL_MAT(q2_k_n1_l2, Q2_K, kDim, 256, 1);
LOOM_BENCH_MUL_MAT(q3_k_n1_l2, Q3_K, kDim, 256, 1);
LOOM_BENCH_MUL_MAT(q5_k_n1_l2, Q5_K, kDim, 256, 1);
LOOM_BENCH_MUL_MAT(iq4_nl_n1_l2, IQ4_NL, kDim, 256, 1);
LOOM_BENCH_MUL_MAT(iq4_xs_n1_l2, IQ4_XS, kDim, 256, 1);
// The other legacy and K-quant formats: generation from DRAM, and the K-quants' prompt products.
LOOM_BENCH_MUL_MAT(q2_k_n512, Q2_K, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(q3_k_n512, Q3_K, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(q5_k_n512, Q5_K, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(q4_1_n1_dram, Q4_1, kDim, dram_rows(DType::Q4_1), 1);
LOOM_BENCH_MUL_MAT(q5_0_n1_dram, Q5_0, kDim, dram_rows(DType::Q5_0), 1);
LOOM_BENCH_MUL_MAT(q5_1_n1_dram, Q5_1, kDim, dram_rows(DType::Q5_1), 1);
LOOM_BENCH_MUL_MAT(q2_k_n1_dram, Q2_K, kDim, dram_rows(DType::Q2_K), 1);
LOOM_BENCH_MUL_MAT(q3_k_n1_dram, Q3_K, kDim, dram_rows(DType::Q3_K), 1);
LOOM_BENCH_MUL_MAT(q5_k_n1_dram, Q5_K, kDim, dram_rows(DType::Q5_K), 1);
// The table-indexed 4-bit formats (gpt-oss's MXFP4 experts, IQ4_NL, IQ4_XS).
LOOM_BENCH_MUL_MAT(mxfp4_n1, MXFP4, kDim, kDim, 1);
LOOM_BENCH_MUL_MAT(iq4_nl_n1, IQ4_NL, kDim, kDim, 1);
LOOM_BENCH_MUL_MAT(iq4_xs_n1, IQ4_XS, kDim, kDim, 1);
LOOM_BENCH_MUL_MAT(mxfp4_n512, MXFP4, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(iq4_nl_n512, IQ4_NL, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(iq4_xs_n512, IQ4_XS, kDim, kDim, 512);
LOOM_BENCH_MUL_MAT(mxfp4_n1_dram, MXFP4, kDim, dram_rows(DType::MXFP4), 1);
LOOM_BENCH_MUL_MAT(iq4_nl_n1_dram, IQ4_NL, kDim, dram_rows(DType::IQ4_NL), 1);
LOOM_BENCH_MUL_MAT(iq4_xs_n1_dram, IQ4_XS, kDim, dram_rows(DType::IQ4_XS), 1);
// The same products with the weights in the file's layout (per-row dot products, no repacking):
// what the integer kernels gain.
LOOM_BENCH_MUL_MAT(q4_0_n1_plain, Q4_0, kDim, kDim, 1, Weights::plain);
// 16-bit floats grouped and in the file's layout (rows transposed in registers): in L2 ([4096, 64],
// 0.5 MiB) what each computes, from memory what a model without the repacked copy would stream.
LOOM_BENCH_MUL_MAT(f16_n1_l2, F16, kDim, 64, 1);
LOOM_BENCH_MUL_MAT(f16_n1_l2_plain, F16, kDim, 64, 1, Weights::plain);
LOOM_BENCH_MUL_MAT(f16_n1_dram_plain, F16, kDim, dram_rows(DType::F16), 1, Weights::plain);
LOOM_BENCH_MUL_MAT(bf16_n1_l2, BF16, kDim, 64, 1);
LOOM_BENCH_MUL_MAT(bf16_n1_l2_plain, BF16, kDim, 64, 1, Weights::plain);
LOOM_BENCH_MUL_MAT(bf16_n1_dram, BF16, kDim, dram_rows(DType::BF16), 1);
LOOM_BENCH_MUL_MAT(bf16_n1_dram_plain, BF16, kDim, dram_rows(DType::BF16), 1, Weights::plain);
LOOM_BENCH_MUL_MAT(q4_0_n512_plain, Q4_0, kDim, kDim, 512, Weights::plain);
LOOM_BENCH_MUL_MAT(q4_k_n512_plain, Q4_K, kDim, kDim, 512, Weights::plain);
LOOM_BENCH_MUL_MAT(mxfp4_n1_plain, MXFP4, kDim, kDim, 1, Weights::plain);
LOOM_BENCH_MUL_MAT(iq4_xs_n1_plain, IQ4_XS, kDim, kDim, 1, Weights::plain);
LOOM_BENCH_MUL_MAT(mxfp4_n512_plain, MXFP4, kDim, kDim, 512, Weights::plain);

// ---------------------------------------------------------------------------------------------
// Attention at depth: helpers of both cases below.

// The engine's mask for n_q queries at positions [depth, depth + n_q): each sees the positions up
// to its own.
Tensor *causal_mask(Context &ctx, int64_t n_q, int64_t depth) {
    const int64_t n_kv = depth + n_q;
    Tensor *mask = ctx.new_tensor(DType::F16, {n_kv, n_q});
    auto *m = static_cast<uint16_t *>(mask->data);
    for (int64_t i = 0; i < n_q; ++i) {
        for (int64_t j = 0; j < n_kv; ++j) {
            m[i * n_kv + j] = f32_to_fp16(j <= depth + i ? 0.0f : -INFINITY);
        }
    }
    return mask;
}

// Seconds for the state's iterations of the graph on state.range(0) threads, after one untimed.
double time_graph(benchmark::State &state, Graph &graph) {
    CpuBackend backend(int(state.range(0)));
    backend.graph_compute(graph);
    const auto start = std::chrono::steady_clock::now();
    for (auto _ : state) {
        backend.graph_compute(graph);
        benchmark::ClobberMemory();
    }
    return seconds_since(start);
}

// Attention at depth: n_q queries at positions [depth, depth + n_q) over a cache of depth + n_q
// positions, each query seeing the positions up to its own (a causal F16 mask, as the engine
// builds one), for 16 layers: each layer's cache, [64 x 8 heads, depth + n_q] F16 cells, is read
// from memory after the other layers' have passed, as in a model.

void bm_flash_attn(benchmark::State &state, int64_t n_q, int64_t depth, DType kv_type) {
    constexpr int64_t kHead = 64, kHeads = 32, kKvHeads = 8, kLayers = 16;
    const int64_t n_kv = depth + n_q;
    const size_t cache_bytes = 2 * kLayers * row_size(kv_type, kHead * kKvHeads) * size_t(n_kv);
    Context ctx({.mem_size = cache_bytes +
                             size_t(kHead * n_q * kHeads * (1 + kLayers) + n_kv * n_q) * 4 +
                             (4u << 20)});
    Tensor *q = ctx.new_tensor(DType::F32, {kHead, n_q, kHeads});
    fill_random(q, 3);
    Tensor *mask = causal_mask(ctx, n_q, depth);
    Graph *graph = new_graph(ctx);
    for (int64_t layer = 0; layer < kLayers; ++layer) {
        // Laid out as the KV cache stores them: a cell's heads side by side, cell after cell.
        Tensor *k_cells = ctx.new_tensor(kv_type, {kHead * kKvHeads, n_kv});
        Tensor *v_cells = ctx.new_tensor(kv_type, {kHead * kKvHeads, n_kv});
        fill_random(k_cells, uint32_t(4 + 2 * layer));
        fill_random(v_cells, uint32_t(5 + 2 * layer));
        const size_t head_bytes = row_size(kv_type, kHead);
        Tensor *k = view_3d(ctx, k_cells, kHead, n_kv, kKvHeads, k_cells->nb[1], head_bytes, 0);
        Tensor *v = view_3d(ctx, v_cells, kHead, n_kv, kKvHeads, v_cells->nb[1], head_bytes, 0);
        build_forward_expand(graph, flash_attn_ext(ctx, q, k, v, mask, {.scale = 0.125f}));
    }
    const double seconds = time_graph(state, *graph), iters = double(state.iterations());
    // visible scores: query i sees depth + i + 1 positions
    const double scores = double(kLayers * kHeads) *
                          (double(n_q) * double(depth + 1) + double(n_q) * double(n_q - 1) / 2.0);
    const double flops = 4.0 * double(kHead) * scores;
    set_flops(state, flops);
    const int slot = thread_slot(state);
    if (g_fma_gflops[slot] > 0.0) {
        state.counters["%peak"] = 100.0 * flops * iters * 1e-9 / seconds / g_fma_gflops[slot];
    }
}

#define LOOM_BENCH_FLASH_ATTN(label, n_q, depth, kv_type)        \
    BENCHMARK_CAPTURE(bm_flash_attn, label, n_q, depth, kv_type) \
        ->Name("flash_attn/" #label)                             \
        ->ArgName("threads")                                     \
        ->Arg(1)                                                 \
        ->Arg(2)                                                 \
        ->UseRealTime()                                          \
        ->Unit(benchmark::kMillisecond)

LOOM_BENCH_FLASH_ATTN(pp512_d4096, 512, 4096, DType::F16);
LOOM_BENCH_FLASH_ATTN(pp512_d0, 512, 0, DType::F16);
LOOM_BENCH_FLASH_ATTN(tg_d4096, 1, 4096, DType::F16);
// generation at depth on a quantized cache against F16 (issue: "no slower than with F16")
LOOM_BENCH_FLASH_ATTN(tg_d16384, 1, 16384, DType::F16);
LOOM_BENCH_FLASH_ATTN(tg_d16384_q8_0, 1, 16384, DType::Q8_0);
LOOM_BENCH_FLASH_ATTN(tg_d16384_q4_0, 1, 16384, DType::Q4_0);
LOOM_BENCH_FLASH_ATTN(pp512_d4096_q8_0, 512, 4096, DType::Q8_0);

// The same attention without flash attention, as the engine builds it (graph_context.cpp): K·Q with
// the 4 query heads of a KV head as one product's columns, the softmax, and V·softmax against the
// transposed V cache, both summed in llama.cpp's order (SumOrder::eight_lanes). `part` times the
// scores alone (kq), or the whole (all).
enum class AttnPart { kq, all };

void bm_attn_products(benchmark::State &state, int64_t n_q, int64_t depth, int64_t layers,
                      AttnPart part) {
    constexpr int64_t kHead = 64, kHeads = 32, kKvHeads = 8, kGqa = kHeads / kKvHeads;
    const int64_t n_kv = depth + n_q;
    const size_t cache_bytes =
        2 * size_t(layers) * row_size(DType::F16, kHead * kKvHeads) * size_t(n_kv);
    // per layer the scores, the probabilities (n_kv x n_q x heads each) and the output
    const size_t scores = size_t(n_kv * n_q * kHeads), out = size_t(kHead * n_q * kHeads);
    Context ctx({.mem_size = cache_bytes +
                             (size_t(layers) * (2 * scores + out) + size_t(n_kv * n_q) + out) * 4 +
                             (4u << 20)});
    Tensor *q = ctx.new_tensor(DType::F32, {kHead, n_q * kGqa, kKvHeads});
    fill_random(q, 3);
    Tensor *mask = causal_mask(ctx, n_q, depth);
    Graph *graph = new_graph(ctx);
    for (int64_t layer = 0; layer < layers; ++layer) {
        // K as the cache stores it (a cell's heads side by side), V transposed (a dimension's
        // cells side by side), as the engine's cache without flash attention.
        Tensor *k_cells = ctx.new_tensor(DType::F16, {kHead * kKvHeads, n_kv});
        Tensor *v_dims = ctx.new_tensor(DType::F16, {n_kv, kHead * kKvHeads});
        fill_random(k_cells, uint32_t(4 + 2 * layer));
        fill_random(v_dims, uint32_t(5 + 2 * layer));
        Tensor *k = view_3d(ctx, k_cells, kHead, n_kv, kKvHeads, k_cells->nb[1],
                            row_size(DType::F16, kHead), 0);
        Tensor *kq = mul_mat(ctx, k, q, SumOrder::eight_lanes);  // [n_kv, n_q * 4, 8]
        if (part == AttnPart::kq) {
            build_forward_expand(graph, kq);
            continue;
        }
        kq = soft_max_ext(ctx, reshape(ctx, kq, {n_kv, n_q, kHeads}), mask, {.scale = 0.125f});
        Tensor *v =
            view_3d(ctx, v_dims, n_kv, kHead, kKvHeads, v_dims->nb[1], kHead * v_dims->nb[1], 0);
        Tensor *probs = reshape(ctx, kq, {n_kv, n_q * kGqa, kKvHeads});
        build_forward_expand(graph, mul_mat(ctx, v, probs, SumOrder::eight_lanes));
    }
    const double seconds = time_graph(state, *graph), iters = double(state.iterations());
    const double bytes = double(part == AttnPart::kq ? cache_bytes / 2 : cache_bytes);
    state.counters["GB/s"] = bytes * iters * 1e-9 / seconds;
}

#define LOOM_BENCH_ATTN_PRODUCTS(label, n_q, depth, layers, part)                  \
    BENCHMARK_CAPTURE(bm_attn_products, label, n_q, depth, layers, AttnPart::part) \
        ->Name("attn_products/" #label)                                            \
        ->ArgName("threads")                                                       \
        ->Arg(1)                                                                   \
        ->Arg(2)                                                                   \
        ->UseRealTime()                                                            \
        ->Unit(benchmark::kMillisecond)

LOOM_BENCH_ATTN_PRODUCTS(tg_d4096_kq, 1, 4096, 16, kq);
LOOM_BENCH_ATTN_PRODUCTS(tg_d4096, 1, 4096, 16, all);
LOOM_BENCH_ATTN_PRODUCTS(tg_d16384, 1, 16384, 16, all);
// a prompt's ubatch: the scores alone are a quarter of a GiB a layer at 4,096 cells, so one layer
LOOM_BENCH_ATTN_PRODUCTS(pp512_d4096_kq, 512, 4096, 1, kq);
LOOM_BENCH_ATTN_PRODUCTS(pp512_d4096, 512, 4096, 1, all);

BENCHMARK(bm_naive_matmul)
    ->Name("naive_matmul_512")
    ->Arg(512)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
