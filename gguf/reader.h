#pragma once
// The parser's parts (gguf/parse.cpp runs them in file order).
#include <vector>

#include "gguf/cursor.h"

namespace loom::gguf {

struct Header {
    uint32_t version = 3;
    uint64_t n_tensors = 0;
    uint64_t n_kv = 0;
};

// v1 stores counts, string lengths, array lengths and dims in 32 bits; v2 and v3 in 64.
inline bool has_32bit_lengths(uint32_t version) {
    return version == 1;
}

// Smallest encodings, to reject counts that cannot fit before reading what they count.
// A key-value pair: key length, a 1-byte key, value type, a 1-byte value.
inline uint64_t min_key_value_size(uint32_t version) {
    return (has_32bit_lengths(version) ? 4 : 8) + 1 + 4 + 1;
}
// A tensor info: name length, a 1-byte name, n_dims, one dim, type, offset (always 64-bit).
inline uint64_t min_tensor_info_size(uint32_t version) {
    const uint64_t length_bytes = has_32bit_lengths(version) ? 4 : 8;
    return length_bytes + 1 + 4 + length_bytes + 4 + 8;
}

// A count or length field: 32 bits in v1, 64 bits after. Its name is field + suffix.
uint64_t read_length(Cursor &c, uint32_t version, const Place &place, std::string_view field,
                     std::string_view suffix = {});
// A string's length and bytes (viewed in the file), checked against the file and against `cap`.
std::string_view read_string(Cursor &c, uint32_t version, const Place &place, std::string_view what,
                             uint64_t cap);

Header read_header(Cursor &c);
// Reads the n_kv key-value pairs into `out`; key_offsets[i] is the byte where key i starts.
void read_metadata(Cursor &c, const Header &h, Metadata &out, std::vector<uint64_t> &key_offsets);
// Reads the tensor directory into `out` (and `index`, name -> position), then checks every
// tensor against the data section. Returns the byte where the data section starts.
uint64_t read_tensors(Cursor &c, const Header &h, uint32_t alignment, std::vector<TensorInfo> &out,
                      std::map<std::string, size_t, std::less<>> &index);

}  // namespace loom::gguf
