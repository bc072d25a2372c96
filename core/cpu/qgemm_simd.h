#pragma once
// Loads the integer tiles (qgemm_legacy.cpp, qgemm_k.cpp) share; AVX-512 builds only.
#include <cstring>

#include "core/cpu/repack.h"

#if LOOM_INTEGER_KERNELS
#include <immintrin.h>
// GCC 12's AVX-512 headers start some conversions (vcvtph2ps, vpmovzx) from an "undefined"
// vector (__Y) and then warn that it is or may be used uninitialized; it is not.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

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

// 16 byte values indexed by 4-bit codes (the table-indexed formats' levels, made unsigned):
// low(v) looks up the low nibble of each byte of v, high(v) the high nibble.
class NibbleTable {
  public:
    explicit NibbleTable(const uint8_t *values)
        : table_(
              _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i *>(values)))) {}
#if defined(__AVX512VBMI__)
    // VPERMB reads 6 bits of each index and the table repeats every 16 bytes, so the 2 bits above
    // the nibble do not matter: no mask.
    __m512i low(__m512i v) const {
        return _mm512_permutexvar_epi8(v, table_);
    }
    __m512i high(__m512i v) const {
        return _mm512_permutexvar_epi8(_mm512_srli_epi16(v, 4), table_);
    }
#else
    // VPSHUFB zeroes a byte whose index has bit 7 set: mask the nibble first.
    __m512i low(__m512i v) const {
        return _mm512_shuffle_epi8(table_, _mm512_and_si512(v, mask()));
    }
    __m512i high(__m512i v) const {
        return _mm512_shuffle_epi8(table_, _mm512_and_si512(_mm512_srli_epi16(v, 4), mask()));
    }
#endif

  private:
    static __m512i mask() {
        return _mm512_set1_epi8(0x0F);
    }
    __m512i table_;
};

}  // namespace loom::cpu::qgemm

#endif
