#pragma once
// Element types, operations and the tensor record: the vocabulary every layer shares.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loom {

enum class DType : uint8_t {
#define LOOM_DTYPE(name, gguf_id, block_size, type_size) name,
#include "loom/dtype.def"
#undef LOOM_DTYPE
};
inline constexpr int kDTypeCount = 0
#define LOOM_DTYPE(name, gguf_id, block_size, type_size) +1
#include "loom/dtype.def"
#undef LOOM_DTYPE
    ;

enum class Op : uint8_t {
#define LOOM_OP(name, in_place) name,
#include "loom/op.def"
#undef LOOM_OP
};
inline constexpr int kOpCount = 0
#define LOOM_OP(name, in_place) +1
#include "loom/op.def"
#undef LOOM_OP
    ;

// Per-type facts, one row per DType (core/dtype.cpp).
struct DTypeTraits {
    const char *name;
    uint32_t gguf_id;
    int64_t block_size;  // elements per block
    size_t type_size;    // bytes per block
    bool is_quantized;
    // Row conversions of n elements (n a multiple of block_size). Null for integer types.
    // For block formats from_float is the reference quantizer (the bytes llama.cpp writes).
    void (*to_float)(const void *src, float *dst, int64_t n);
    void (*from_float)(const float *src, void *dst, int64_t n);
    // The conversion the ops use (activations quantized for a dot product, rows stored by
    // set_rows, cpy and other ops): ggml's CPU backend's. from_float except for Q8_0 / Q8_1
    // (its SIMD quantizer: 127 / amax, ties to even) and IQ4_NL (one least-squares scale, no
    // search), so that a quantized KV cache holds the bytes llama.cpp's holds.
    void (*from_float_in_ops)(const float *src, void *dst, int64_t n);
    // Block formats: the dot product of a row of this type with a row of vec_dot_type (the
    // activations quantized on the fly, as llama.cpp does), n elements. vec_dot uses the
    // build's SIMD; vec_dot_scalar is the plain reference it is tested against.
    DType vec_dot_type;
    float (*vec_dot)(int64_t n, const void *x, const void *y);
    float (*vec_dot_scalar)(int64_t n, const void *x, const void *y);
};

const DTypeTraits &traits(DType type);
const char *dtype_name(DType type);
// The dtype named `name` (as dtype_name spells it, any letter case), if there is one.
std::optional<DType> dtype_from_name(std::string_view name);
const char *op_name(Op op);
// Whether the op's result may take over its first source's memory (op.def's in_place column).
bool op_can_run_in_place(Op op);
// Bytes of a row of ne0 elements; ne0 must be a multiple of the block size.
size_t row_size(DType type, int64_t ne0);

inline constexpr int kMaxDims = 4;
inline constexpr int kMaxSrc = 6;
inline constexpr int kMaxOpParams = 16;  // 32-bit words
inline constexpr int kMaxName = 64;

enum TensorFlag : uint32_t {
    kFlagInput = 1u << 0,    // filled from outside before each compute
    kFlagOutput = 1u << 1,   // read after compute: its memory is never reused
    kFlagParam = 1u << 2,    // a weight
    kFlagCompute = 1u << 3,  // set by the graph on nodes that run
    // A weight still in the file's layout while its repacked copy is made: the matrix products
    // read it as if repacked, with the same bits (core/cpu/qgemm.h, staging_size).
    kFlagRepackPending = 1u << 4,
};

// A tensor is metadata plus a data pointer. ne[0] is the innermost dimension; nb[i] is the
// byte stride of dimension i (nb[0] is the element or block size for a contiguous tensor).
// Shapes are written [ne0, ne1, ne2, ne3] throughout, the order GGUF stores them in.
class Buffer;

struct Tensor {
    DType type = DType::F32;
    Op op = Op::none;
    uint32_t flags = 0;
    int64_t ne[kMaxDims] = {1, 1, 1, 1};
    size_t nb[kMaxDims] = {0, 0, 0, 0};
    int32_t op_params[kMaxOpParams] = {};
    Tensor *src[kMaxSrc] = {};
    Tensor *view_src = nullptr;  // the tensor whose memory a view aliases
    size_t view_offs = 0;        // byte offset of the view inside view_src's data
    void *data = nullptr;
    Buffer *buffer = nullptr;  // the buffer holding data, when a buffer does (loom/backend.h)
    char name[kMaxName] = {};

    int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
    int64_t nrows() const { return ne[1] * ne[2] * ne[3]; }
    size_t nbytes() const;  // bytes spanned in memory, strides included
    bool is_contiguous() const;
    bool is_view() const { return view_src != nullptr; }
    // True when rows are contiguous (nb[0] is the element size) even if rows are strided.
    bool rows_contiguous() const;

    void *row_ptr(int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const {
        return static_cast<char *>(data) + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
    }
    void *element_ptr(int64_t i0, int64_t i1, int64_t i2 = 0, int64_t i3 = 0) const {
        return static_cast<char *>(data) + i0 * nb[0] + i1 * nb[1] + i2 * nb[2] + i3 * nb[3];
    }
};

bool same_shape(const Tensor *a, const Tensor *b);
// b can be broadcast over a: every a->ne[i] is a multiple of b->ne[i].
bool can_repeat(const Tensor *b, const Tensor *a);
// "'name' F32 [4096, 32, 1, 1]" for error messages.
std::string describe(const Tensor *t);

}  // namespace loom
