// Metadata values: type names, arrays, and the key-value map with its error messages.
#include <array>

#include "loom/gguf.h"

namespace loom::gguf {
namespace {

constexpr std::array<const char *, kValueTypeCount> kValueTypeNames = {
    "uint8", "int8",   "uint16", "int16",  "uint32", "int32",   "float32",
    "bool",  "string", "array",  "uint64", "int64",  "float64",
};

}  // namespace

const char *value_type_name(ValueType type) {
    const auto index = uint32_t(type);
    return index < kValueTypeCount ? kValueTypeNames[index] : "unknown";
}

size_t Array::size() const {
    return std::visit([](const auto &v) { return v.size(); }, items);
}

std::string type_name(const Value &v) {
    if (const Array *a = std::get_if<Array>(&v)) {
        return std::string("array of ") + value_type_name(a->element_type());
    }
    return value_type_name(type_of(v));
}

const Value *Metadata::find(std::string_view key) const {
    const auto it = index_.find(key);
    return it == index_.end() ? nullptr : &entries_[it->second].value;
}

void Metadata::set(std::string key, Value value) {
    const auto it = index_.find(key);
    if (it != index_.end()) {
        entries_[it->second].value = std::move(value);
        return;
    }
    index_.emplace(key, entries_.size());
    entries_.push_back({std::move(key), std::move(value)});
}

const Value &Metadata::require(std::string_view key) const {
    const Value *v = find(key);
    if (v == nullptr) fail("gguf", "key '{}' is missing", key);
    return *v;
}

void Metadata::fail_wrong_type(std::string_view key, const Value &v, std::string_view wanted) {
    fail("gguf", "key '{}' is {}, not {}", key, type_name(v), wanted);
}

void Metadata::fail_does_not_fit(std::string_view key, std::string_view what,
                                 std::string_view value, std::string_view wanted) {
    fail("gguf", "key '{}': {} = {} does not fit in {}", key, what, value, wanted);
}

}  // namespace loom::gguf
