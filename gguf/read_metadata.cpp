// The header and the key-value pairs of a GGUF file.
#include <algorithm>
#include <array>

#include "gguf/reader.h"

namespace loom::gguf {
namespace {

constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};

// Reads values of every type. Which function reads a type comes from tables indexed by its GGUF
// id, built from the alternatives of Value and ArrayItems (which follow that numbering).
class ValueReader {
  public:
    ValueReader(Cursor &c, uint32_t version) : c_(c), version_(version) {}

    Value read_value(uint32_t type, const Place &place);
    template <typename T>
    T read_element(const Place &place, int depth);
    template <typename T>
    ArrayItems read_items(uint64_t n, Place place, int depth);

  private:
    Array read_array(const Place &place, int depth);
    uint64_t min_encoded_size(uint32_t type) const;

    Cursor &c_;
    const uint32_t version_;
};

// Bytes of each fixed-size type in the file (0 for string and array, whose size varies).
template <size_t... I>
constexpr std::array<uint64_t, kValueTypeCount> make_scalar_sizes(std::index_sequence<I...>) {
    return {[] {
        using T = std::variant_alternative_t<I, Value>;
        return std::is_arithmetic_v<T> ? uint64_t(sizeof(T)) : uint64_t(0);
    }()...};
}
constexpr auto kScalarSizes = make_scalar_sizes(std::make_index_sequence<kValueTypeCount>());
static_assert(kScalarSizes[size_t(ValueType::boolean)] == 1, "a GGUF bool is one byte");

using ValueFn = Value (*)(ValueReader &, const Place &);
using ItemsFn = ArrayItems (*)(ValueReader &, uint64_t, const Place &, int);

template <size_t... I>
constexpr std::array<ValueFn, kValueTypeCount> make_value_readers(std::index_sequence<I...>) {
    return {[](ValueReader &r, const Place &place) -> Value {
        using T = std::variant_alternative_t<I, Value>;
        return Value(std::in_place_index<I>, r.read_element<T>(place, 0));
    }...};
}
template <size_t... I>
constexpr std::array<ItemsFn, kValueTypeCount> make_items_readers(std::index_sequence<I...>) {
    return {[](ValueReader &r, uint64_t n, const Place &place, int depth) {
        using T = typename std::variant_alternative_t<I, ArrayItems>::value_type;
        return r.read_items<T>(n, place, depth);
    }...};
}
constexpr auto kValueReaders = make_value_readers(std::make_index_sequence<kValueTypeCount>());
constexpr auto kItemsReaders = make_items_readers(std::make_index_sequence<kValueTypeCount>());

Value ValueReader::read_value(uint32_t type, const Place &place) {
    return kValueReaders[type](*this, place);
}

template <typename T>
T ValueReader::read_element(const Place &place, int depth) {
    if constexpr (std::is_same_v<T, bool>) {
        const uint64_t at = c_.pos();
        const auto byte = c_.read<uint8_t>(place, "bool");
        if (byte > 1) c_.fail_at(at, place, "bool value {} is neither 0 nor 1", byte);
        return byte == 1;
    } else if constexpr (std::is_same_v<T, std::string>) {
        return std::string(read_string(c_, version_, place, "string", kMaxStringLength));
    } else if constexpr (std::is_same_v<T, Array>) {
        return read_array(place, depth);
    } else {
        return c_.read<T>(place, value_type_name(kValueTypeOf<T>));
    }
}

template <typename T>
ArrayItems ValueReader::read_items(uint64_t n, Place place, int depth) {
    std::vector<T> items;
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        items.resize(size_t(n));  // read_array checked that n elements fit in the file
        c_.read_into(items.data(), n * sizeof(T), place, "array elements");
    } else {
        items.reserve(size_t(n));
        for (uint64_t i = 0; i < n; ++i) {
            place.element = i;
            items.push_back(read_element<T>(place, depth + 1));
        }
    }
    return ArrayItems(std::in_place_type<std::vector<T>>, std::move(items));
}

uint64_t ValueReader::min_encoded_size(uint32_t type) const {
    const uint64_t length_bytes = has_32bit_lengths(version_) ? 4 : 8;
    if (ValueType(type) == ValueType::string) return length_bytes;
    if (ValueType(type) == ValueType::array) return sizeof(uint32_t) + length_bytes;
    return kScalarSizes[type];
}

Array ValueReader::read_array(const Place &place, int depth) {
    if (depth > kMaxArrayDepth) {
        c_.fail_at(c_.pos(), place, "arrays nested more than {} levels deep", kMaxArrayDepth);
    }
    const uint64_t type_at = c_.pos();
    const auto type = c_.read<uint32_t>(place, "array element type");
    if (type >= kValueTypeCount) c_.fail_at(type_at, place, "unknown array element type {}", type);
    const uint64_t at = c_.pos();
    const uint64_t n = read_length(c_, version_, place, "array", " length");
    const uint64_t min_size = min_encoded_size(type);
    if (n > c_.remaining() / min_size) {
        c_.fail_at(at, place,
                   "array length {} cannot fit in the {} bytes left (each {} takes at least {})", n,
                   c_.remaining(), value_type_name(ValueType(type)), min_size);
    }
    if (n > kMaxArrayLength) {
        c_.fail_at(at, place, "array length {} exceeds the limit {}", n, kMaxArrayLength);
    }
    return Array{kItemsReaders[type](*this, n, place, depth)};
}

}  // namespace

uint64_t read_length(Cursor &c, uint32_t version, const Place &place, std::string_view field,
                     std::string_view suffix) {
    if (has_32bit_lengths(version)) return c.read<uint32_t>(place, field, suffix);
    return c.read<uint64_t>(place, field, suffix);
}

std::string_view read_string(Cursor &c, uint32_t version, const Place &place, std::string_view what,
                             uint64_t cap) {
    const uint64_t at = c.pos();
    const uint64_t n = read_length(c, version, place, what, " length");
    if (n > c.remaining()) {
        c.fail_at(at, place, "{} length {} runs past the end of the file ({} bytes left)", what, n,
                  c.remaining());
    }
    if (n > cap) c.fail_at(at, place, "{} length {} exceeds the limit {}", what, n, cap);
    return c.read_bytes(n, place, what);
}

Header read_header(Cursor &c) {
    const Place header;
    if (c.size() < sizeof(kMagic)) {
        c.fail_at(0, header, "the file is {} bytes, too short for a GGUF header", c.size());
    }
    const std::string_view magic = c.read_bytes(sizeof(kMagic), header, "magic");
    if (std::memcmp(magic.data(), kMagic, sizeof(kMagic)) != 0) {
        c.fail_at(0, header,
                  "bad magic {:02x} {:02x} {:02x} {:02x}: a GGUF file starts with 'GGUF'",
                  uint8_t(magic[0]), uint8_t(magic[1]), uint8_t(magic[2]), uint8_t(magic[3]));
    }

    Header h;
    h.version = c.read<uint32_t>(header, "version");
    if (h.version < 1 || h.version > 3) {
        const uint32_t swapped = __builtin_bswap32(h.version);
        if (swapped >= 1 && swapped <= 3) {
            c.fail_at(4, header,
                      "version {} is {} byte-swapped: big-endian files are not supported",
                      h.version, swapped);
        }
        c.fail_at(4, header, "unsupported version {} (Loom reads versions 1, 2 and 3)", h.version);
    }
    const uint64_t n_tensors_at = c.pos();
    h.n_tensors = read_length(c, h.version, header, "n_tensors");
    const uint64_t n_kv_at = c.pos();
    h.n_kv = read_length(c, h.version, header, "n_kv");

    // Counts whose smallest possible encoding is already longer than the rest of the file.
    const uint64_t left = c.remaining();
    if (h.n_tensors > left / min_tensor_info_size(h.version)) {
        c.fail_at(n_tensors_at, header,
                  "n_tensors {} cannot fit in the {} bytes after the header (a tensor info takes "
                  "at least {})",
                  h.n_tensors, left, min_tensor_info_size(h.version));
    }
    if (h.n_kv > left / min_key_value_size(h.version)) {
        c.fail_at(n_kv_at, header,
                  "n_kv {} cannot fit in the {} bytes after the header (a key-value pair takes at "
                  "least {})",
                  h.n_kv, left, min_key_value_size(h.version));
    }
    return h;
}

void read_metadata(Cursor &c, const Header &h, Metadata &out, std::vector<uint64_t> &key_offsets) {
    ValueReader reader(c, h.version);
    key_offsets.reserve(size_t(h.n_kv));
    for (uint64_t i = 0; i < h.n_kv; ++i) {
        Place place("key", i);
        const uint64_t at = c.pos();
        const std::string_view key = read_string(c, h.version, place, "key", kMaxKeyLength);
        if (key.empty()) c.fail_at(at, place, "the key is empty");
        place.name = key;
        if (out.has(key)) {
            const auto entries = out.entries();
            const auto first = std::find_if(entries.begin(), entries.end(),
                                            [&](const Metadata::Entry &e) { return e.key == key; });
            const size_t j = size_t(first - entries.begin());
            c.fail_at(at, place, "duplicate key (key {} at byte {} has the same name)", j,
                      key_offsets[j]);
        }
        const uint64_t type_at = c.pos();
        const auto type = c.read<uint32_t>(place, "value type");
        if (type >= kValueTypeCount) c.fail_at(type_at, place, "unknown value type {}", type);
        out.set(std::string(key), reader.read_value(type, place));
        key_offsets.push_back(at);
    }
}

}  // namespace loom::gguf
