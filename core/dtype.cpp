// The dtype traits table: one row per entry of loom/dtype.def.
#include <algorithm>
#include <array>
#include <cctype>

#include "core/quant/quant.h"
#include "loom/core.h"
#include "loom/fp16.h"

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace loom {
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
#if defined(__F16C__)
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
#if defined(__F16C__)
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

// The numbers come from dtype.def; the block formats' functions from their family files.
const std::array<DTypeTraits, kDTypeCount> kTraits = [] {
    std::array<DTypeTraits, kDTypeCount> t = {{
#define LOOM_DTYPE(name_, gguf_id_, block_size_, type_size_) \
    {.name = #name_,                                         \
     .gguf_id = gguf_id_,                                    \
     .block_size = block_size_,                              \
     .type_size = type_size_,                                \
     .is_quantized = (block_size_) > 1,                      \
     .to_float = converters(DType::name_).to_float,          \
     .from_float = converters(DType::name_).from_float,      \
     .vec_dot_type = DType::name_,                           \
     .vec_dot = nullptr,                                     \
     .vec_dot_scalar = nullptr},
#include "loom/dtype.def"
#undef LOOM_DTYPE
    }};
    quant::fill_legacy_traits(t);
    quant::fill_k_traits(t);
    quant::fill_lut4_traits(t);
    return t;
}();

constexpr std::array<const char *, kOpCount> kOpNames = {{
#define LOOM_OP(name, in_place) #name,
#include "loom/op.def"
#undef LOOM_OP
}};

constexpr std::array<bool, kOpCount> kOpInPlace = {{
#define LOOM_OP(name, in_place) in_place,
#include "loom/op.def"
#undef LOOM_OP
}};

}  // namespace

const DTypeTraits &traits(DType type) {
    return kTraits[size_t(type)];
}
std::optional<DType> dtype_from_name(std::string_view name) {
    for (size_t i = 0; i < kDTypeCount; ++i) {
        const std::string_view candidate = dtype_name(DType(i));
        const bool same =
            candidate.size() == name.size() &&
            std::equal(name.begin(), name.end(), candidate.begin(), [](char a, char b) {
                return std::tolower(uint8_t(a)) == std::tolower(uint8_t(b));
            });
        if (same) return DType(i);
    }
    return std::nullopt;
}

const char *dtype_name(DType type) {
    return kTraits[size_t(type)].name;
}
const char *op_name(Op op) {
    return kOpNames[size_t(op)];
}
bool op_can_run_in_place(Op op) {
    return kOpInPlace[size_t(op)];
}

size_t row_size(DType type, int64_t ne0) {
    const DTypeTraits &t = traits(type);
    LOOM_ASSERT(ne0 % t.block_size == 0);
    return size_t(ne0 / t.block_size) * t.type_size;
}

}  // namespace loom
