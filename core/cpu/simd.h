#pragma once
// Vectors for the CPU kernels: GCC vector extensions of the widest width the build targets (64
// bytes with AVX-512, 32 with AVX2, else 16), so one source compiles for any x86-64 level and
// for other architectures. Intrinsics appear only where an extension has no equivalent (fused
// multiply-add, F16 conversion).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "core/isa.h"
#include "loom/fp16.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace loom::cpu::inline LOOM_ISA::simd {

#if LOOM_X86_AVX512F
#define LOOM_VEC_BYTES 64
#elif LOOM_X86_AVX2
#define LOOM_VEC_BYTES 32
#else
#define LOOM_VEC_BYTES 16
#endif

typedef float vf __attribute__((vector_size(LOOM_VEC_BYTES)));
typedef int32_t vi __attribute__((vector_size(LOOM_VEC_BYTES)));
typedef uint16_t vh __attribute__((vector_size(LOOM_VEC_BYTES / 2)));
typedef uint32_t vu __attribute__((vector_size(LOOM_VEC_BYTES)));

inline constexpr int VL = LOOM_VEC_BYTES / int(sizeof(float));  // floats per vector
// Architectural vector registers, which bound register tiles: 32 with AVX-512 and on AArch64,
// 16 for SSE/AVX2.
#if LOOM_X86_AVX512F || defined(__aarch64__)
inline constexpr int kVecRegs = 32;
#else
inline constexpr int kVecRegs = 16;
#endif

inline vf load(const float *p) {
    vf v;
    std::memcpy(&v, p, sizeof v);
    return v;
}
inline void store(float *p, vf v) {
    std::memcpy(p, &v, sizeof v);
}

// Whether any lane of a comparison's result (all ones or zero in each lane) is true.
inline bool any_lane(vi mask) {
#if LOOM_VEC_BYTES == 64
    return _mm512_cmpneq_epi32_mask(__m512i(mask), _mm512_setzero_si512()) != 0;
#elif LOOM_VEC_BYTES == 32
    return _mm256_movemask_ps(_mm256_castsi256_ps(__m256i(mask))) != 0;
#elif defined(__x86_64__)
    return _mm_movemask_ps(_mm_castsi128_ps(__m128i(mask))) != 0;
#else
    for (int l = 0; l < VL; ++l) {
        if (mask[l] != 0) return true;
    }
    return false;
#endif
}

// Whether every lane of a comparison's result is true.
inline bool all_lanes(vi mask) {
#if LOOM_VEC_BYTES == 64
    return _mm512_cmpneq_epi32_mask(__m512i(mask), _mm512_setzero_si512()) == 0xffff;
#elif LOOM_VEC_BYTES == 32
    return _mm256_movemask_ps(_mm256_castsi256_ps(__m256i(mask))) == 0xff;
#elif defined(__x86_64__)
    return _mm_movemask_ps(_mm_castsi128_ps(__m128i(mask))) == 0xf;
#else
    for (int l = 0; l < VL; ++l) {
        if (mask[l] == 0) return false;
    }
    return true;
#endif
}

// A broadcast the compiler folds into an FMA's memory operand ({1to16} with AVX-512).
inline vf splat(float x) {
#if LOOM_VEC_BYTES == 64
    return _mm512_set1_ps(x);
#elif LOOM_VEC_BYTES == 32
    return _mm256_set1_ps(x);
#elif defined(__x86_64__)
    return _mm_set1_ps(x);
#else
    return x - vf{};  // x - (+0) is x for every x, so this folds to a plain broadcast
#endif
}
inline vi splat_int(int32_t x) {
    return x - vi{};
}

// a * b + c with one rounding where the ISA has FMA: an intrinsic, so no result hangs on how
// the compiler contracts a * b + c elsewhere (GCC does in C++ whatever the -std).
inline vf fmadd(vf a, vf b, vf c) {
#if LOOM_VEC_BYTES == 64
    return _mm512_fmadd_ps(a, b, c);
#elif LOOM_VEC_BYTES == 32 && LOOM_X86_FMA
    return _mm256_fmadd_ps(a, b, c);
#elif LOOM_VEC_BYTES == 16 && LOOM_X86_FMA
    return _mm_fmadd_ps(a, b, c);
#else
    return a * b + c;
#endif
}

// The low and high halves of a vector of N floats, as vectors of N / 2 (in registers: the halving
// reductions below never go through memory).
template <int N>
struct FloatVector {
    typedef float type __attribute__((vector_size(N * sizeof(float))));
};
template <int N>
using floats = typename FloatVector<N>::type;
template <int N, size_t... I>
inline floats<N / 2> low_half(floats<N> v, std::index_sequence<I...>) {
    return __builtin_shufflevector(v, v, int(I)...);
}
template <int N, size_t... I>
inline floats<N / 2> high_half(floats<N> v, std::index_sequence<I...>) {
    return __builtin_shufflevector(v, v, int(I + N / 2)...);
}

// Sum of the lanes as a fixed pairwise tree (lane i + lane i + VL/2, then + VL/4, ...): the order
// of _mm512_reduce_add_ps, which ggml uses.
template <int N = VL>
inline float hsum(floats<N> v) {
    if constexpr (N == 2) {
        return v[0] + v[1];
    } else {
        constexpr auto half = std::make_index_sequence<N / 2>();
        return hsum<N / 2>(low_half<N>(v, half) + high_half<N>(v, half));
    }
}

// Largest lane (lanes are compared with >, so a NaN lane is passed over), by the same tree.
template <int N = VL>
inline float hmax(floats<N> v) {
    if constexpr (N == 2) {
        return v[1] > v[0] ? v[1] : v[0];
    } else {
        constexpr auto half = std::make_index_sequence<N / 2>();
        const floats<N / 2> lo = low_half<N>(v, half), hi = high_half<N>(v, half);
        return hmax<N / 2>(hi > lo ? hi : lo);
    }
}

// e^x for x <= 0 (NaN stays NaN), computed as ggml_v_expf does (Arm's optimized-routines expf,
// at most 1.45 + 0.5 ulp from e^x): x = n ln2 + b with |b| <= ln2/2, e^b by a degree-5
// polynomial, then times 2^n.
inline vf exp_nonpositive(vf x) {
    const vf shift = splat(0x1.8p23f);  // adding 1.5 * 2^23 rounds to an integer in the low bits
    const vf z = fmadd(x, splat(0x1.715476p+0f), shift);  // x log2(e) + shift
    const vf n = z - shift;
    // b = x - n ln2, with ln2 split in two so the first product is exact
    const vf b = fmadd(-n, splat(0x1.7f7d1cp-20f), fmadd(-n, splat(0x1.62e4p-1f), x));
    const vf u = b * b;
    const vf p = fmadd(fmadd(fmadd(splat(0x1.0e4020p-7f), b, splat(0x1.573e2ep-5f)), u,
                             fmadd(splat(0x1.555e66p-3f), b, splat(0x1.fffdb6p-2f))),
                       u, fmadd(splat(0x1.ffffecp-1f), b, splat(1.0f)));
    // 2^n as 2^a * 2^(n - a) with a = max(n, -100): p * 2^a is exact (still normal), so a result
    // below FLT_MIN is rounded once, by the last product, as AVX-512's scalef rounds it.
    const vi n_int = reinterpret_cast<vi>(z) - splat_int(0x4b400000);  // the shift's bits
    const vi a = n_int > splat_int(-100) ? n_int : splat_int(-100);
    const vi rest = n_int - a > splat_int(-126) ? n_int - a : splat_int(-126);
    const vf pow_a = reinterpret_cast<vf>((a + 127) << 23);
    const vf pow_rest = reinterpret_cast<vf>((rest + 127) << 23);
    const vf result = p * pow_a * pow_rest;
    // below 2^-192 (and for x = -inf) the result is 0, as in ggml
    return reinterpret_cast<vf>(reinterpret_cast<vi>(result) & ~(n < splat(-192.0f)));
}

// e^x for any x with the arithmetic of ggml's AVX2 ggml_v_expf, which llama.cpp's silu uses (and
// the haswell build that made the fixtures): the same reduction and polynomial as above but
// without its constant term, j, so that e^x = 2^n + 2^n j in one rounding. Past |n| = 126 the
// scale is split in two factors, s1 * (s2 + s2 j); past |n| = 192 the result is 0 or +inf.
inline vf exp_any(vf x) {
    const vf shift = splat(0x1.8p23f);
    const vf z = fmadd(x, splat(0x1.715476p+0f), shift);
    const vf n = z - shift;
    const vf b = fmadd(-n, splat(0x1.7f7d1cp-20f), fmadd(-n, splat(0x1.62e4p-1f), x));
    const vu e = reinterpret_cast<vu>(z) << 23;
    const vf k = reinterpret_cast<vf>(e + 0x3f800000u);  // 2^n
    const vf u = b * b;
    const vf j = fmadd(fmadd(fmadd(splat(0x1.0e4020p-7f), b, splat(0x1.573e2ep-5f)), u,
                             fmadd(splat(0x1.555e66p-3f), b, splat(0x1.fffdb6p-2f))),
                       u, splat(0x1.ffffecp-1f) * b);
    const vf abs_n = reinterpret_cast<vf>(reinterpret_cast<vu>(n) & 0x7fffffffu);
    const vf in_range = fmadd(k, j, k);
    if (!any_lane(abs_n > splat(126.0f))) return in_range;  // the usual case, as ggml skips too
    const vu g = (n <= splat(0.0f)) & 0x82000000u;
    const vf s1 = reinterpret_cast<vf>(g + 0x7f000000u);
    const vf s2 = reinterpret_cast<vf>(e - g);
    const vf big = fmadd(s2, j, s2) * s1;
    return abs_n > splat(192.0f) ? s1 * s1 : (abs_n > splat(126.0f) ? big : in_range);
}

// ---------------------------------------------------------------------------------------------
// Reading rows of each float dtype: VL elements from element i as floats, or one.

struct LoadF32 {
    static constexpr int64_t kSize = sizeof(float);  // bytes per element
    static vf vec(const void *row, int64_t i) { return load(static_cast<const float *>(row) + i); }
    static float one(const void *row, int64_t i) { return static_cast<const float *>(row)[i]; }
};

struct LoadF16 {
    static constexpr int64_t kSize = sizeof(uint16_t);  // bytes per element
    static vf vec(const void *row, int64_t i) {
        const uint16_t *h = static_cast<const uint16_t *>(row) + i;
#if LOOM_VEC_BYTES == 64
        // The zero-masked form: the plain one trips GCC 12's -Wmaybe-uninitialized.
        return _mm512_maskz_cvtph_ps(__mmask16(0xffff),
                                     _mm256_loadu_si256(reinterpret_cast<const __m256i *>(h)));
#elif LOOM_VEC_BYTES == 32 && LOOM_X86_F16C
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(h)));
#elif LOOM_VEC_BYTES == 16 && LOOM_X86_F16C
        return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i *>(h)));
#else
        vf v;
        for (int l = 0; l < VL; ++l) v[l] = fp16_to_f32(h[l]);
        return v;
#endif
    }
    static float one(const void *row, int64_t i) {
        return fp16_to_f32(static_cast<const uint16_t *>(row)[i]);
    }
};

// bfloat16 is the top half of a float: widen each lane and shift it up.
struct LoadBF16 {
    static constexpr int64_t kSize = sizeof(uint16_t);  // bytes per element
    static vf vec(const void *row, int64_t i) {
        vh h;
        std::memcpy(&h, static_cast<const uint16_t *>(row) + i, sizeof h);
        const vu w = __builtin_convertvector(h, vu) << 16;
        return reinterpret_cast<vf>(w);
    }
    static float one(const void *row, int64_t i) {
        return bf16_to_f32(static_cast<const uint16_t *>(row)[i]);
    }
};

}  // namespace loom::cpu::inline LOOM_ISA::simd
