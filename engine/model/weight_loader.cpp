#include "engine/model/weight_loader.h"

#include <fmt/format.h>

#include "loom/error.h"

namespace loom::engine {
namespace {

std::string shape_text(std::span<const int64_t> ne) {
    return fmt::format("[{}]", fmt::join(ne, ", "));
}

}  // namespace

WeightLoader::WeightLoader(const gguf::File &file, Context &ctx) : path_(file.path()) {
    for (Tensor *t : file.create_tensors(ctx)) {
        by_name_[t->name] = t;
        used_[t->name] = false;
    }
}

std::string WeightLoader::layer_name(int64_t layer, std::string_view name) {
    return fmt::format("blk.{}.{}", layer, name);
}

Tensor *WeightLoader::bind(const std::string &name, std::initializer_list<int64_t> ne,
                           bool required) {
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) {
        if (required) fail("model", "{}: tensor {} is missing from the file", path_, name);
        return nullptr;
    }
    Tensor *t = it->second;
    int64_t want[4] = {1, 1, 1, 1};
    std::copy(ne.begin(), ne.end(), want);
    if (!std::equal(want, want + 4, t->ne)) {
        fail("model", "{}: tensor {} has shape {}, expected {}", path_, name,
             shape_text(std::span<const int64_t>(t->ne, 4)), shape_text(want));
    }
    const bool is_matrix = ne.size() >= 2 && want[1] > 1;
    if (is_matrix && traits(t->type).is_quantized && traits(t->type).vec_dot == nullptr) {
        fail("model", "{}: tensor {} has type {}, which cannot be a matrix-product weight", path_,
             name, dtype_name(t->type));
    }
    if (!used_[name]) (is_matrix ? matrices_ : other_weights_).push_back(t);  // once each
    used_[name] = true;
    return t;
}

Tensor *WeightLoader::require(const std::string &name, std::initializer_list<int64_t> ne) {
    return bind(name, ne, true);
}

Tensor *WeightLoader::optional(const std::string &name, std::initializer_list<int64_t> ne) {
    return bind(name, ne, false);
}

std::vector<std::string> WeightLoader::unused() const {
    std::vector<std::string> out;
    for (const auto &[name, used] : used_) {
        if (!used) out.push_back(name);
    }
    return out;
}

}  // namespace loom::engine
