#pragma once
// The bytes of saved state (a sequence's KV cells, engine/context/sequence_state.h): little-endian
// integers and raw rows appended to a buffer, and read back with every read checked against
// the end, so that a truncated or lying file is an error that says where, never a read past it.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

namespace loom::engine {

class StateWriter {
  public:
    template <typename T>
    void put(T value) {
        static_assert(std::is_trivially_copyable_v<T>);
        bytes(&value, sizeof value);
    }
    void bytes(const void *p, size_t n) {
        const auto *b = static_cast<const std::byte *>(p);
        out_.insert(out_.end(), b, b + n);
    }
    std::vector<std::byte> take() { return std::move(out_); }

  private:
    std::vector<std::byte> out_;
};

class StateReader {
  public:
    // `what` names the bytes in messages ("sequence state", a path).
    StateReader(std::span<const std::byte> in, std::string_view what) : in_(in), what_(what) {}

    template <typename T>
    T get() {
        static_assert(std::is_trivially_copyable_v<T>);
        T value;
        bytes(&value, sizeof value);
        return value;
    }
    // loom::fail("state", "<what> is truncated ...") when fewer than n bytes are left.
    void bytes(void *p, size_t n);
    // A count read from the file, checked against what the rest of the file could hold at
    // `each` bytes apiece (so that a lying count cannot make the reader allocate wildly).
    uint64_t count(size_t each);
    size_t offset() const { return offset_; }
    bool at_end() const { return offset_ == in_.size(); }
    std::string_view what() const { return what_; }

  private:
    std::span<const std::byte> in_;
    std::string_view what_;
    size_t offset_ = 0;
};

}  // namespace loom::engine
