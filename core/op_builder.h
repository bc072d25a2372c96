#pragma once
// Shared helpers for the op builders (core/ops_*.cpp): result records and argument checks.
#include <array>

#include "core/op_params.h"
#include "loom/core.h"

namespace loom {

using Shape = std::array<int64_t, kMaxDims>;

inline Shape shape_of(const Tensor *t) {
    return {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
}

// A new contiguous result of `op` with the given sources (nulls allowed for optional inputs).
inline Tensor *new_result(Context &ctx, Op op, DType type, const Shape &ne,
                          std::initializer_list<Tensor *> srcs) {
    Tensor *t = ctx.new_tensor(type, std::span<const int64_t>(ne.data(), ne.size()));
    t->op = op;
    int i = 0;
    for (Tensor *s : srcs) t->src[i++] = s;
    return t;
}

// Throws "[op] message: 'x' F32 [...], 'y' F16 [...]" (the operands) when cond is false.
template <typename... Args>
void require(bool cond, Op op, std::initializer_list<const Tensor *> args,
             fmt::format_string<Args...> format, Args &&...fargs) {
    if (cond) return;
    std::string msg = fmt::format(format, std::forward<Args>(fargs)...);
    const char *separator = ": ";
    for (const Tensor *t : args) {
        msg += separator + describe(t);
        separator = ", ";
    }
    fail(op_name(op), "{}", msg);
}

inline void require_not_null(Op op, std::initializer_list<const Tensor *> args) {
    for (const Tensor *t : args) {
        if (t == nullptr) fail(op_name(op), "a required operand is null");
    }
}

inline bool is_float_type(DType t) {
    return t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

}  // namespace loom
