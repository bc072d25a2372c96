#include "tests/gguf/field_map.h"

#include <cstring>
#include <stdexcept>

namespace loom::gguf::testing {
namespace {

class Walker {
  public:
    explicit Walker(const std::vector<std::byte> &file) : file_(file) { version_ = get(4, 4); }
    std::vector<Field> walk() {
        add("magic", 4, Field::other);
        add("version", 4, Field::other);
        const uint64_t n_tensors = add("n_tensors", length_bytes(), Field::count);
        const uint64_t n_kv = add("n_kv", length_bytes(), Field::count);
        for (uint64_t i = 0; i < n_kv; ++i) {
            const std::string kv = "kv[" + std::to_string(i) + "]";
            const uint64_t key_length = add(kv + ".key_length", length_bytes(), Field::length);
            add(kv + ".key", key_length, Field::other);
            const uint64_t type = add(kv + ".type", 4, Field::value_type);
            value(kv, type);
        }
        for (uint64_t i = 0; i < n_tensors; ++i) {
            const std::string t = "tensor[" + std::to_string(i) + "]";
            const uint64_t name_length = add(t + ".name_length", length_bytes(), Field::length);
            add(t + ".name", name_length, Field::other);
            const uint64_t n_dims = add(t + ".n_dims", 4, Field::n_dims);
            for (uint64_t d = 0; d < n_dims; ++d) {
                add(t + ".ne[" + std::to_string(d) + "]", length_bytes(), Field::dim);
            }
            add(t + ".type", 4, Field::tensor_type);
            add(t + ".offset", 8, Field::offset);
        }
        return fields_;
    }

  private:
    uint64_t length_bytes() const { return version_ == 1 ? 4 : 8; }
    uint64_t get(uint64_t at, uint64_t size) const {
        if (at + size > file_.size()) throw std::runtime_error("field_map: not a valid file");
        uint64_t v = 0;
        std::memcpy(&v, file_.data() + at, size_t(size));
        return v;
    }
    uint64_t add(const std::string &name, uint64_t size, Field::Kind kind) {
        const uint64_t v = size <= 8 ? get(pos_, size) : 0;
        fields_.push_back({name, pos_, size, kind});
        pos_ += size;
        return v;
    }
    void value(const std::string &name, uint64_t type) {
        static constexpr uint64_t kSizes[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
        if (type == 8) {
            const uint64_t n = add(name + ".string_length", length_bytes(), Field::length);
            add(name + ".string", n, Field::other);
        } else if (type == 9) {
            const uint64_t element_type = add(name + ".element_type", 4, Field::value_type);
            const uint64_t n = add(name + ".array_length", length_bytes(), Field::count);
            for (uint64_t i = 0; i < n; ++i) {
                value(name + ".element[" + std::to_string(i) + "]", element_type);
            }
        } else {
            add(name + ".value", kSizes[type], Field::other);
        }
    }

    const std::vector<std::byte> &file_;
    uint64_t version_ = 3;
    uint64_t pos_ = 0;
    std::vector<Field> fields_;
};

}  // namespace

std::vector<Field> map_fields(const std::vector<std::byte> &file) {
    return Walker(file).walk();
}

const Field &field(const std::vector<Field> &fields, const std::string &name) {
    for (const Field &f : fields) {
        if (f.name == name) return f;
    }
    throw std::runtime_error("field_map: no field " + name);
}

}  // namespace loom::gguf::testing
