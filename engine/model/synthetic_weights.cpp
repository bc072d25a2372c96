#include "engine/model/synthetic_weights.h"

namespace loom::engine {

void SyntheticWeights::add(gguf::Writer &w, const std::string &name, DType type, int64_t ne0,
                           int64_t ne1, float mean, float stddev) {
    std::normal_distribution<float> normal(mean, stddev);
    std::vector<float> x(size_t(ne0 * ne1));
    for (float &v : x) v = normal(rng_);
    auto &bytes = data_.emplace_back(row_size(type, ne0) * size_t(ne1));
    traits(type).from_float(x.data(), bytes.data(), ne0 * ne1);
    if (ne1 == 1) {
        w.add_tensor(name, type, {ne0}, bytes.data());
    } else {
        w.add_tensor(name, type, {ne0, ne1}, bytes.data());
    }
}

}  // namespace loom::engine
