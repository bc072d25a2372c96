#pragma once
// Helpers shared by the block-format tests: random rows, quantize / dequantize through the traits
// table, and where the llama.cpp fixtures live.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "loom/core.h"

namespace loom::quant_test {

// n normally distributed floats (mean 0, sd 1), the same for a given seed.
std::vector<float> random_row(int64_t n, uint32_t seed);

// Through traits(type).from_float / to_float; n a multiple of the block size.
std::vector<std::byte> quantize(DType type, const std::vector<float> &x);
std::vector<float> dequantize(DType type, const std::vector<std::byte> &q, int64_t n);

// sqrt(mean((x - y)^2)) / sqrt(mean(x^2)).
double normalized_rmse(const std::vector<float> &x, const std::vector<float> &y);
// normalized_rmse of one random row of 16384 values (seed 7) and its quantize -> dequantize trip.
double round_trip_nrmse(DType type);

// A new F32 tensor of shape ne in ctx holding random_row(seed).
Tensor *random_f32(Context &ctx, std::initializer_list<int64_t> ne, uint32_t seed);
// Computes `out` on a CPU backend of n_threads; its values as floats.
std::vector<float> run_graph(Context &ctx, Tensor *out, int n_threads);
// Computes `graph` on a CPU backend of n_threads, expecting its nodes to be `count` weight
// products of one kind run in `steps` steps (products of one input joined into one).
void run_expecting_steps(Graph &graph, int n_threads, int64_t count, int64_t steps);

// ../shared/fixtures beside the repository.
std::filesystem::path fixtures_dir();

}  // namespace loom::quant_test
