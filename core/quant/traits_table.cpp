// The dtype traits table of this build's instruction-set level (core/isa.h): one row per entry
// of loom/dtype.def, with the float conversions and the block formats' functions compiled for
// the level (the dispatcher, traits() in core/dtype.cpp, picks one table).
#include <algorithm>
#include <array>
#include <cstring>

#include "core/quant/quant.h"
#include "loom/core.h"
#include "loom/fp16.h"

#if LOOM_X86_F16C
#include <immintrin.h>
#endif

namespace loom::quant::inline LOOM_ISA {
namespace {

// (memcpy of zero bytes still needs valid pointers, and an empty tensor has none)
void f32_to_float(const void *src, float *dst, int64_t n) {
    if (n > 0) std::memcpy(dst, src, size_t(n) * sizeof(float));
}
void f32_from_float(const float *src, void *dst, int64_t n) {
    if (n > 0) std::memcpy(dst, src, size_t(n) * sizeof(float));
}

void f16_to_float(const void *src, float *dst, int64_t n) {
    const auto *h = static_cast<const uint16_t *>(src);
    int64_t i = 0;
#if LOOM_X86_F16C
    for (; i + 8 <= n; i += 8) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(h + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(v));
    }
#endif
    for (; i < n; ++i) dst[i] = fp16_to_f32(h[i]);
}
void f16_from_float(const float *src, void *dst, int64_t n) {
    auto *h = static_cast<uint16_t *>(dst);
    int64_t i = 0;
#if LOOM_X86_F16C
    for (; i + 8 <= n; i += 8) {
        const __m128i v = _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128(reinterpret_cast<__m128i *>(h + i), v);
    }
#endif
    for (; i < n; ++i) h[i] = f32_to_fp16(src[i]);
}

void bf16_to_float(const void *src, float *dst, int64_t n) {
    const auto *h = static_cast<const uint16_t *>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(h[i]);
}
void bf16_from_float(const float *src, void *dst, int64_t n) {
    auto *h = static_cast<uint16_t *>(dst);
    for (int64_t i = 0; i < n; ++i) h[i] = f32_to_bf16(src[i]);
}

struct Converters {
    void (*to_float)(const void *, float *, int64_t);
    void (*from_float)(const float *, void *, int64_t);
};
constexpr Converters converters(DType type) {
    switch (type) {  // only the float types convert; integers are indices, not values
        case DType::F32:
            return {f32_to_float, f32_from_float};
        case DType::F16:
            return {f16_to_float, f16_from_float};
        case DType::BF16:
            return {bf16_to_float, bf16_from_float};
        default:
            return {nullptr, nullptr};
    }
}

}  // namespace

// The numbers come from dtype.def; the block formats' functions from their family files. Built
// at the first call, not at start: in a portable build only the selected level's code may run.
const TraitsTable &traits_table() {
    static const TraitsTable table = [] {
        std::array<DTypeTraits, kDTypeCount> t = {{
#define LOOM_DTYPE(name_, gguf_id_, block_size_, type_size_) \
    {.name = #name_,                                         \
     .gguf_id = gguf_id_,                                    \
     .block_size = block_size_,                              \
     .type_size = type_size_,                                \
     .is_quantized = (block_size_) > 1,                      \
     .to_float = converters(DType::name_).to_float,          \
     .from_float = converters(DType::name_).from_float,      \
     .from_float_in_ops = nullptr,                           \
     .vec_dot_type = DType::name_,                           \
     .vec_dot = nullptr,                                     \
     .vec_dot_scalar = nullptr},
#include "loom/dtype.def"
#undef LOOM_DTYPE
        }};
        fill_legacy_traits(t);
        fill_k_traits(t);
        fill_lut4_traits(t);
        for (DTypeTraits &row : t) {
            if (row.from_float_in_ops == nullptr) row.from_float_in_ops = row.from_float;
        }
        return t;
    }();
    return table;
}

}  // namespace loom::quant::LOOM_ISA
