// format_json(): `loom gguf dump --json`, every value in full.
#include <nlohmann/json.hpp>

#include "loom/gguf.h"

namespace loom::gguf {
namespace {

using json = nlohmann::ordered_json;

json to_json(const Array &a);

template <typename T>
json element_to_json(const T &x) {
    if constexpr (std::is_same_v<T, Array>) {
        return to_json(x);
    } else {
        return json(x);
    }
}

json to_json(const Array &a) {
    return std::visit(
        [](const auto &items) {
            using T = typename std::decay_t<decltype(items)>::value_type;
            json out = json::array();
            for (const auto &item : items)
                out.push_back(element_to_json(static_cast<const T &>(item)));
            return out;
        },
        a.items);
}

json to_json(const Metadata::Entry &e) {
    json out = {{"key", e.key}, {"type", value_type_name(type_of(e.value))}};
    if (const Array *a = std::get_if<Array>(&e.value)) {
        out["element_type"] = value_type_name(a->element_type());
    }
    out["value"] = std::visit([](const auto &x) { return element_to_json(x); }, e.value);
    return out;
}

json to_json(const TensorInfo &t) {
    return {{"name", t.name},
            {"type", dtype_name(t.type)},
            {"shape", std::vector<int64_t>(t.ne, t.ne + t.n_dims)},
            {"offset", t.offset},
            {"bytes", t.nbytes}};
}

}  // namespace

std::string format_json(const Contents &c) {
    json metadata = json::array();
    for (const Metadata::Entry &e : c.metadata.entries()) metadata.push_back(to_json(e));
    json tensors = json::array();
    for (const TensorInfo &t : c.tensors) tensors.push_back(to_json(t));
    const json out = {{"version", c.version},
                      {"file_size", c.file_size},
                      {"alignment", c.alignment},
                      {"data_offset", c.data_offset},
                      {"metadata", std::move(metadata)},
                      {"tensors", std::move(tensors)}};
    // Strings in GGUF files are meant to be UTF-8 but byte tokens often are not.
    return out.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace loom::gguf
