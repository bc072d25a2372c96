#pragma once
// Random weights for the synthetic model writers (synthetic_llama.h, synthetic_encoder.h): each
// tensor drawn from N(mean, stddev) in the order it is added, converted to its type, and kept
// until the gguf::Writer has written the file.
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "loom/gguf.h"

namespace loom::engine {

class SyntheticWeights {
  public:
    explicit SyntheticWeights(uint32_t seed) : rng_(seed) {}
    // A [ne0] tensor when ne1 is 1, else [ne0, ne1].
    void add(gguf::Writer &w, const std::string &name, DType type, int64_t ne0, int64_t ne1,
             float mean, float stddev);

  private:
    std::deque<std::vector<std::byte>> data_;  // a deque: added tensors never move
    std::mt19937 rng_;
};

}  // namespace loom::engine
