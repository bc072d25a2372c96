// The table-indexed 4-bit formats against llama.cpp itself: tests/quant/reference holds what
// llama.cpp's libraries gave for fixed inputs (regenerate.sh; the inputs are made here by the same
// code): the quantizer's bytes, the dequantized rows, the activation quantizers' bytes, vec_dot,
// and its CPU backend's mul_mat / mul_mat_id. Loom must give the same bytes and the same floats.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/cpu/repack.h"
#include "core/quant/legacy_formats.h"
#include "loom/backend.h"
#include "loom/core.h"
#include "loom/cpu.h"
#include "tests/quant/quant_test_util.h"
#include "tests/quant/reference/lut4_inputs.h"

namespace loom {
namespace {

using namespace lut4_inputs;  // K, the row counts and the row makers

std::filesystem::path reference_dir() {
    return std::filesystem::path(LOOM_SOURCE_DIR) / "tests" / "quant" / "reference";
}

std::vector<std::byte> read_bytes(const std::filesystem::path &path) {
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in.good()) << path;
    std::stringstream s;
    s << in.rdbuf();
    const std::string all = s.str();
    std::vector<std::byte> bytes(all.size());
    std::memcpy(bytes.data(), all.data(), all.size());
    return bytes;
}

// A type's reference: the quantized inputs and, per key, the line's hex numbers.
struct Reference {
    std::vector<std::byte> weights, edge;
    std::map<std::string, std::vector<uint64_t>> lines;

    std::vector<float> floats(const std::string &key) const {
        std::vector<float> out;
        for (uint64_t v : lines.at(key)) {
            const auto bits = uint32_t(v);
            float f;
            std::memcpy(&f, &bits, 4);
            out.push_back(f);
        }
        return out;
    }
};

Reference load(DType type) {
    std::string name = dtype_name(type);
    for (char &c : name) c = char(std::tolower(static_cast<unsigned char>(c)));
    Reference r;
    r.weights = read_bytes(reference_dir() / (name + ".weights.bin"));
    r.edge = read_bytes(reference_dir() / (name + ".edge.bin"));
    std::ifstream in(reference_dir() / (name + ".txt"));
    EXPECT_TRUE(in.good()) << name;
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string key, word;
        words >> key;
        while (words >> word) r.lines[key].push_back(std::stoull(word, nullptr, 16));
    }
    return r;
}

uint64_t fnv1a(const void *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t *>(p)[i]) * 1099511628211ull;
    return h;
}

// The first block whose bytes differ, or -1.
int64_t first_different_block(DType type, const std::vector<std::byte> &a,
                              const std::vector<std::byte> &b) {
    if (a.size() != b.size()) return 0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] != b[i]) return int64_t(i / traits(type).type_size);
    }
    return -1;
}

class Lut4Reference : public ::testing::TestWithParam<DType> {};

TEST_P(Lut4Reference, QuantizerWritesLlamaCppBytes) {
    const DType type = GetParam();
    const Reference ref = load(type);
    EXPECT_EQ(first_different_block(type, quant_test::quantize(type, weight_rows()), ref.weights),
              -1);
    // Subnormal and huge scales, ties between levels, zero blocks, infinities and NaNs.
    EXPECT_EQ(first_different_block(type, quant_test::quantize(type, edge_rows()), ref.edge), -1);
}

TEST_P(Lut4Reference, DequantizedRowsMatchLlamaCpp) {
    const DType type = GetParam();
    const Reference ref = load(type);
    for (const auto &[key, bytes, rows] : {std::tuple{"dequant_weights", &ref.weights, kWeightRows},
                                           std::tuple{"dequant_edge", &ref.edge, kEdgeRows}}) {
        const std::vector<float> y = quant_test::dequantize(type, *bytes, rows * K);
        ASSERT_EQ(ref.lines.at(key).size(), size_t(rows));
        for (int64_t r = 0; r < rows; ++r) {
            EXPECT_EQ(fnv1a(y.data() + r * K, K * sizeof(float)), ref.lines.at(key)[size_t(r)])
                << key << " row " << r;
        }
    }
}

// The columns as llama.cpp's CPU backend quantizes them for these formats.
std::vector<std::byte> activations(DType act_type) {
    const std::vector<float> x = activation_rows();
    const size_t row = row_size(act_type, K);
    std::vector<std::byte> q(row * kActRows);
    for (int64_t r = 0; r < kActRows; ++r) {
        if (act_type == DType::Q8_0) {
            quant::quantize_activations_q8_0(x.data() + r * K, q.data() + r * row, K);
        } else {
            traits(act_type).from_float(x.data() + r * K, q.data() + r * row, K);
        }
    }
    return q;
}

TEST(Lut4ReferenceActivations, QuantizedAsLlamaCppDoes) {
    EXPECT_TRUE(activations(DType::Q8_0) == read_bytes(reference_dir() / "activations.q8_0.bin"));
    EXPECT_TRUE(activations(DType::Q8_K) == read_bytes(reference_dir() / "activations.q8_K.bin"));
}

TEST_P(Lut4Reference, DotProductsMatchLlamaCppBitForBit) {
    const DType type = GetParam();
    const Reference ref = load(type);
    const DTypeTraits &t = traits(type);
    const std::vector<std::byte> act = activations(t.vec_dot_type);
    const size_t row = row_size(type, K), act_row = row_size(t.vec_dot_type, K);
    // The whole rows, and a prefix of an odd number of 32-blocks (ggml's last-block path) or of
    // 3 super-blocks.
    const int64_t prefix = t.block_size == 256 ? 768 : 992;
    for (const auto &[key, n] : {std::pair{"dot_full", K}, std::pair{"dot_prefix", prefix}}) {
        const std::vector<float> expected = ref.floats(key);
        ASSERT_EQ(expected.size(), 32u);
        for (int64_t r = 0; r < 8; ++r) {
            for (int64_t c = 0; c < 4; ++c) {
                const float got =
                    t.vec_dot(n, ref.weights.data() + r * row, act.data() + c * act_row);
                EXPECT_EQ(got, expected[size_t(r * 4 + c)]) << key << " row " << r << " col " << c;
            }
        }
    }
}

// Loom's products with the weights where a model's go (the repack buffer) against llama.cpp's.
// Where both repack (MXFP4 and IQ4_NL with Loom's integer kernels, against llama.cpp's AVX2
// repacked kernels) the arithmetic is the same and so are the bits; otherwise the float order
// differs and the results agree to float rounding.
struct Product {
    std::vector<float> got;
    bool loom_repacked;
};

Product loom_product(DType type, const std::vector<std::byte> &a_bytes, int64_t m, int64_t n_mat,
                     int64_t b1, int64_t b2, const std::vector<int32_t> &ids_data, int n_threads) {
    Context wctx({.mem_size = 1u << 16, .no_alloc = true});
    Tensor *a = wctx.new_tensor(type, {K, m, n_mat});
    Tensor *const placed[] = {a};
    const std::unique_ptr<Buffer> buffer = place_tensors(cpu_repack_buffer_type(), placed);
    buffer->set_tensor(a, a_bytes.data(), 0, a->nbytes());

    Context ctx({.mem_size = 16u << 20});
    Tensor *b = ctx.new_tensor(DType::F32, {K, b1, b2});
    const std::vector<float> x = activation_rows();
    std::memcpy(b->data, x.data(), size_t(b->nelements()) * sizeof(float));
    Tensor *out;
    if (ids_data.empty()) {
        out = mul_mat(ctx, a, b);
    } else {
        Tensor *ids = ctx.new_tensor(DType::I32, {int64_t(ids_data.size()) / b2, b2});
        std::memcpy(ids->data, ids_data.data(), ids_data.size() * sizeof(int32_t));
        out = mul_mat_id(ctx, a, b, ids);
    }
    return {quant_test::run_graph(ctx, out, n_threads), cpu::is_repacked(a)};
}

void expect_same_product(const Product &p, const std::vector<float> &expected, bool ref_repacked,
                         const std::string &what) {
    ASSERT_EQ(p.got.size(), expected.size()) << what;
    if (p.loom_repacked && ref_repacked) {
        for (size_t i = 0; i < expected.size(); ++i) {
            EXPECT_EQ(p.got[i], expected[i]) << what << " element " << i;
        }
        return;
    }
    float scale = 0.0f;
    for (float v : expected) scale = std::max(scale, std::fabs(v));
    for (size_t i = 0; i < expected.size(); ++i) {
        EXPECT_NEAR(p.got[i], expected[i], 2e-6f * scale) << what << " element " << i;
    }
}

TEST_P(Lut4Reference, MatrixProductsMatchLlamaCpp) {
    const DType type = GetParam();
    const Reference ref = load(type);
    const bool ref_repacked = ref.lines.at("repacked").at(0) != 0;
    std::vector<int32_t> ids;  // token t uses experts (3t + 1) % 4 and (3t + 3) % 4
    for (int t = 0; t < 4; ++t) {
        for (int s = 0; s < 2; ++s) ids.push_back((3 * t + 2 * s + 1) % 4);
    }
    for (int n_threads : {1, 2, 3}) {
        SCOPED_TRACE(::testing::Message() << n_threads << " threads");
        for (int64_t n : {1, 5, 8}) {
            const std::string key = "mul_mat_n" + std::to_string(n);
            expect_same_product(
                loom_product(type, ref.weights, kWeightRows, 1, n, 1, {}, n_threads),
                ref.floats(key), ref_repacked, key);
        }
        expect_same_product(loom_product(type, ref.weights, 8, 4, 2, 4, ids, n_threads),
                            ref.floats("mul_mat_id"), ref_repacked, "mul_mat_id");
        expect_same_product(loom_product(type, ref.weights, 8, 4, 1, 4, ids, n_threads),
                            ref.floats("mul_mat_id_shared"), ref_repacked, "mul_mat_id_shared");
    }
}

INSTANTIATE_TEST_SUITE_P(Types, Lut4Reference,
                         ::testing::Values(DType::MXFP4, DType::IQ4_NL, DType::IQ4_XS),
                         [](const auto &info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace loom
