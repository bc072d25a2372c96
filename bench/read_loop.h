#pragma once
// The read loop the benchmarks call the memory bound: each thread sums its contiguous share of a
// buffer with eight independent vector accumulators (adds only: the loads are the bottleneck),
// on the thread pool the CPU backend runs its kernels on.
#include <cstddef>
#include <vector>

#include "core/cpu/simd.h"
#include "core/cpu/threadpool.h"

namespace loom::bench {

inline float sum_floats(const float *p, size_t n) {
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

// One pass over `n` floats on `n_threads` threads of `pool`; the sums go to `sink` (one per
// thread) so that the loads are not optimised away.
inline void read_pass(cpu::ThreadPool &pool, int n_threads, const float *data, size_t n,
                      std::vector<float> &sink) {
    sink.resize(size_t(n_threads));
    pool.run(n_threads, [&](int ith, int) {
        const size_t b = n * size_t(ith) / size_t(n_threads);
        const size_t e = n * size_t(ith + 1) / size_t(n_threads);
        sink[size_t(ith)] = sum_floats(data + b, e - b);
    });
    asm volatile("" : : "r"(sink.data()) : "memory");
}

}  // namespace loom::bench
