#pragma once
// Where every field of a valid GGUF file lies, by name ("kv[3].key_length", "tensor[1].ne[0]"),
// so that the hostile-file tests can corrupt one field at a time. A deliberately plain walk of
// the format, independent of the reader under test; it trusts its input.
#include <cstdint>
#include <string>
#include <vector>

namespace loom::gguf::testing {

struct Field {
    enum Kind {
        other,
        count,        // n_tensors, n_kv, an array length
        length,       // a string length (key, string value, tensor name)
        value_type,   // a value type or array element type
        tensor_type,  // a tensor's type id
        n_dims,
        dim,     // one ne[i]
        offset,  // a tensor's data offset
    };
    std::string name;
    uint64_t at;
    uint64_t size;
    Kind kind;
};

std::vector<Field> map_fields(const std::vector<std::byte> &file);
const Field &field(const std::vector<Field> &fields, const std::string &name);

}  // namespace loom::gguf::testing
