#include <algorithm>
#include <cstdlib>
#include <new>

#include "loom/core.h"

namespace loom {

size_t Tensor::nbytes() const {
    if (nelements() == 0) return 0;
    const DTypeTraits &t = traits(type);
    // first row's bytes, then the farthest offset reached by the other dims
    size_t bytes = row_size(type, ne[0]);
    if (t.block_size == 1) bytes = size_t(ne[0] - 1) * nb[0] + t.type_size;
    for (int i = 1; i < kMaxDims; ++i) bytes += size_t(ne[i] - 1) * nb[i];
    return bytes;
}

bool Tensor::rows_contiguous() const {
    return nb[0] == traits(type).type_size;
}

bool Tensor::is_contiguous() const {
    size_t expected = traits(type).type_size;
    if (nb[0] != expected) return false;
    expected = row_size(type, ne[0]);
    for (int i = 1; i < kMaxDims; ++i) {
        if (ne[i] != 1 && nb[i] != expected) return false;
        expected *= size_t(ne[i]);
    }
    return true;
}

bool same_shape(const Tensor *a, const Tensor *b) {
    return std::equal(a->ne, a->ne + kMaxDims, b->ne);
}

bool can_repeat(const Tensor *b, const Tensor *a) {
    for (int i = 0; i < kMaxDims; ++i) {
        if (b->ne[i] == 0 || a->ne[i] % b->ne[i] != 0) return false;
    }
    return true;
}

std::string describe(const Tensor *t) {
    if (t == nullptr) return "(null)";
    return fmt::format("'{}' {} [{}, {}, {}, {}]", t->name, dtype_name(t->type), t->ne[0], t->ne[1],
                       t->ne[2], t->ne[3]);
}

Tensor *set_name(Tensor *t, std::string_view name) {
    const size_t n = std::min(name.size(), size_t(kMaxName - 1));
    std::copy_n(name.data(), n, t->name);
    t->name[n] = '\0';
    return t;
}
Tensor *set_input(Tensor *t) {
    t->flags |= kFlagInput;
    return t;
}
Tensor *set_output(Tensor *t) {
    t->flags |= kFlagOutput;
    return t;
}
Tensor *set_param(Tensor *t) {
    t->flags |= kFlagParam;
    return t;
}

// ---------------------------------------------------------------------------------------------

Context::Context(ContextParams params) : size_(params.mem_size), no_alloc_(params.no_alloc) {
    if (size_ == 0) fail("context", "mem_size must be positive");
    base_ = static_cast<std::byte *>(::operator new(size_, std::align_val_t(64), std::nothrow));
    if (base_ == nullptr) fail("context", "cannot allocate {} bytes of arena", size_);
}

Context::~Context() {
    ::operator delete(base_, std::align_val_t(64));
}

void *Context::allocate(size_t bytes, size_t align, const char *what) {
    const size_t start = (used_ + align - 1) / align * align;
    if (start > size_ || bytes > size_ - start) {
        fail("context", "out of arena memory allocating {} ({} bytes): {} of {} bytes used", what,
             bytes, used_, size_);
    }
    used_ = start + bytes;
    return base_ + start;
}

Tensor *Context::new_tensor(DType type, std::span<const int64_t> ne) {
    if (ne.empty() || ne.size() > size_t(kMaxDims)) {
        fail("tensor", "a tensor has 1 to {} dims, got {}", kMaxDims, ne.size());
    }
    auto *t = new (allocate(sizeof(Tensor), alignof(Tensor), "tensor record")) Tensor{};
    t->type = type;
    const DTypeTraits &tr = traits(type);
    for (size_t i = 0; i < ne.size(); ++i) {
        if (ne[i] < 0) fail("tensor", "negative dim {} = {}", i, ne[i]);
        t->ne[i] = ne[i];
    }
    if (t->ne[0] % tr.block_size != 0) {
        fail("tensor", "{} rows of {} elements are not whole blocks of {}", tr.name, t->ne[0],
             tr.block_size);
    }
    t->nb[0] = tr.type_size;
    t->nb[1] = row_size(type, t->ne[0]);
    t->nb[2] = t->nb[1] * size_t(t->ne[1]);
    t->nb[3] = t->nb[2] * size_t(t->ne[2]);
    if (!no_alloc_) t->data = allocate(t->nbytes(), 64, "tensor data");
    return t;
}

Tensor *Context::new_view(Tensor *src, size_t offset) {
    Tensor *base = src->view_src != nullptr ? src->view_src : src;
    const size_t base_offset = src->view_src != nullptr ? src->view_offs + offset : offset;
    auto *t = new (allocate(sizeof(Tensor), alignof(Tensor), "tensor record")) Tensor{};
    t->type = src->type;
    t->view_src = base;
    t->view_offs = base_offset;
    if (base->data != nullptr) t->data = static_cast<std::byte *>(base->data) + base_offset;
    return t;
}

}  // namespace loom
