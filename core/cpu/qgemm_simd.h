#pragma once
// Loads the integer tiles (qgemm_legacy.cpp, qgemm_k.cpp) share; AVX-512 builds only.
#include <cstring>

#include "core/cpu/repack.h"

#if LOOM_INTEGER_KERNELS
#include <immintrin.h>
// GCC 12's AVX-512 headers start some conversions (vcvtph2ps, vpmovzx) from an "undefined"
// vector and then warn that it may be used uninitialized; it is not.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace loom::cpu::qgemm {

// Panels are byte arrays: scalars are read with memcpy, which the compiler folds into the
// broadcast operand of the instruction that uses them.
inline __m512i broadcast_i32(const std::byte *p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}
inline float load_f32(const std::byte *p) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
}
// 16 F16 scales of a group block, widened.
inline __m512 load_f16x16(const std::byte *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
}
inline __m512i load512(const std::byte *p) {
    return _mm512_loadu_si512(p);
}

}  // namespace loom::cpu::qgemm

#endif
