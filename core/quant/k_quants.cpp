// The K-quant rows of the dtype traits table. Every K format's dot product takes Q8_K activations,
// as in ggml.
#include "core/quant/k_blocks.h"
#include "core/quant/quant.h"

namespace loom::quant::inline LOOM_ISA {
namespace {

struct KFormat {
    DType type;
    void (*to_float)(const void *, float *, int64_t);
    void (*from_float)(const float *, void *, int64_t);
    float (*vec_dot)(int64_t, const void *, const void *);
    float (*vec_dot_scalar)(int64_t, const void *, const void *);
};

// Where the build has AVX2 and FMA, the dot products are ggml's AVX2 kernels with their float
// order; elsewhere the generic order, computed with vectors.
#if LOOM_X86_AVX512VNNI && LOOM_X86_AVX512BW && LOOM_X86_FMA
constexpr auto kDotQ2K = dot_q2_k_avx512;
constexpr auto kDotQ3K = dot_q3_k_avx512;
#elif LOOM_X86_AVX2 && LOOM_X86_FMA
constexpr auto kDotQ2K = dot_q2_k_avx2;
constexpr auto kDotQ3K = dot_q3_k_avx2;
#endif
#if LOOM_X86_AVX2 && LOOM_X86_FMA
constexpr auto kDotQ4K = dot_q4_k_avx2;
constexpr auto kDotQ5K = dot_q5_k_avx2;
constexpr auto kDotQ6K = dot_q6_k_avx2;
#else
constexpr auto kDotQ2K = dot_q2_k;
constexpr auto kDotQ3K = dot_q3_k;
constexpr auto kDotQ4K = dot_q4_k;
constexpr auto kDotQ5K = dot_q5_k;
constexpr auto kDotQ6K = dot_q6_k;
#endif

constexpr KFormat kFormats[] = {
    {DType::Q2_K, dequantize_q2_k, quantize_q2_k, kDotQ2K, dot_q2_k_scalar},
    {DType::Q3_K, dequantize_q3_k, quantize_q3_k, kDotQ3K, dot_q3_k_scalar},
    {DType::Q4_K, dequantize_q4_k, quantize_q4_k, kDotQ4K, dot_q4_k_scalar},
    {DType::Q5_K, dequantize_q5_k, quantize_q5_k, kDotQ5K, dot_q5_k_scalar},
    {DType::Q6_K, dequantize_q6_k, quantize_q6_k, kDotQ6K, dot_q6_k_scalar},
};

}  // namespace

void fill_k_traits(TraitsTable &table) {
    for (const KFormat &f : kFormats) {
        DTypeTraits &t = table[size_t(f.type)];
        t.to_float = f.to_float;
        t.from_float = f.from_float;
        t.vec_dot_type = DType::Q8_K;
        t.vec_dot = f.vec_dot;
        t.vec_dot_scalar = f.vec_dot_scalar;
    }
    // Q8_K only carries activations: it converts, but has no dot product of its own.
    DTypeTraits &q8 = table[size_t(DType::Q8_K)];
    q8.to_float = dequantize_q8_k;
    q8.from_float = quantize_q8_k;
}

}  // namespace loom::quant::inline LOOM_ISA
