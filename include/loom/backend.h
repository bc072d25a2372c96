#pragma once
// Buffer types, buffers and backends: where tensor memory lives and who runs a graph.
//
//   BufferType  a kind of memory (host RAM, a device's memory); makes Buffers
//   Buffer      one allocation; tensors point into it
//   Backend     runs graphs whose tensors live in memory it can read
#include <cstddef>
#include <memory>
#include <span>
#include <string>

#include "loom/core.h"

namespace loom {

class Buffer;

class BufferType {
  public:
    virtual ~BufferType() = default;
    virtual const char *name() const = 0;
    // Throws loom::Error("[buffer] ...") when `size` exceeds max_size() or memory runs out.
    virtual std::unique_ptr<Buffer> allocate(size_t size) = 0;
    virtual size_t alignment() const = 0;
    virtual size_t max_size() const = 0;
    // Host memory can be read and written by the CPU directly.
    virtual bool is_host() const = 0;
};

class Buffer {
  public:
    virtual ~Buffer() = default;
    virtual BufferType &type() const = 0;
    virtual void *base() const = 0;
    virtual size_t size() const = 0;
    virtual bool is_host() const = 0;
    // Bytes [offset, offset + size) of t's data; t must live in this buffer.
    virtual void set_tensor(Tensor *t, const void *data, size_t offset, size_t size) = 0;
    virtual void get_tensor(const Tensor *t, void *data, size_t offset, size_t size) = 0;
    virtual void memset_tensor(Tensor *t, uint8_t value, size_t offset, size_t size) = 0;
    // Copies src (in any host-readable memory) into dst (in this buffer); false when the
    // buffer cannot do it directly and the caller must go through host memory.
    virtual bool cpy_tensor(const Tensor *src, Tensor *dst) = 0;
    virtual void clear(uint8_t value) = 0;

    bool contains(const Tensor *t) const;
};

// Host RAM, 64-byte aligned. An allocation larger than available_memory() is refused with a
// loom::Error before any of it is touched (Linux would grant it, then kill the process when
// the pages are used).
BufferType &host_buffer_type();
// Bytes of memory the kernel can give without swapping (MemAvailable in /proc/meminfo); the
// largest size_t where that is unknown.
size_t available_memory();
// "1.50 GiB": for messages about sizes.
std::string gib(double bytes);

// How this process's large host buffers get transparent huge pages: "off", "at_fault" or
// "when_idle" (core/huge_pages.h; chosen, and measured, on the first call).
const char *huge_pages_policy_name();
// Another host memory type with its own identity: stands in for a device's memory in tests of
// the scheduler (tensors in it count as living elsewhere than the CPU's).
std::unique_ptr<BufferType> new_host_buffer_type(const char *name);
// Wraps memory the buffer does not own (the mmap of a model file): never freed here, and
// read-only when `writable` is false (set_tensor / memset_tensor then throw).
std::unique_ptr<Buffer> wrap_host_memory(void *base, size_t size, bool writable);

// One buffer of `type` holding every tensor of `tensors` (each aligned to the type's alignment):
// sets their data and buffer; their bytes are still to be written with set_tensor. For weights,
// which live as long as the model.
std::unique_ptr<Buffer> place_tensors(BufferType &type, std::span<Tensor *const> tensors);

class Backend {
  public:
    virtual ~Backend() = default;
    virtual const char *name() const = 0;
    virtual BufferType &default_buffer_type() = 0;
    // Whether tensors in memory of `type` count as this backend's own: the scheduler runs the
    // nodes that read them (weights) or write them (a KV cache) here. Its default type, and any
    // other it reads in place (the CPU's repacked weights).
    virtual bool uses_buffer_type(const BufferType &type) {
        return &type == &default_buffer_type();
    }
    virtual bool supports_op(const Tensor *node) const = 0;
    // Runs the nodes flagged to compute; throws loom::Error before running any if it cannot.
    virtual void graph_compute(const Graph &graph) = 0;
    virtual void synchronize() {}
};

// Backends announce themselves here (the CPU backend always does); tools list them.
struct BackendInfo {
    std::string name;
    std::string description;
    std::unique_ptr<Backend> (*create)(int n_threads);
};
void register_backend(BackendInfo info);
std::span<const BackendInfo> registered_backends();

}  // namespace loom
