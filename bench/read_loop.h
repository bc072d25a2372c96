#pragma once
// The read loop the benchmarks call the memory bound, on the thread pool the CPU backend runs its
// kernels on. Issue 22 asks for a loop that reads as fast as the best kernel does, and which way
// of reading is fastest differs between CPUs, so the bound is the fastest of three loops, each
// run once (fastest_read_seconds):
// - four streams per thread 128 KiB apart in lockstep, two cache lines of each at a time,
//   prefetching 2 KiB ahead in each, as the kernels read their 16-row groups (core/cpu/qgemm.h).
//   On the Zen 5 EPYC of docs/PERFORMANCE.md, 1 GiB on two threads: 81-86 GB/s where one plain
//   sequential stream per thread read 76-79, one stream with the prefetch 69-74;
// - the same four streams without the prefetch: on the Zen 4 EPYC there, the kernels read faster
//   without their software prefetches (Q4_0 and Q6_K generation 103-110 % of the loop above);
// - one plain sequential stream per thread (`sum_plain`, the loop before; loom-bench-matmul's
//   read_bw_plain case keeps it alone for the comparison).
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

#include "core/cpu/simd.h"
#include "core/cpu/threadpool.h"

namespace loom::bench {

// One sequential stream, eight independent vector accumulators (adds only: the loads are the
// bottleneck).
inline float sum_plain(const float *p, size_t n) {
    using namespace cpu::simd;
    vf acc[8];
    for (vf &v : acc) v = splat(0.0f);
    size_t i = 0;
    for (; i + 8 * VL <= n; i += 8 * VL) {
#pragma GCC unroll 8
        for (int c = 0; c < 8; ++c) acc[c] = acc[c] + load(p + i + size_t(c) * VL);
    }
    float s = 0.0f;
    for (vf &v : acc) s += v[0];
    for (; i < n; ++i) s += p[i];
    return s;
}

// Four streams of kStreamFloats each, read in lockstep, with a prefetch per stream or none; the
// share's tail (less than four streams) as one plain stream.
template <bool kPrefetch = true>
inline float sum_streams(const float *p, size_t n) {
    using namespace cpu::simd;
    constexpr int kStreams = 4;
    constexpr size_t kStreamFloats = (size_t(128) << 10) / sizeof(float);
    constexpr size_t kStep = 128 / sizeof(float);  // two cache lines per stream and step
    constexpr size_t kAheadBytes = 2048;
    static_assert(kStep % (2 * size_t(VL)) == 0, "whole vectors per line pair");
    vf acc[2 * kStreams];
    for (vf &v : acc) v = splat(0.0f);
    size_t base = 0;
    for (; base + kStreams * kStreamFloats <= n; base += kStreams * kStreamFloats) {
        for (size_t o = 0; o < kStreamFloats; o += kStep) {
#pragma GCC unroll 4
            for (int s = 0; s < kStreams; ++s) {
                const float *at = p + base + size_t(s) * kStreamFloats + o;
                const auto *bytes = reinterpret_cast<const char *>(at);
                if constexpr (kPrefetch) {
                    __builtin_prefetch(bytes + kAheadBytes, 0, 3);
                    __builtin_prefetch(bytes + kAheadBytes + 64, 0, 3);
                }
                for (size_t v = 0; v < kStep; v += VL) {
                    vf &a = acc[2 * s + (v * 2 / kStep)];
                    a = a + load(at + v);
                }
            }
        }
    }
    float s = sum_plain(p + base, n - base);
    for (vf &v : acc) s += v[0];
    return s;
}

// One pass over `n` floats on `n_threads` threads of `pool` with `Sum`; the sums go to `sink`
// (one per thread) so that the loads are not optimised away.
template <float (*Sum)(const float *, size_t)>
inline void read_pass(cpu::ThreadPool &pool, int n_threads, const float *data, size_t n,
                      std::vector<float> &sink) {
    sink.resize(size_t(n_threads));
    pool.run(n_threads, [&](int ith, int) {
        const size_t b = n * size_t(ith) / size_t(n_threads);
        const size_t e = n * size_t(ith + 1) / size_t(n_threads);
        sink[size_t(ith)] = Sum(data + b, e - b);
    });
    asm volatile("" : : "r"(sink.data()) : "memory");
}

// The bound: the shortest of one pass of each loop over the same floats, in seconds.
inline double fastest_read_seconds(cpu::ThreadPool &pool, int n_threads, const float *data,
                                   size_t n, std::vector<float> &sink) {
    double best = 0;
    for (auto pass :
         {read_pass<sum_streams<true>>, read_pass<sum_streams<false>>, read_pass<sum_plain>}) {
        const auto start = std::chrono::steady_clock::now();
        pass(pool, n_threads, data, n, sink);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        best = best == 0 ? s : std::min(best, s);
    }
    return best;
}

}  // namespace loom::bench
