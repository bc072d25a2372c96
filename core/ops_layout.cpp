// Builders for views and data movement: view_*, reshape, permute, transpose, cont, cast, cpy,
// repeat, concat, pad, get_rows, set_rows.
#include <numeric>

#include "core/op_builder.h"

namespace loom {
namespace {

Tensor *make_view(Context &ctx, Tensor *a, Op op, const Shape &ne, const std::array<size_t, 4> &nb,
                  size_t offset) {
    Tensor *t = ctx.new_view(a, offset);
    for (int i = 0; i < kMaxDims; ++i) {
        t->ne[i] = ne[i];
        t->nb[i] = nb[i];
    }
    t->op = op;
    t->src[0] = a;
    // A view must stay inside the memory of the tensor it aliases.
    const Tensor *base = t->view_src;
    require(t->view_offs + t->nbytes() <= base->nbytes(), op, {a},
            "view of {} bytes at offset {} exceeds the {} bytes of its source", t->nbytes(),
            t->view_offs, base->nbytes());
    return t;
}

}  // namespace

bool is_view_op(Op op) {
    return op == Op::view || op == Op::reshape || op == Op::permute || op == Op::transpose;
}

Tensor *view_4d(Context &ctx, Tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, int64_t ne3,
                size_t nb1, size_t nb2, size_t nb3, size_t offset) {
    require_not_null(Op::view, {a});
    require(ne0 > 0 && ne1 > 0 && ne2 > 0 && ne3 > 0, Op::view, {a}, "dims must be positive");
    return make_view(ctx, a, Op::view, {ne0, ne1, ne2, ne3}, {a->nb[0], nb1, nb2, nb3}, offset);
}
Tensor *view_3d(Context &ctx, Tensor *a, int64_t ne0, int64_t ne1, int64_t ne2, size_t nb1,
                size_t nb2, size_t offset) {
    return view_4d(ctx, a, ne0, ne1, ne2, 1, nb1, nb2, nb2 * size_t(ne2), offset);
}
Tensor *view_2d(Context &ctx, Tensor *a, int64_t ne0, int64_t ne1, size_t nb1, size_t offset) {
    return view_4d(ctx, a, ne0, ne1, 1, 1, nb1, nb1 * size_t(ne1), nb1 * size_t(ne1), offset);
}
Tensor *view_1d(Context &ctx, Tensor *a, int64_t ne0, size_t offset) {
    const size_t row = row_size(a->type, ne0);
    return view_4d(ctx, a, ne0, 1, 1, 1, row, row, row, offset);
}

Tensor *reshape(Context &ctx, Tensor *a, std::initializer_list<int64_t> ne) {
    require_not_null(Op::reshape, {a});
    require(a->is_contiguous(), Op::reshape, {a}, "source must be contiguous");
    require(ne.size() >= 1 && ne.size() <= size_t(kMaxDims), Op::reshape, {a}, "1 to 4 dims");
    Shape shape = {1, 1, 1, 1};
    std::copy(ne.begin(), ne.end(), shape.begin());
    const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<>());
    require(n == a->nelements(), Op::reshape, {a}, "new shape [{}] has {} elements, not {}",
            fmt::join(shape, ", "), n, a->nelements());
    std::array<size_t, 4> nb = {a->nb[0], row_size(a->type, shape[0]), 0, 0};
    nb[2] = nb[1] * size_t(shape[1]);
    nb[3] = nb[2] * size_t(shape[2]);
    return make_view(ctx, a, Op::reshape, shape, nb, 0);
}

Tensor *permute(Context &ctx, Tensor *a, int axis0, int axis1, int axis2, int axis3) {
    require_not_null(Op::permute, {a});
    const int axes[4] = {axis0, axis1, axis2, axis3};
    bool seen[4] = {};
    for (int ax : axes) {
        require(ax >= 0 && ax < 4 && !seen[ax], Op::permute, {a},
                "axes ({}, {}, {}, {}) are not a permutation", axis0, axis1, axis2, axis3);
        seen[ax] = true;
    }
    Shape ne;
    std::array<size_t, 4> nb;
    for (int i = 0; i < 4; ++i) {
        ne[axes[i]] = a->ne[i];
        nb[axes[i]] = a->nb[i];
    }
    Tensor *t = make_view(ctx, a, Op::permute, ne, nb, 0);
    std::copy(axes, axes + 4, t->op_params);
    return t;
}

Tensor *transpose(Context &ctx, Tensor *a) {
    Tensor *t = permute(ctx, a, 1, 0, 2, 3);
    t->op = Op::transpose;
    return t;
}

Tensor *cont(Context &ctx, Tensor *a) {
    require_not_null(Op::cont, {a});
    return new_result(ctx, Op::cont, a->type, shape_of(a), {a});
}

Tensor *contiguous(Context &ctx, Tensor *a) {
    require_not_null(Op::cont, {a});
    return a->is_contiguous() ? a : cont(ctx, a);
}

Tensor *cast(Context &ctx, Tensor *a, DType type) {
    require_not_null(Op::cpy, {a});
    require(traits(a->type).to_float && traits(type).from_float, Op::cpy, {a},
            "cannot convert to {}", dtype_name(type));
    Tensor *dst = ctx.new_tensor(type, std::span<const int64_t>(a->ne, kMaxDims));
    return cpy(ctx, a, dst);
}

Tensor *cpy(Context &ctx, Tensor *a, Tensor *b) {
    require_not_null(Op::cpy, {a, b});
    require(a->nelements() == b->nelements(), Op::cpy, {a, b}, "element counts differ");
    require(a->type == b->type || (traits(a->type).to_float && traits(b->type).from_float), Op::cpy,
            {a, b}, "no conversion between these dtypes");
    if (traits(a->type).is_quantized || traits(b->type).is_quantized) {
        // blocks convert whole rows: both sides need the same rows, contiguous
        require(a->ne[0] == b->ne[0] && a->ne[1] == b->ne[1] && a->ne[2] == b->ne[2] &&
                    a->rows_contiguous() && b->rows_contiguous(),
                Op::cpy, {a, b}, "block formats copy whole contiguous rows of one shape");
    }
    Tensor *t =
        make_view(ctx, b, Op::cpy, shape_of(b), {b->nb[0], b->nb[1], b->nb[2], b->nb[3]}, 0);
    t->src[0] = a;
    t->src[1] = b;
    return t;
}

Tensor *repeat(Context &ctx, Tensor *a, Tensor *b) {
    require_not_null(Op::repeat, {a, b});
    require(can_repeat(a, b), Op::repeat, {a, b}, "b's dims must be multiples of a's");
    require(is_float_type(a->type), Op::repeat, {a, b}, "float types only");
    return new_result(ctx, Op::repeat, a->type, shape_of(b), {a});
}

Tensor *concat(Context &ctx, Tensor *a, Tensor *b, int dim) {
    require_not_null(Op::concat, {a, b});
    require(dim >= 0 && dim < kMaxDims, Op::concat, {a, b}, "dim {} out of range", dim);
    require(a->type == b->type, Op::concat, {a, b}, "dtypes differ");
    Shape ne = shape_of(a);
    for (int i = 0; i < kMaxDims; ++i) {
        require(i == dim || a->ne[i] == b->ne[i], Op::concat, {a, b}, "dim {} differs", i);
    }
    ne[dim] += b->ne[dim];
    Tensor *t = new_result(ctx, Op::concat, a->type, ne, {a, b});
    set_op_params(t, ConcatOpParams{dim});
    return t;
}

Tensor *pad(Context &ctx, Tensor *a, int p0, int p1, int p2, int p3) {
    require_not_null(Op::pad, {a});
    require(p0 >= 0 && p1 >= 0 && p2 >= 0 && p3 >= 0, Op::pad, {a}, "negative padding");
    require(a->type == DType::F32, Op::pad, {a}, "F32 only");
    return new_result(ctx, Op::pad, a->type,
                      {a->ne[0] + p0, a->ne[1] + p1, a->ne[2] + p2, a->ne[3] + p3}, {a});
}

Tensor *get_rows(Context &ctx, Tensor *a, Tensor *b) {
    require_not_null(Op::get_rows, {a, b});
    require(b->type == DType::I32, Op::get_rows, {a, b}, "indices must be I32");
    require(b->ne[3] == 1 && b->ne[1] == a->ne[2] && b->ne[2] == a->ne[3], Op::get_rows, {a, b},
            "indices [n, ne2, ne3] must match the source's dims 2 and 3");
    require(traits(a->type).to_float != nullptr || a->type == DType::I32, Op::get_rows, {a, b},
            "cannot read rows of this dtype");
    const DType out = a->type == DType::I32 ? DType::I32 : DType::F32;
    return new_result(ctx, Op::get_rows, out, {a->ne[0], b->ne[0], b->ne[1], b->ne[2]}, {a, b});
}

Tensor *set_rows(Context &ctx, Tensor *a, Tensor *b, Tensor *c) {
    require_not_null(Op::set_rows, {a, b, c});
    require(c->type == DType::I64 || c->type == DType::I32, Op::set_rows, {a, b, c},
            "indices must be I64 or I32");
    require(b->type == DType::F32, Op::set_rows, {a, b, c}, "source rows must be F32");
    require(traits(a->type).from_float != nullptr, Op::set_rows, {a, b, c},
            "cannot write rows of this dtype");
    require(a->ne[0] == b->ne[0], Op::set_rows, {a, b, c}, "row lengths differ");
    require(c->ne[0] == b->ne[1] && c->ne[3] == 1, Op::set_rows, {a, b, c},
            "one index per source row expected");
    require(b->ne[2] % c->ne[1] == 0 && b->ne[3] % c->ne[2] == 0 && b->ne[2] == a->ne[2] &&
                b->ne[3] == a->ne[3],
            Op::set_rows, {a, b, c}, "dims 2 and 3 of destination, source and indices disagree");
    Tensor *t =
        make_view(ctx, a, Op::set_rows, shape_of(a), {a->nb[0], a->nb[1], a->nb[2], a->nb[3]}, 0);
    t->src[0] = a;
    t->src[1] = b;
    t->src[2] = c;
    return t;
}

}  // namespace loom
