#pragma once
// How each op stores its scalar parameters in Tensor::op_params. Builders write them, kernels
// read them; both go through these two functions so the layout is defined in one place.
#include <cstring>
#include <type_traits>

#include "loom/core.h"

namespace loom {

template <typename T>
void set_op_params(Tensor *t, const T &params) {
    static_assert(std::is_trivially_copyable_v<T>);
    static_assert(sizeof(T) <= sizeof(t->op_params), "op parameters too large");
    std::memcpy(t->op_params, &params, sizeof(T));
}

template <typename T>
T get_op_params(const Tensor *t) {
    static_assert(std::is_trivially_copyable_v<T>);
    T params;
    std::memcpy(&params, t->op_params, sizeof(T));
    return params;
}

struct ScaleOpParams {
    float s, bias;
};
struct ClampOpParams {
    float min, max;
};
struct SwiGluOaiOpParams {
    float alpha, limit;
};
struct FillOpParams {
    float value;
};
struct NormOpParams {
    float eps;
};
struct DiagMaskOpParams {
    int32_t n_past;
};
struct SortOpParams {
    SortOrder order;
};
struct MulMatOpParams {
    SumOrder order;
};
struct ConcatOpParams {
    int32_t dim;
};
// rope: RopeParams; soft_max: SoftMaxParams; flash_attn_ext: FlashAttnParams (loom/core.h)

}  // namespace loom
