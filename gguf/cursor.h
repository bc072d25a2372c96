#pragma once
// A bounds-checked little-endian reader over a file's bytes. Every read names the field it reads,
// so that an error can say what was being read, for which key or tensor, and at which byte.
#include <bit>
#include <cstring>
#include <string>
#include <string_view>

#include "loom/gguf.h"

namespace loom::gguf {

static_assert(std::endian::native == std::endian::little,
              "GGUF is little-endian: reading it on a big-endian host needs byte swaps");

// Names come from the file: shown printable (\xNN escapes) and cut short, whatever bytes they hold.
std::string printable(std::string_view name);

// The part of the file a field belongs to: "header", "key 3 'general.name' element 7",
// "tensor 5 'output.weight'".
struct Place {
    static constexpr uint64_t kNoElement = ~uint64_t(0);

    explicit Place(const char *section = "header", uint64_t index = 0, std::string_view name = {})
        : section(section), index(index), name(name) {}

    const char *section;
    uint64_t index;  // of the key or tensor
    std::string_view name;
    uint64_t element = kNoElement;  // inside an array value

    std::string describe() const;
};

class Cursor {
  public:
    Cursor(std::span<const std::byte> bytes, std::string_view source)
        : bytes_(bytes), source_(source) {}

    uint64_t pos() const { return pos_; }
    uint64_t size() const { return bytes_.size(); }
    uint64_t remaining() const { return bytes_.size() - pos_; }

    // `field` and `suffix` name what is read ("string" " length"), joined only for an error.
    template <typename T>
    T read(const Place &place, std::string_view field, std::string_view suffix = {}) {
        need(sizeof(T), place, field, suffix);
        T value;
        std::memcpy(&value, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return value;
    }
    // n bytes, viewed in place.
    std::string_view read_bytes(uint64_t n, const Place &place, std::string_view field) {
        need(n, place, field);
        const auto *p = reinterpret_cast<const char *>(bytes_.data() + pos_);
        pos_ += n;
        return {p, size_t(n)};
    }
    void read_into(void *dst, uint64_t n, const Place &place, std::string_view field) {
        need(n, place, field);
        if (n > 0) std::memcpy(dst, bytes_.data() + pos_, size_t(n));
        pos_ += n;
    }

    // Throws "[gguf] <source>: <place> at byte <byte>: <message>".
    template <typename... Args>
    [[noreturn]] void fail_at(uint64_t byte, const Place &place, fmt::format_string<Args...> format,
                              Args &&...args) const {
        throw_at(byte, place, fmt::format(format, std::forward<Args>(args)...));
    }

  private:
    void need(uint64_t n, const Place &place, std::string_view field,
              std::string_view suffix = {}) const {
        if (n > remaining()) {
            fail_at(pos_, place, "the file ends inside the {}{} (needs {} bytes, {} left)", field,
                    suffix, n, remaining());
        }
    }
    [[noreturn]] void throw_at(uint64_t byte, const Place &place, const std::string &what) const;

    std::span<const std::byte> bytes_;
    std::string_view source_;
    uint64_t pos_ = 0;
};

}  // namespace loom::gguf
