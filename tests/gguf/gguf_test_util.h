#pragma once
// Helpers shared by the GGUF tests: paths to ../shared/models, raw little-endian file building
// (for versions and malformations the Writer refuses to make), and parsing with a caught error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "loom/gguf.h"

namespace loom::gguf::testing {

// ../shared/models beside the repository (LOOM_SOURCE_DIR is the repository root).
std::filesystem::path shared_models_dir();
// The path of a file there; fails the calling test (ASSERT_NO_FATAL_FAILURE) if it is missing.
void require_shared_file(const std::filesystem::path &path);

// A fresh directory under the system temp dir, removed on destruction.
class TempDir {
  public:
    TempDir();
    ~TempDir();
    const std::filesystem::path &path() const { return path_; }

  private:
    std::filesystem::path path_;
};

// Appends little-endian fields; lengths are 32-bit when `v1`.
class RawFile {
  public:
    explicit RawFile(bool v1 = false) : v1_(v1) {}

    template <typename T>
    RawFile &put(T value) {
        const auto *p = reinterpret_cast<const std::byte *>(&value);
        bytes.insert(bytes.end(), p, p + sizeof(T));
        return *this;
    }
    RawFile &put_length(uint64_t n) { return v1_ ? put(uint32_t(n)) : put(n); }
    RawFile &put_string(std::string_view s) {
        put_length(s.size());
        const auto *p = reinterpret_cast<const std::byte *>(s.data());
        bytes.insert(bytes.end(), p, p + s.size());
        return *this;
    }
    RawFile &header(uint32_t version, uint64_t n_tensors, uint64_t n_kv) {
        bytes.insert(bytes.end(), {std::byte('G'), std::byte('G'), std::byte('U'), std::byte('F')});
        put(version);
        return put_length(n_tensors).put_length(n_kv);
    }
    RawFile &pad_to(uint64_t alignment) {
        while (bytes.size() % alignment != 0) bytes.push_back(std::byte(0));
        return *this;
    }

    std::vector<std::byte> bytes;

  private:
    bool v1_;
};

// The message of the loom::Error parse() throws, or "" when the bytes parse.
std::string parse_error(const std::vector<std::byte> &bytes);

}  // namespace loom::gguf::testing
