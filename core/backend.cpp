// The host buffer type, wrapped external memory, and the backend registry.
#include <fmt/format.h>
#include <cstring>
#include <fstream>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "loom/backend.h"

#include "core/huge_pages.h"

namespace loom {
namespace {

constexpr size_t kHostAlignment = 64;  // a cache line, and enough for AVX-512 loads

void check_range(const Buffer &b, const Tensor *t, size_t offset, size_t size, const char *what) {
    if (!b.contains(t) || offset > t->nbytes() || size > t->nbytes() - offset) {
        fail("buffer", "{} of bytes [{}, {}) outside {}", what, offset, offset + size, describe(t));
    }
}

class HostBuffer : public Buffer {
  public:
    HostBuffer(BufferType &type, void *base, size_t size, bool owned, bool writable)
        : type_(type),
          base_(static_cast<std::byte *>(base)),
          size_(size),
          owned_(owned),
          writable_(writable) {}
    BufferType &type() const override { return type_; }
    ~HostBuffer() override {
        if (!owned_) return;
        forget_huge_pages(base_, size_);
        ::operator delete(base_, std::align_val_t(kHostAlignment));
    }
    void *base() const override { return base_; }
    size_t size() const override { return size_; }
    bool is_host() const override { return true; }
    void set_tensor(Tensor *t, const void *data, size_t offset, size_t size) override {
        require_writable("set_tensor", t);
        check_range(*this, t, offset, size, "set_tensor");
        std::memcpy(static_cast<std::byte *>(t->data) + offset, data, size);
    }
    void get_tensor(const Tensor *t, void *data, size_t offset, size_t size) override {
        check_range(*this, t, offset, size, "get_tensor");
        std::memcpy(data, static_cast<const std::byte *>(t->data) + offset, size);
    }
    void memset_tensor(Tensor *t, uint8_t value, size_t offset, size_t size) override {
        require_writable("memset_tensor", t);
        check_range(*this, t, offset, size, "memset_tensor");
        std::memset(static_cast<std::byte *>(t->data) + offset, value, size);
    }
    bool cpy_tensor(const Tensor *src, Tensor *dst) override {
        require_writable("cpy_tensor", dst);
        if (src->nbytes() != dst->nbytes() || src->data == nullptr) return false;
        check_range(*this, dst, 0, dst->nbytes(), "cpy_tensor");
        std::memcpy(dst->data, src->data, dst->nbytes());
        return true;
    }
    void clear(uint8_t value) override {
        if (!writable_) fail("buffer", "clear of a read-only buffer");
        std::memset(base_, value, size_);
    }

  private:
    void require_writable(const char *what, const Tensor *t) const {
        if (!writable_) fail("buffer", "{} of {} in a read-only buffer", what, describe(t));
    }
    BufferType &type_;
    std::byte *base_;
    size_t size_;
    bool owned_;
    bool writable_;
};

class HostBufferType : public BufferType {
  public:
    explicit HostBufferType(std::string name) : name_(std::move(name)) {}
    const char *name() const override { return name_.c_str(); }
    std::unique_ptr<Buffer> allocate(size_t size) override {
        if (size > max_size())
            fail("buffer", "{} bytes exceed the CPU buffer limit {}", size, max_size());
        if (size > available_memory()) {
            fail("buffer", "{} of memory needed, {} available", gib(double(size)),
                 gib(double(available_memory())));
        }
        void *p = ::operator new(std::max<size_t>(size, 1), std::align_val_t(kHostAlignment),
                                 std::nothrow);
        if (p == nullptr) fail("buffer", "out of memory allocating {} bytes of CPU memory", size);
        ask_for_huge_pages(p, size);
        return std::make_unique<HostBuffer>(*this, p, size, /*owned=*/true, /*writable=*/true);
    }
    size_t alignment() const override { return kHostAlignment; }
    size_t max_size() const override { return size_t(1) << 46; }  // the x86-64 address space
    bool is_host() const override { return true; }

  private:
    std::string name_;
};

std::vector<BackendInfo> &registry() {
    static std::vector<BackendInfo> backends;
    return backends;
}

}  // namespace

bool Buffer::contains(const Tensor *t) const {
    if (t->data == nullptr) return false;
    const auto *b = static_cast<const std::byte *>(base());
    const auto *d = static_cast<const std::byte *>(t->data);
    return d >= b && d + t->nbytes() <= b + size();
}

size_t available_memory() {
    std::ifstream meminfo("/proc/meminfo");
    for (std::string key; meminfo >> key;) {
        size_t kib = 0;
        if (key == "MemAvailable:" && meminfo >> kib) return kib * 1024;
        meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    }
    return std::numeric_limits<size_t>::max();
}

std::string gib(double bytes) {
    return fmt::format("{:.2f} GiB", bytes / double(size_t(1) << 30));
}

BufferType &host_buffer_type() {
    static HostBufferType type("CPU");
    return type;
}

std::unique_ptr<BufferType> new_host_buffer_type(const char *name) {
    return std::make_unique<HostBufferType>(name);
}

std::unique_ptr<Buffer> wrap_host_memory(void *base, size_t size, bool writable) {
    return std::make_unique<HostBuffer>(host_buffer_type(), base, size, /*owned=*/false, writable);
}

std::unique_ptr<Buffer> place_tensors(BufferType &type, std::span<Tensor *const> tensors) {
    const size_t align = type.alignment();
    auto aligned = [align](size_t n) { return (n + align - 1) / align * align; };
    size_t total = 0;
    for (const Tensor *t : tensors) total += aligned(t->nbytes());
    std::unique_ptr<Buffer> buffer = type.allocate(total);
    auto *p = static_cast<std::byte *>(buffer->base());
    for (Tensor *t : tensors) {
        if (t->data != nullptr) fail("buffer", "place_tensors: {} already has memory", describe(t));
        t->data = p;
        t->buffer = buffer.get();
        p += aligned(t->nbytes());
    }
    return buffer;
}

void register_backend(BackendInfo info) {
    for (const BackendInfo &b : registry()) {
        if (b.name == info.name) return;
    }
    registry().push_back(std::move(info));
}

std::span<const BackendInfo> registered_backends() {
    return registry();
}

}  // namespace loom
