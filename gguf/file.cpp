// File: a GGUF file mapped read-only, its parsed contents, and loom::Tensor records over it.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "loom/backend.h"
#include "loom/gguf.h"

namespace loom::gguf {

// The whole file mapped PROT_READ (nothing is read until touched); unmapped on destruction.
class File::Mapping {
  public:
    explicit Mapping(const std::string &path) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) fail("gguf", "cannot open '{}': {}", path, std::strerror(errno));
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
            const int err = errno;
            ::close(fd);
            fail("gguf", "'{}' is not a regular file{}", path,
                 err != 0 ? fmt::format(" ({})", std::strerror(err)) : "");
        }
        size_ = size_t(st.st_size);
        if (size_ > 0) {  // mmap of 0 bytes fails; an empty file is rejected by the parser
            void *p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
            const int err = errno;
            ::close(fd);
            if (p == MAP_FAILED) fail("gguf", "cannot map '{}': {}", path, std::strerror(err));
            base_ = static_cast<std::byte *>(p);
        } else {
            ::close(fd);
        }
    }
    ~Mapping() {
        if (base_ != nullptr) ::munmap(base_, size_);
    }
    Mapping(const Mapping &) = delete;
    Mapping &operator=(const Mapping &) = delete;

    std::byte *base() const { return base_; }
    std::span<const std::byte> bytes() const { return {base_, size_}; }

  private:
    std::byte *base_ = nullptr;
    size_t size_ = 0;
};

File::File(const std::string &path)
    : path_(path),
      mapping_(std::make_unique<Mapping>(path)),
      contents_(parse(mapping_->bytes(), path)),
      buffer_(wrap_host_memory(mapping_->base(), mapping_->bytes().size(), /*writable=*/false)) {}

File::~File() = default;

std::span<const std::byte> File::bytes() const {
    return mapping_->bytes();
}

std::span<const std::byte> File::tensor_data(const TensorInfo &t) const {
    // parse() checked that the tensor lies inside the file
    return bytes().subspan(size_t(contents_.data_offset + t.offset), size_t(t.nbytes));
}

size_t File::context_size() const {
    return tensors().size() * (sizeof(Tensor) + alignof(Tensor));
}

std::vector<Tensor *> File::create_tensors(Context &ctx) const {
    if (!ctx.no_alloc()) {
        fail("gguf", "create_tensors for '{}' needs a no_alloc Context: the data stay in the file",
             path_);
    }
    std::vector<Tensor *> out;
    out.reserve(tensors().size());
    for (const TensorInfo &info : tensors()) {
        Tensor *t = ctx.new_tensor(info.type, std::span<const int64_t>(info.ne, kMaxDims));
        set_param(set_name(t, info.name));
        // The mapping is read-only: writes through data fault, writes through buffer throw.
        t->data = const_cast<std::byte *>(tensor_data(info).data());
        t->buffer = buffer_.get();
        out.push_back(t);
    }
    return out;
}

}  // namespace loom::gguf
