#include "tests/quant/quant_test_util.h"

#include <gtest/gtest.h>

#include "loom/cpu.h"

#include <cmath>
#include <cstring>
#include <random>

namespace loom::quant_test {

std::vector<float> random_row(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(n));
    for (float &v : x) v = normal(rng);
    return x;
}

std::vector<std::byte> quantize(DType type, const std::vector<float> &x) {
    std::vector<std::byte> q(row_size(type, int64_t(x.size())));
    traits(type).from_float(x.data(), q.data(), int64_t(x.size()));
    return q;
}

std::vector<float> dequantize(DType type, const std::vector<std::byte> &q, int64_t n) {
    std::vector<float> x(static_cast<size_t>(n));
    traits(type).to_float(q.data(), x.data(), n);
    return x;
}

double normalized_rmse(const std::vector<float> &x, const std::vector<float> &y) {
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < x.size(); ++i) {
        err += (double(x[i]) - y[i]) * (double(x[i]) - y[i]);
        ref += double(x[i]) * x[i];
    }
    return std::sqrt(err / ref);
}

double round_trip_nrmse(DType type) {
    const std::vector<float> x = random_row(32 * 512, 7);
    return normalized_rmse(x, dequantize(type, quantize(type, x), 32 * 512));
}

Tensor *random_f32(Context &ctx, std::initializer_list<int64_t> ne, uint32_t seed) {
    Tensor *b = ctx.new_tensor(DType::F32, ne);
    const std::vector<float> x = random_row(b->nelements(), seed);
    std::memcpy(b->data, x.data(), x.size() * sizeof(float));
    return b;
}

std::vector<float> run_graph(Context &ctx, Tensor *out, int n_threads) {
    Graph *graph = new_graph(ctx);
    build_forward_expand(graph, out);
    CpuBackend(n_threads).graph_compute(*graph);
    const auto *f = static_cast<const float *>(out->data);
    return std::vector<float>(f, f + out->nelements());
}

void run_expecting_steps(Graph &graph, int n_threads, int64_t count, int64_t steps) {
    CpuBackend backend(n_threads);
    backend.set_profiling(true);
    backend.graph_compute(graph);
    const std::vector<CpuBackend::OpTime> profile = backend.take_profile();
    ASSERT_EQ(profile.size(), 1u);
    EXPECT_EQ(profile[0].count, count);
    EXPECT_EQ(profile[0].steps, steps);
}

std::filesystem::path fixtures_dir() {
    return std::filesystem::path(LOOM_SOURCE_DIR).parent_path() / "shared" / "fixtures";
}

}  // namespace loom::quant_test
