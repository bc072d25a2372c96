#pragma once
// GGUF files: the metadata and tensor directory of a model file, read through a read-only memory
// map with strict validation (a hostile file gives a loom::Error, never a crash), and written.
//
// Layout, all little-endian (v1 has 32-bit counts, string lengths, array lengths and dims):
//   "GGUF" | version u32 | n_tensors u64 | n_kv u64
//   n_kv      x (key string | value type u32 | value)
//   n_tensors x (name string | n_dims u32 | ne[n_dims] u64 | type u32 | offset u64)
//   zero padding to general.alignment | data section (tensor i at data start + offset_i)
// A string is a u64 byte count and the bytes (no terminator); an array is its element type
// u32, a u64 count and the elements (an array of arrays repeats type and count per element).
#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "loom/core.h"

namespace loom {
class Buffer;
}

namespace loom::gguf {

// ---------------------------------------------------------------------------------------------
// Metadata values

// GGUF's metadata value types, numbered as in the file. Value and ArrayItems below list their
// alternatives in this order, so that a variant's index is the type's GGUF id.
enum class ValueType : uint32_t {
    u8 = 0,
    i8 = 1,
    u16 = 2,
    i16 = 3,
    u32 = 4,
    i32 = 5,
    f32 = 6,
    boolean = 7,
    string = 8,
    array = 9,
    u64 = 10,
    i64 = 11,
    f64 = 12,
};
inline constexpr uint32_t kValueTypeCount = 13;

// GGUF's own names: "uint8" ... "float64", "bool", "string", "array".
const char *value_type_name(ValueType type);

struct Array;
using ArrayItems = std::variant<std::vector<uint8_t>, std::vector<int8_t>, std::vector<uint16_t>,
                                std::vector<int16_t>, std::vector<uint32_t>, std::vector<int32_t>,
                                std::vector<float>, std::vector<bool>, std::vector<std::string>,
                                std::vector<Array>, std::vector<uint64_t>, std::vector<int64_t>,
                                std::vector<double>>;

// A typed array; an empty one keeps its element type. Arrays of arrays hold one Array per element,
// each with its own element type.
struct Array {
    ArrayItems items;

    ValueType element_type() const { return ValueType(items.index()); }
    size_t size() const;
    bool operator==(const Array &) const = default;
};

using Value = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                           std::string, Array, uint64_t, int64_t, double>;
static_assert(std::variant_size_v<Value> == kValueTypeCount);
static_assert(std::variant_size_v<ArrayItems> == kValueTypeCount);

inline ValueType type_of(const Value &v) {
    return ValueType(v.index());
}
// "uint32", "string", "array of float32", "array of array".
std::string type_name(const Value &v);

namespace detail {
template <typename T, size_t... I>
constexpr uint32_t value_index(std::index_sequence<I...>) {
    uint32_t index = kValueTypeCount;  // not a Value alternative
    ((std::is_same_v<T, std::variant_alternative_t<I, Value>> ? (index = uint32_t(I)) : 0), ...);
    return index;
}
}  // namespace detail

// The ValueType of a C++ scalar type (the Value alternative at that index).
template <typename T>
inline constexpr ValueType kValueTypeOf =
    ValueType(detail::value_index<T>(std::make_index_sequence<kValueTypeCount>()));

// The C++ types a Value can hold: the scalars, std::string and Array.
template <typename T>
concept Storable = (uint32_t(kValueTypeOf<T>) < kValueTypeCount);
// The integer types a GGUF value can have (not bool).
template <typename T>
concept Integer = std::integral<T> && !std::same_as<T, bool> && Storable<T>;

// Limits beyond which a file is rejected. The GGUF spec caps keys at 65535 bytes and tensor names
// at 64 bytes; loom::Tensor keeps a name in kMaxName bytes with a terminator.
inline constexpr uint64_t kMaxKeyLength = 65535;
inline constexpr uint64_t kMaxTensorNameLength = kMaxName - 1;
// Real files hold chat templates and whole tokenizer.json files (tens of MB) as strings, and
// vocabularies of a few hundred thousand entries as arrays.
inline constexpr uint64_t kMaxStringLength = uint64_t(1) << 30;
inline constexpr uint64_t kMaxArrayLength = uint64_t(1) << 28;
inline constexpr int kMaxArrayDepth = 8;  // arrays of arrays: levels below the top array
inline constexpr uint32_t kDefaultAlignment = 32;

// Key-value pairs in file order, with lookup by key. Getters throw loom::Error("[gguf] key 'k'
// ...") naming the key when it is missing or has another type.
class Metadata {
  public:
    struct Entry {
        std::string key;
        Value value;
        bool operator==(const Entry &) const = default;
    };

    std::span<const Entry> entries() const { return entries_; }
    size_t size() const { return entries_.size(); }
    const Value *find(std::string_view key) const;
    bool has(std::string_view key) const { return find(key) != nullptr; }
    // Adds a key at the end, or replaces the value of an existing key in its place.
    void set(std::string key, Value value);
    bool operator==(const Metadata &other) const { return entries_ == other.entries_; }

    // The value, which must have exactly type T.
    template <typename T>
    const T &get(std::string_view key) const;
    // As get, but std::nullopt when the key is missing (a wrong type still throws).
    template <typename T>
    std::optional<T> get_optional(std::string_view key) const;
    // The elements of an array whose element type is exactly T.
    template <typename T>
    const std::vector<T> &get_array(std::string_view key) const;

    // Integer-width tolerant (what llama.cpp's loader accepts): a value of any integer type whose
    // value fits in T, e.g. a uint32 hparam stored as int32 or uint64.
    template <Integer T>
    T get_integer(std::string_view key) const;
    template <Integer T>
    std::optional<T> get_integer_optional(std::string_view key) const;
    // An array of any integer element type whose every element fits in T.
    template <Integer T>
    std::vector<T> get_integer_array(std::string_view key) const;

  private:
    const Value &require(std::string_view key) const;
    [[noreturn]] static void fail_wrong_type(std::string_view key, const Value &v,
                                             std::string_view wanted);
    [[noreturn]] static void fail_does_not_fit(std::string_view key, std::string_view what,
                                               std::string_view value, std::string_view wanted);

    std::vector<Entry> entries_;
    std::map<std::string, size_t, std::less<>> index_;
};

// ---------------------------------------------------------------------------------------------
// Tensor types: GGUF ids go through the DType traits table (traits(type).gguf_id).

// The DType with this GGUF type id, if Loom has one.
std::optional<DType> dtype_from_gguf_id(uint32_t gguf_id);
// GGUF's name for a tensor type id ("Q4_K" for 12), whether or not Loom supports it; nullptr for
// an id GGUF never had.
const char *gguf_type_name(uint32_t gguf_id);

// ---------------------------------------------------------------------------------------------
// Reading

struct TensorInfo {
    std::string name;
    DType type = DType::F32;
    int n_dims = 1;                       // as stored, 1..4; ne[n_dims..3] are 1
    int64_t ne[kMaxDims] = {1, 1, 1, 1};  // ne[0] innermost, as in loom::Tensor
    uint64_t offset = 0;                  // bytes from the start of the data section
    uint64_t nbytes = 0;
    uint64_t record_offset = 0;  // file byte where this tensor's directory entry starts

    int64_t nelements() const { return ne[0] * ne[1] * ne[2] * ne[3]; }
};

// Everything a GGUF file holds except the tensor bytes.
struct Contents {
    uint32_t version = 3;
    Metadata metadata;
    std::vector<TensorInfo> tensors;  // in file order
    uint32_t alignment = kDefaultAlignment;
    uint64_t data_offset = 0;  // file byte where the data section starts
    uint64_t file_size = 0;

    const TensorInfo *find_tensor(std::string_view name) const;

  private:
    friend Contents parse(std::span<const std::byte> file, std::string_view source);
    std::map<std::string, size_t, std::less<>> tensor_index_;
};

// Parses and validates a whole GGUF file held in memory. Throws loom::Error("[gguf] <source>:
// <where> at byte <n>: <what>") on anything malformed; `source` (a path) may be empty.
Contents parse(std::span<const std::byte> file, std::string_view source = {});

// A GGUF file mapped read-only (munmapped on destruction). Tensor data are views into the
// mapping: nothing is copied and nothing of the data section is read on open.
class File {
  public:
    explicit File(const std::string &path);
    ~File();
    File(const File &) = delete;
    File &operator=(const File &) = delete;

    const std::string &path() const { return path_; }
    const Contents &contents() const { return contents_; }
    uint32_t version() const { return contents_.version; }
    const Metadata &metadata() const { return contents_.metadata; }
    std::span<const TensorInfo> tensors() const { return contents_.tensors; }
    const TensorInfo *find_tensor(std::string_view name) const {
        return contents_.find_tensor(name);
    }

    std::span<const std::byte> bytes() const;
    std::span<const std::byte> tensor_data(const TensorInfo &t) const;
    // The mapping as a read-only loom::Buffer (writes through it throw).
    Buffer &buffer() const { return *buffer_; }

    // Arena bytes create_tensors needs.
    size_t context_size() const;
    // One loom::Tensor per file tensor, in file order, made in `ctx` (which must be no_alloc):
    // named, shaped, flagged as params, data pointing into the mapping, buffer = buffer().
    std::vector<Tensor *> create_tensors(Context &ctx) const;

  private:
    class Mapping;
    std::string path_;
    std::unique_ptr<Mapping> mapping_;
    Contents contents_;
    std::unique_ptr<Buffer> buffer_;
};

// ---------------------------------------------------------------------------------------------
// Writing (v3)

class Writer {
  public:
    // Keys to write, in order. "general.alignment" (uint32, a power of two) sets the padding.
    Metadata &metadata() { return metadata_; }
    void set(std::string key, Value value) { metadata_.set(std::move(key), std::move(value)); }

    // A tensor whose row_size(type, ne[0]) * rows bytes are read from `data` when the file is
    // written: `data` must stay valid until then. Throws on a bad name, shape or duplicate.
    void add_tensor(std::string_view name, DType type, std::span<const int64_t> ne,
                    const void *data);
    void add_tensor(std::string_view name, DType type, std::initializer_list<int64_t> ne,
                    const void *data) {
        add_tensor(name, type, std::span<const int64_t>(ne.begin(), ne.size()), data);
    }
    // A contiguous tensor with data, under its own name, shape and type.
    void add_tensor(const Tensor *t);

    // Throws loom::Error("[gguf] ...") on a value the reader would reject or an I/O error.
    void write(const std::string &path) const;
    std::vector<std::byte> to_bytes() const;

  private:
    struct PendingTensor {
        TensorInfo info;
        const void *data;
    };
    uint32_t alignment() const;
    void check() const;
    template <typename Sink>
    void emit(Sink &sink) const;

    Metadata metadata_;
    std::vector<PendingTensor> tensors_;
};

// ---------------------------------------------------------------------------------------------
// Describing a file (`loom gguf dump`)

// Header, every key with its type and value (long arrays and strings abbreviated), and a table
// of tensors (name, type, shape, offset, bytes).
std::string format_text(const Contents &contents);
// The same as one JSON object, arrays in full; invalid UTF-8 in strings becomes U+FFFD.
std::string format_json(const Contents &contents);

// ---------------------------------------------------------------------------------------------
// Getter templates

template <typename T>
const T &Metadata::get(std::string_view key) const {
    static_assert(Storable<T>, "a GGUF value is a number, bool, std::string or gguf::Array");
    const Value &v = require(key);
    if (const T *p = std::get_if<T>(&v)) return *p;
    fail_wrong_type(key, v, value_type_name(kValueTypeOf<T>));
}

template <typename T>
std::optional<T> Metadata::get_optional(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    return get<T>(key);
}

template <typename T>
const std::vector<T> &Metadata::get_array(std::string_view key) const {
    static_assert(Storable<T>, "array elements are numbers, bools, std::strings or gguf::Arrays");
    const Value &v = require(key);
    if (const Array *a = std::get_if<Array>(&v)) {
        if (const auto *items = std::get_if<std::vector<T>>(&a->items)) return *items;
    }
    fail_wrong_type(key, v, std::string("array of ") + value_type_name(kValueTypeOf<T>));
}

template <Integer T>
T Metadata::get_integer(std::string_view key) const {
    const Value &v = require(key);
    return std::visit(
        [&](const auto &x) -> T {
            using X = std::decay_t<decltype(x)>;
            if constexpr (Integer<X>) {
                if (!std::in_range<T>(x)) {
                    fail_does_not_fit(key, value_type_name(kValueTypeOf<X>), std::to_string(x),
                                      value_type_name(kValueTypeOf<T>));
                }
                return T(x);
            } else {
                fail_wrong_type(key, v, "an integer");
            }
        },
        v);
}

template <Integer T>
std::optional<T> Metadata::get_integer_optional(std::string_view key) const {
    if (!has(key)) return std::nullopt;
    return get_integer<T>(key);
}

template <Integer T>
std::vector<T> Metadata::get_integer_array(std::string_view key) const {
    const Value &v = require(key);
    const Array *a = std::get_if<Array>(&v);
    if (a == nullptr) fail_wrong_type(key, v, "an array of integers");
    return std::visit(
        [&](const auto &items) -> std::vector<T> {
            using X = typename std::decay_t<decltype(items)>::value_type;
            if constexpr (Integer<X>) {
                std::vector<T> out;
                out.reserve(items.size());
                for (size_t i = 0; i < items.size(); ++i) {
                    if (!std::in_range<T>(items[i])) {
                        fail_does_not_fit(key, "element " + std::to_string(i),
                                          std::to_string(items[i]),
                                          value_type_name(kValueTypeOf<T>));
                    }
                    out.push_back(T(items[i]));
                }
                return out;
            } else {
                fail_wrong_type(key, v, "an array of integers");
            }
        },
        a->items);
}

}  // namespace loom::gguf
