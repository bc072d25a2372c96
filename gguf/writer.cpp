// Writer: GGUF v3 files, checked against the same limits the reader enforces.
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "loom/gguf.h"

namespace loom::gguf {
namespace {

constexpr uint32_t kVersion = 3;
constexpr std::string_view kAlignmentKey = "general.alignment";

void check_value(std::string_view key, const Value &value, int depth);

void check_string(std::string_view key, const std::string &s) {
    if (s.size() > kMaxStringLength) {
        fail("gguf", "key '{}': a string of {} bytes exceeds the limit {}", key, s.size(),
             kMaxStringLength);
    }
}

void check_array(std::string_view key, const Array &a, int depth) {
    if (depth > kMaxArrayDepth) {
        fail("gguf", "key '{}': arrays nested more than {} levels deep", key, kMaxArrayDepth);
    }
    if (a.size() > kMaxArrayLength) {
        fail("gguf", "key '{}': an array of {} elements exceeds the limit {}", key, a.size(),
             kMaxArrayLength);
    }
    if (const auto *strings = std::get_if<std::vector<std::string>>(&a.items)) {
        for (const std::string &s : *strings) check_string(key, s);
    } else if (const auto *arrays = std::get_if<std::vector<Array>>(&a.items)) {
        for (const Array &inner : *arrays) check_array(key, inner, depth + 1);
    }
}

void check_value(std::string_view key, const Value &value, int depth) {
    if (const auto *s = std::get_if<std::string>(&value)) check_string(key, *s);
    if (const auto *a = std::get_if<Array>(&value)) check_array(key, *a, depth);
}

// Appends little-endian fields to a byte sink (a FILE or a vector).
template <typename Sink>
class Encoder {
  public:
    explicit Encoder(Sink &sink) : sink_(sink) {}

    template <typename T>
    void put(T value) {
        sink_.append(&value, sizeof(value));
    }
    void put_string(std::string_view s) {
        put(uint64_t(s.size()));
        sink_.append(s.data(), s.size());
    }
    void put_value(const Value &v) {
        std::visit([&](const auto &x) { put_element(x); }, v);
    }
    void pad_to(uint64_t alignment) {
        static constexpr std::byte kZeros[256] = {};
        while (sink_.written() % alignment != 0) {
            const uint64_t n = std::min<uint64_t>(alignment - sink_.written() % alignment, 256);
            sink_.append(kZeros, n);
        }
    }

  private:
    template <typename T>
    void put_element(const T &x) {
        if constexpr (std::is_same_v<T, std::string>) {
            put_string(x);
        } else if constexpr (std::is_same_v<T, Array>) {
            put(uint32_t(x.element_type()));
            put(uint64_t(x.size()));
            std::visit([&](const auto &items) { put_items(items); }, x.items);
        } else if constexpr (std::is_same_v<T, bool>) {
            put(uint8_t(x ? 1 : 0));
        } else {
            put(x);
        }
    }
    template <typename T>
    void put_items(const std::vector<T> &items) {
        if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
            sink_.append(items.data(), items.size() * sizeof(T));
        } else {
            for (const auto &item : items) put_element(static_cast<const T &>(item));
        }
    }

    Sink &sink_;
};

class VectorSink {
  public:
    void append(const void *p, uint64_t n) {
        const auto *b = static_cast<const std::byte *>(p);
        bytes.insert(bytes.end(), b, b + n);
    }
    uint64_t written() const { return bytes.size(); }
    std::vector<std::byte> bytes;
};

class FileSink {
  public:
    explicit FileSink(const std::string &path) : path_(path) {
        file_ = std::fopen(path.c_str(), "wb");
        if (file_ == nullptr) fail("gguf", "cannot create '{}': {}", path, std::strerror(errno));
    }
    ~FileSink() {
        if (file_ != nullptr) {  // not closed: writing failed part way, leave no partial file
            std::fclose(file_);
            std::remove(path_.c_str());
        }
    }
    void append(const void *p, uint64_t n) {
        if (n == 0) return;  // an empty array's data() may be null, which fwrite must not get
        if (std::fwrite(p, 1, size_t(n), file_) != n) {
            fail("gguf", "cannot write '{}': {}", path_, std::strerror(errno));
        }
        written_ += n;
    }
    uint64_t written() const { return written_; }
    void close() {
        const int rc = std::fclose(file_);
        file_ = nullptr;
        if (rc != 0) {
            const int err = errno;
            std::remove(path_.c_str());
            fail("gguf", "cannot write '{}': {}", path_, std::strerror(err));
        }
    }

  private:
    std::string path_;
    std::FILE *file_ = nullptr;
    uint64_t written_ = 0;
};

}  // namespace

void Writer::add_tensor(std::string_view name, DType type, std::span<const int64_t> ne,
                        const void *data) {
    if (name.empty() || name.size() > kMaxTensorNameLength ||
        name.find('\0') != std::string_view::npos) {
        fail("gguf", "tensor name '{}' must be 1 to {} bytes without NUL", name,
             kMaxTensorNameLength);
    }
    for (const PendingTensor &t : tensors_) {
        if (t.info.name == name) fail("gguf", "duplicate tensor name '{}'", name);
    }
    if (ne.empty() || ne.size() > size_t(kMaxDims)) {
        fail("gguf", "tensor '{}' has {} dims, not 1..{}", name, ne.size(), kMaxDims);
    }
    TensorInfo info;
    info.name = name;
    info.type = type;
    info.n_dims = int(ne.size());
    int64_t nelements = 1;
    for (size_t d = 0; d < ne.size(); ++d) {
        if (ne[d] <= 0) fail("gguf", "tensor '{}': ne[{}] = {} is not positive", name, d, ne[d]);
        if (__builtin_mul_overflow(nelements, ne[d], &nelements)) {
            fail("gguf", "tensor '{}': the element count overflows 64 bits", name);
        }
        info.ne[d] = ne[d];
    }
    const DTypeTraits &tr = traits(type);
    if (info.ne[0] % tr.block_size != 0) {
        fail("gguf", "tensor '{}': ne[0] = {} is not a multiple of the {} block size {}", name,
             info.ne[0], tr.name, tr.block_size);
    }
    if (__builtin_mul_overflow(uint64_t(nelements / tr.block_size), uint64_t(tr.type_size),
                               &info.nbytes)) {
        fail("gguf", "tensor '{}': the byte size overflows 64 bits", name);
    }
    if (data == nullptr) fail("gguf", "tensor '{}' has no data", name);
    tensors_.push_back({std::move(info), data});
}

void Writer::add_tensor(const Tensor *t) {
    if (!t->is_contiguous()) fail("gguf", "{} is not contiguous", describe(t));
    int n_dims = kMaxDims;
    while (n_dims > 1 && t->ne[n_dims - 1] == 1) --n_dims;
    add_tensor(t->name, t->type, std::span<const int64_t>(t->ne, size_t(n_dims)), t->data);
}

uint32_t Writer::alignment() const {
    const Value *v = metadata_.find(kAlignmentKey);
    if (v == nullptr) return kDefaultAlignment;
    const auto *alignment = std::get_if<uint32_t>(v);
    if (alignment == nullptr || !std::has_single_bit(*alignment)) {
        fail("gguf", "key '{}' must be a uint32 power of two", kAlignmentKey);
    }
    return *alignment;
}

void Writer::check() const {
    for (const Metadata::Entry &e : metadata_.entries()) {
        if (e.key.empty() || e.key.size() > kMaxKeyLength) {
            fail("gguf", "key '{}' must be 1 to {} bytes", e.key, kMaxKeyLength);
        }
        check_value(e.key, e.value, 0);
    }
    alignment();
}

template <typename Sink>
void Writer::emit(Sink &sink) const {
    const uint64_t align = alignment();
    Encoder<Sink> out(sink);
    out.put(uint32_t(0x46554747));  // "GGUF" read as a little-endian u32
    out.put(kVersion);
    out.put(uint64_t(tensors_.size()));
    out.put(uint64_t(metadata_.size()));
    for (const Metadata::Entry &e : metadata_.entries()) {
        out.put_string(e.key);
        out.put(uint32_t(type_of(e.value)));
        out.put_value(e.value);
    }
    uint64_t offset = 0;  // each tensor starts aligned, as the reader requires
    for (const PendingTensor &t : tensors_) {
        out.put_string(t.info.name);
        out.put(uint32_t(t.info.n_dims));
        for (int d = 0; d < t.info.n_dims; ++d) out.put(uint64_t(t.info.ne[d]));
        out.put(traits(t.info.type).gguf_id);
        out.put(offset);
        offset += (t.info.nbytes + align - 1) / align * align;
    }
    out.pad_to(align);
    for (const PendingTensor &t : tensors_) {
        sink.append(t.data, t.info.nbytes);
        out.pad_to(align);
    }
}

void Writer::write(const std::string &path) const {
    check();  // before the file is created: a bad value leaves any old file in place
    FileSink sink(path);
    emit(sink);
    sink.close();
}

std::vector<std::byte> Writer::to_bytes() const {
    check();
    VectorSink sink;
    emit(sink);
    return std::move(sink.bytes);
}

}  // namespace loom::gguf
