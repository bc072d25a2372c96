// Weights in cpu_repack_buffer_type(): the layout round-trips, and mul_mat / mul_mat_id over
// them give, bit for bit, the arithmetic order core/cpu/qgemm.h promises (recomputed here in
// scalar code from the file's blocks), close to a double reference, for any N and thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/cpu/repack.h"
#include "core/quant/k_blocks.h"
#include "core/quant/legacy_formats.h"
#include "core/quant/lut4_formats.h"
#include "loom/backend.h"
#include "loom/core.h"
#include "loom/cpu.h"
#include "loom/fp16.h"
#include "tests/quant/k_levels.h"
#include "tests/quant/quant_test_util.h"

namespace loom {
namespace {

using quant_test::dequantize;
using quant_test::quantize;
using quant_test::random_f32;
using quant_test::random_row;
using quant_test::run_expecting_steps;
using quant_test::run_graph;

const DType kRepackedTypes[] = {DType::Q4_0,  DType::Q4_1,   DType::Q5_0,  DType::Q5_1, DType::Q8_0,
                                DType::Q2_K,  DType::Q3_K,   DType::Q4_K,  DType::Q5_K, DType::Q6_K,
                                DType::MXFP4, DType::IQ4_NL, DType::IQ4_XS};

// Where the weights lie: repacked, or in the file's layout while their repacked copy is made
// (kFlagRepackPending: the kernels permute them as they read them).
enum class Layout { repacked, file };
const Layout kLayouts[] = {Layout::repacked, Layout::file};
const char *layout_name(Layout l) {
    return l == Layout::repacked ? "repacked" : "file layout";
}

// Weights [K, rows, n_mat] of `type` (random N(0, 1) values quantized) stored in a repack buffer,
// or in a plain host buffer as the file has them.
struct RepackedWeights {
    Context ctx{{.mem_size = 1u << 16, .no_alloc = true}};
    Tensor *a = nullptr;
    std::unique_ptr<Buffer> buffer;
    std::vector<std::byte> file_bytes;

    RepackedWeights(DType type, int64_t K, int64_t rows, int64_t n_mat, uint32_t seed,
                    Layout layout = Layout::repacked)
        : RepackedWeights(type, K, rows, quantize(type, random_row(K * rows * n_mat, seed)),
                          layout) {}
    // The file's bytes as given ([K, rows, bytes.size() / the bytes of `rows` rows]).
    RepackedWeights(DType type, int64_t K, int64_t rows, std::vector<std::byte> bytes,
                    Layout layout = Layout::repacked)
        : file_bytes(std::move(bytes)) {
        const int64_t n_mat = int64_t(file_bytes.size() / (row_size(type, K) * size_t(rows)));
        a = ctx.new_tensor(type, {K, rows, n_mat});
        Tensor *const tensors[] = {a};
        buffer = place_tensors(
            layout == Layout::repacked ? cpu_repack_buffer_type() : host_buffer_type(), tensors);
        buffer->set_tensor(a, file_bytes.data(), 0, file_bytes.size());
        if (layout == Layout::file) a->flags |= kFlagRepackPending;
    }
    const std::byte *row(int64_t m, int64_t mat = 0) const {
        return file_bytes.data() + size_t(mat) * a->nb[2] + size_t(m) * a->nb[1];
    }
};

// The column as the kernels quantize it (Q8_0, Q8_1: llama.cpp's x86 quantizers; Q8_K:
// reference).
std::vector<std::byte> quantize_column(DType weight_type, const float *x, int64_t K) {
    const DType act = traits(weight_type).vec_dot_type;
    std::vector<std::byte> q(row_size(act, K));
    if (act == DType::Q8_0) {
        quant::quantize_activations_q8_0(x, q.data(), K);
    } else if (act == DType::Q8_1) {
        quant::quantize_activations_q8_1(x, q.data(), K);
    } else {
        traits(act).from_float(x, q.data(), K);
    }
    return q;
}

// Element i of a legacy block (i < 32) as the tile's unsigned level, and the offset it takes off.
struct Level {
    int u, offset;
};
uint32_t fifth_bits(const uint8_t *qh) {
    uint32_t bits;
    std::memcpy(&bits, qh, 4);
    return bits;
}
int nibble(const uint8_t *qs, int i) {
    return i < 16 ? qs[i] & 0x0F : qs[i - 16] >> 4;
}
Level level(DType type, const std::byte *block, int i) {
    switch (type) {
        case DType::Q4_0:
            return {nibble(reinterpret_cast<const quant::BlockQ4_0 *>(block)->qs, i), 8};
        case DType::Q4_1:
            return {nibble(reinterpret_cast<const quant::BlockQ4_1 *>(block)->qs, i), 0};
        case DType::Q5_0: {
            const auto *x = reinterpret_cast<const quant::BlockQ5_0 *>(block);
            return {nibble(x->qs, i) | int((fifth_bits(x->qh) >> i) & 1) << 4, 16};
        }
        case DType::Q5_1: {
            const auto *x = reinterpret_cast<const quant::BlockQ5_1 *>(block);
            return {nibble(x->qs, i) | int((fifth_bits(x->qh) >> i) & 1) << 4, 0};
        }
        default:
            return {reinterpret_cast<const quant::BlockQ8_0 *>(block)->qs[i] + 128, 128};
    }
}

// qgemm.h's order, from the file's bytes: exact integer block sums, then one fma per block (and
// for Q4_1 / Q5_1 a sum of the minimums times the column's s, added last).
// Q8_0 as ggml's AVX2 vec_dot: lane t of each block holds elements 4t .. 4t + 3, each lane its own
// float accumulator (fused with d_w * d_a per block), added as hsum_float_8.
float q8_0_expected(const std::byte *row, const std::byte *column, int64_t K) {
    const auto *x = reinterpret_cast<const quant::BlockQ8_0 *>(row);
    const auto *y = reinterpret_cast<const quant::BlockQ8_0 *>(column);
    float acc[8] = {};
    for (int64_t b = 0; b < K / 32; ++b) {
        const float d = fp16_to_f32(x[b].d) * fp16_to_f32(y[b].d);
        for (int t = 0; t < 8; ++t) {
            int32_t lane = 0;
            for (int i = 4 * t; i < 4 * t + 4; ++i) lane += x[b].qs[i] * y[b].qs[i];
            acc[t] = std::fma(float(lane), d, acc[t]);
        }
    }
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

float legacy_expected(DType type, const std::byte *row, const std::byte *column, int64_t K) {
    if (type == DType::Q8_0) return q8_0_expected(row, column, K);
    const bool with_min = type == DType::Q4_1 || type == DType::Q5_1;
    const size_t block_bytes = traits(type).type_size;
    const size_t column_block = with_min ? sizeof(quant::BlockQ8_1) : sizeof(quant::BlockQ8_0);
    float acc = 0.0f, acc_min = 0.0f;
    for (int64_t b = 0; b < K / 32; ++b) {
        const std::byte *x = row + size_t(b) * block_bytes;
        const std::byte *y = column + size_t(b) * column_block;
        // d comes first in both activation blocks, and in every weight block
        uint16_t dw, da;
        std::memcpy(&dw, x, 2);
        std::memcpy(&da, y, 2);
        const auto *qa = reinterpret_cast<const int8_t *>(y + (with_min ? 4 : 2));
        int32_t sum = 0;
        for (int i = 0; i < 32; ++i) {
            const Level l = level(type, x, i);
            sum += (l.u - l.offset) * qa[i];
        }
        acc = std::fma(float(sum), fp16_to_f32(dw) * fp16_to_f32(da), acc);
        if (with_min) {
            uint16_t mw, sa;
            std::memcpy(&mw, x + 2, 2);
            std::memcpy(&sa, y + 2, 2);
            acc_min = std::fma(fp16_to_f32(mw), fp16_to_f32(sa), acc_min);
        }
    }
    return with_min ? acc + acc_min : acc;
}

// The table-indexed 32-blocks: the same order, with each code's table value.
float lut4_expected(DType type, const std::byte *row, const std::byte *column, int64_t K) {
    const auto *y = reinterpret_cast<const quant::BlockQ8_0 *>(column);
    const size_t block = traits(type).type_size;
    const bool mxfp4 = type == DType::MXFP4;
    const int8_t *values = mxfp4 ? quant::kValuesMxfp4 : quant::kValuesIq4nl;
    float acc = 0.0f;
    for (int64_t b = 0; b < K / 32; ++b) {
        const auto *x = reinterpret_cast<const uint8_t *>(row + size_t(b) * block);
        const uint8_t *qs = x + block - 16;
        uint16_t d;
        std::memcpy(&d, x, 2);
        const float dw = mxfp4 ? quant::e8m0_half_to_f32(x[0]) : fp16_to_f32(d);
        int32_t sum = 0;
        for (int i = 0; i < 16; ++i) {
            sum += values[qs[i] & 0x0F] * y[b].qs[i] + values[qs[i] >> 4] * y[b].qs[i + 16];
        }
        acc = std::fma(float(sum), dw * fp16_to_f32(y[b].d), acc);
    }
    return acc;
}

// IQ4_XS: each super-block's exact integer sum (sub-block sums times their 6-bit scales), then
// one fma with d_w * d_a.
float iq4xs_expected(const std::byte *row, const std::byte *column, int64_t K) {
    const auto *y = reinterpret_cast<const quant::BlockQ8K *>(column);
    float acc = 0.0f;
    for (int64_t b = 0; b < K / 256; ++b) {
        const auto &x = reinterpret_cast<const quant::BlockIQ4XS *>(row)[b];
        int32_t total = 0;
        for (int ib = 0; ib < 8; ++ib) {
            int32_t sum = 0;
            for (int i = 0; i < 16; ++i) {
                const uint8_t q = x.qs[16 * ib + i];
                sum += quant::kValuesIq4nl[q & 0x0F] * y[b].qs[32 * ib + i] +
                       quant::kValuesIq4nl[q >> 4] * y[b].qs[32 * ib + 16 + i];
            }
            total += quant::iq4xs_scale(x, ib) * sum;
        }
        acc = std::fma(float(total), fp16_to_f32(x.d) * y[b].d, acc);
    }
    return acc;
}

// Q3_K: per super-block the exact integer sum of levels times scales, then one fma.
float q3k_expected(const std::byte *row, const std::byte *column, int64_t K) {
    const auto *y = reinterpret_cast<const quant::BlockQ8K *>(column);
    float acc = 0.0f;
    for (int64_t b = 0; b < K / 256; ++b) {
        const auto &x = reinterpret_cast<const quant::BlockQ3K *>(row)[b];
        int32_t sumi = 0;
        for (int e = 0; e < 256; ++e)
            sumi += quant_test::q3_k_scale(x, e / 16) * quant_test::q3_k_level(x, e) * y[b].qs[e];
        acc = std::fma(float(sumi), fp16_to_f32(x.d) * y[b].d, acc);
    }
    return acc;
}

// Sub-block j's 6-bit scale and min in a Q4_K / Q5_K block's 12 scale bytes.
std::pair<int, int> q4k_scale_min(const uint8_t *s, int j) {
    const int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4);
    const int mn = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    return {sc, mn};
}

// Element l of sub-block j of a Q4_K or Q5_K block.
template <typename Block>
int q4k_level(const Block &x, int j, int l) {
    const uint8_t byte = x.qs[32 * (j / 2) + l];
    int level = j % 2 == 0 ? byte & 0x0F : byte >> 4;
    if constexpr (std::is_same_v<Block, quant::BlockQ5K>) level |= ((x.qh[l] >> j) & 1) << 4;
    return level;
}

// Q4_K: per super-block the exact integer sums of levels times scales and of mins times
// activation sums, then one fma each.
float q4k_expected(const std::byte *row, const std::byte *column, int64_t K) {
    const auto *y = reinterpret_cast<const quant::BlockQ8K *>(column);
    float acc = 0.0f;
    for (int64_t b = 0; b < K / 256; ++b) {
        const auto &x = reinterpret_cast<const quant::BlockQ4K *>(row)[b];
        int32_t sumi = 0, summ = 0;
        for (int j = 0; j < 8; ++j) {
            const auto [sc, mn] = q4k_scale_min(x.scales, j);
            int32_t isum = 0;
            for (int l = 0; l < 32; ++l) isum += q4k_level(x, j, l) * y[b].qs[32 * j + l];
            sumi += sc * isum;
            summ += mn * (y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
        }
        const float da = y[b].d;
        acc = std::fma(float(sumi), fp16_to_f32(x.d) * da, acc);
        acc = std::fma(float(summ), fp16_to_f32(x.dmin) * -da, acc);
    }
    return acc;
}

// ggml's AVX2 Q5_K order: lane m holds elements 4m .. 4m + 3 of every sub-block, level * q8 times
// the sub-block's scale, through its own float accumulator (times d_w * d_a per block); the mins
// times the sub-blocks' sums go to one more float, `summs` (fused with -dmin_w * d_a per block),
// added after the lanes' hsum_float_8.
float q5k_expected(const std::byte *row, const std::byte *column, int64_t K) {
    const auto *y = reinterpret_cast<const quant::BlockQ8K *>(column);
    float acc[8] = {}, summs = 0.0f;
    for (int64_t b = 0; b < K / 256; ++b) {
        const auto &x = reinterpret_cast<const quant::BlockQ5K *>(row)[b];
        int32_t lane[8] = {}, summ = 0;
        for (int j = 0; j < 8; ++j) {
            const auto [sc, mn] = q4k_scale_min(x.scales, j);
            for (int l = 0; l < 32; ++l)
                lane[l / 4] += sc * q4k_level(x, j, l) * y[b].qs[32 * j + l];
            summ += mn * (y[b].bsums[2 * j] + y[b].bsums[2 * j + 1]);
        }
        const float d = fp16_to_f32(x.d) * y[b].d;
        for (int m = 0; m < 8; ++m) acc[m] = std::fma(float(lane[m]), d, acc[m]);
        summs = std::fma(float(summ), fp16_to_f32(x.dmin) * -y[b].d, summs);
    }
    return (((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))) +
           summs;
}

int q6k_level(const quant::BlockQ6K &x, int e) {
    const int h = e / 128, quarter = e % 128 / 32, l = e % 32;
    const uint8_t lo = x.ql[64 * h + 32 * (quarter % 2) + l];
    const uint8_t hi = x.qh[32 * h + l];
    return (quarter < 2 ? lo & 0x0F : lo >> 4) | (((hi >> (2 * quarter)) & 3) << 4);  // q + 32
}

// ggml's AVX2 Q2_K and Q6_K order: per block, lane m holds elements 32c + 4m .. 32c + 4m + 3 of
// every 32-element chunk c, level * q8 times the chunk's sub-block scale. Q6_K's levels are
// q + 32 and lane m starts at -32 * scale * bsum of sub-blocks 2m and 2m + 1; Q2_K's mins times
// the bsums of those sub-blocks enter lane m's float accumulator first, times -dmin * d_a. Each
// lane has its own float accumulator, added as hsum_float_8.
template <typename Block>
float lanes_expected(const std::byte *row, const std::byte *column, int64_t K) {
    constexpr bool kQ2 = std::is_same_v<Block, quant::BlockQ2K>;
    const auto *y = reinterpret_cast<const quant::BlockQ8K *>(column);
    float acc[8] = {};
    for (int64_t b = 0; b < K / 256; ++b) {
        const auto &x = reinterpret_cast<const Block *>(row)[b];
        auto scale = [&](int sub) {
            if constexpr (kQ2)
                return quant_test::q2_k_scale(x, sub);
            else
                return int(x.scales[sub]);
        };
        int32_t lane[8];
        for (int m = 0; m < 8; ++m) {
            if constexpr (kQ2) {
                const int32_t mins = quant_test::q2_k_min(x, 2 * m) * y[b].bsums[2 * m] +
                                     quant_test::q2_k_min(x, 2 * m + 1) * y[b].bsums[2 * m + 1];
                acc[m] = std::fma(float(mins), fp16_to_f32(x.dmin) * -y[b].d, acc[m]);
                lane[m] = 0;
            } else {
                lane[m] = -32 * (scale(2 * m) * y[b].bsums[2 * m] +
                                 scale(2 * m + 1) * y[b].bsums[2 * m + 1]);
            }
        }
        for (int e = 0; e < 256; ++e) {
            int level;
            if constexpr (kQ2) {
                level = quant_test::q2_k_level(x, e);
            } else {
                level = q6k_level(x, e);
            }
            lane[e % 32 / 4] += scale(e / 16) * level * y[b].qs[e];
        }
        const float d = fp16_to_f32(x.d) * y[b].d;
        for (int m = 0; m < 8; ++m) acc[m] = std::fma(float(lane[m]), d, acc[m]);
    }
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

float expected_element(DType type, const std::byte *row, const float *x, int64_t K) {
    const std::vector<std::byte> column = quantize_column(type, x, K);
    if (type == DType::Q2_K) return lanes_expected<quant::BlockQ2K>(row, column.data(), K);
    if (type == DType::Q3_K) return q3k_expected(row, column.data(), K);
    if (type == DType::Q4_K) return q4k_expected(row, column.data(), K);
    if (type == DType::Q5_K) return q5k_expected(row, column.data(), K);
    if (type == DType::Q6_K) return lanes_expected<quant::BlockQ6K>(row, column.data(), K);
    if (type == DType::MXFP4 || type == DType::IQ4_NL)
        return lut4_expected(type, row, column.data(), K);
    if (type == DType::IQ4_XS) return iq4xs_expected(row, column.data(), K);
    return legacy_expected(type, row, column.data(), K);
}

// K: legacy blocks not filling a 256 super-block; K-quants two super-blocks.
int64_t test_depth(DType type) {
    return traits(type).block_size == 256 ? 512 : 768;
}

class RepackedMatMul : public ::testing::TestWithParam<DType> {
  protected:
    void SetUp() override {
        if (!cpu::has_repacked_layout(GetParam())) {
            GTEST_SKIP() << "this build has no integer kernels";
        }
    }
};

TEST_P(RepackedMatMul, LayoutRoundTrips) {
    const DType type = GetParam();
    RepackedWeights w(type, test_depth(type), 32, 1, 7);
    ASSERT_TRUE(cpu::is_repacked(w.a));
    EXPECT_NE(std::memcmp(w.a->data, w.file_bytes.data(), w.file_bytes.size()), 0);
    std::vector<std::byte> back(w.file_bytes.size());
    w.buffer->get_tensor(w.a, back.data(), 0, back.size());
    EXPECT_EQ(back, w.file_bytes);
    EXPECT_THROW(w.buffer->set_tensor(w.a, w.file_bytes.data(), 0, 16), Error);  // whole only
}

// In either layout: a matrix computed from the file's layout until its repacked copy is made
// gives the same bits before and after.
TEST_P(RepackedMatMul, ExactOrderForEveryBatchAndThreadCount) {
    const DType type = GetParam();
    // M: 7 groups, which one thread's generation reads as two streams of 2 and a last one.
    const int64_t K = test_depth(type), M = 112;
    for (const Layout layout : kLayouts) {
        RepackedWeights w(type, K, M, 1, 1, layout);
        ASSERT_EQ(cpu::is_repacked(w.a), layout == Layout::repacked);
        const std::vector<float> a_f = dequantize(type, w.file_bytes, K * M);
        for (int64_t n : {1, 2, 7, 24, 32, 100}) {
            SCOPED_TRACE(::testing::Message() << layout_name(layout) << " n=" << n);
            Context ctx({.mem_size = 4u << 20});
            Tensor *b = random_f32(ctx, {K, n}, uint32_t(n));
            Tensor *out = mul_mat(ctx, w.a, b);
            const std::vector<float> got = run_graph(ctx, out, 1);
            EXPECT_EQ(got, run_graph(ctx, out, 3));
            double err = 0.0, ref_sq = 0.0;
            for (int64_t j = 0; j < n; ++j) {
                const float *x = static_cast<const float *>(b->data) + j * K;
                const std::vector<float> x_q =
                    dequantize(traits(type).vec_dot_type, quantize_column(type, x, K), K);
                for (int64_t m = 0; m < M; ++m) {
                    const float v = got[size_t(j * M + m)];
                    ASSERT_EQ(v, expected_element(type, w.row(m), x, K)) << "m=" << m << " j=" << j;
                    double ref = 0.0;
                    for (int64_t k = 0; k < K; ++k)
                        ref += double(a_f[size_t(m * K + k)]) * x_q[size_t(k)];
                    err += (v - ref) * (v - ref);
                    ref_sq += ref * ref;
                }
            }
            EXPECT_LT(err / ref_sq, 5e-4);
        }
    }
}

TEST_P(RepackedMatMul, ExpertsFromIds) {
    const DType type = GetParam();
    const int64_t K = test_depth(type), M = 32, n_expert = 4, n_used = 2, n_tokens = 9;
    for (const Layout layout : kLayouts) {
        SCOPED_TRACE(layout_name(layout));
        RepackedWeights w(type, K, M, n_expert, 3, layout);
        Context ctx({.mem_size = 4u << 20});
        Tensor *b = random_f32(ctx, {K, n_used, n_tokens}, 4);
        Tensor *ids = ctx.new_tensor(DType::I32, {n_used, n_tokens});
        auto *id = static_cast<int32_t *>(ids->data);
        for (int64_t i = 0; i < n_used * n_tokens; ++i) id[i] = int32_t((i * 3 + 1) % n_expert);
        Tensor *out = mul_mat_id(ctx, w.a, b, ids);
        const std::vector<float> got = run_graph(ctx, out, 2);
        EXPECT_EQ(got, run_graph(ctx, out, 1));
        for (int64_t p = 0; p < n_used * n_tokens; ++p) {
            const float *x = static_cast<const float *>(b->data) + p * K;
            for (int64_t m = 0; m < M; ++m) {
                ASSERT_EQ(got[size_t(p * M + m)], expected_element(type, w.row(m, id[p]), x, K))
                    << "pair " << p << " m=" << m;
            }
        }
    }
}

// Products of several weights with one input, adjacent in the graph (a layer's Q, K and V), run
// as one step with the columns quantized once; each element is still the order above. A product
// of another input, or of weights of another type, is a step of its own.
TEST_P(RepackedMatMul, ProductsOfOneInputRunAsOneStep) {
    const DType type = GetParam();
    const int64_t K = test_depth(type);
    RepackedWeights q(type, K, 48, 1, 11), k(type, K, 16, 1, 12), v(type, K, 32, 1, 13);
    RepackedWeights other(type, K, 16, 1, 14);
    for (int64_t n : {1, 5}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n);
        Context ctx({.mem_size = 4u << 20});
        Tensor *x = random_f32(ctx, {K, n}, uint32_t(20 + n));
        Tensor *y = random_f32(ctx, {K, n}, uint32_t(30 + n));
        Graph *graph = new_graph(ctx);
        const RepackedWeights *weights[] = {&q, &k, &v, &other};
        std::vector<Tensor *> outs;
        for (const RepackedWeights *w : weights) {
            outs.push_back(mul_mat(ctx, w->a, w == &other ? y : x));
            build_forward_expand(graph, outs.back());
        }
        for (int threads : {1, 3}) {
            run_expecting_steps(*graph, threads, 4, 2);
            for (size_t i = 0; i < outs.size(); ++i) {
                const Tensor *b = i == 3 ? y : x;
                const int64_t M = outs[i]->ne[0];
                for (int64_t j = 0; j < n; ++j) {
                    const float *col = static_cast<const float *>(b->data) + j * K;
                    for (int64_t m = 0; m < M; ++m) {
                        ASSERT_EQ(static_cast<const float *>(outs[i]->data)[j * M + m],
                                  expected_element(type, weights[i]->row(m), col, K))
                            << "product " << i << " m=" << m << " j=" << j;
                    }
                }
            }
        }
    }
}

// Only a matrix product can read the interleaved bytes; anything else is refused up front.
TEST_P(RepackedMatMul, OtherReadersAreRefused) {
    const DType type = GetParam();
    RepackedWeights w(type, test_depth(type), 16, 1, 5);
    Context ctx({.mem_size = 1u << 20});
    Tensor *idx = ctx.new_tensor(DType::I32, {1});
    *static_cast<int32_t *>(idx->data) = 0;
    Graph *graph = new_graph(ctx);
    build_forward_expand(graph, get_rows(ctx, w.a, idx));
    try {
        CpuBackend(1).graph_compute(*graph);
        FAIL() << "get_rows read repacked weights";
    } catch (const Error &e) {
        EXPECT_NE(std::string(e.what()).find("no kernel"), std::string::npos) << e.what();
    }
}

// A matrix whose rows do not fill groups of 16 stays in the file's layout and multiplies as usual
// (per row, in llama.cpp's order); so does one that could be repacked but is not headed there
// (`--no-repack`).
TEST_P(RepackedMatMul, UngroupableRowsStayPlain) {
    const DType type = GetParam();
    const int64_t K = test_depth(type);
    for (const int64_t M : {20, 32}) {
        SCOPED_TRACE(::testing::Message() << "M=" << M);
        RepackedWeights w(type, K, M, 1, 9, M % 16 == 0 ? Layout::file : Layout::repacked);
        w.a->flags &= ~uint32_t(kFlagRepackPending);
        EXPECT_FALSE(cpu::is_repacked(w.a));
        EXPECT_EQ(std::memcmp(w.a->data, w.file_bytes.data(), w.file_bytes.size()), 0);
        Context ctx({.mem_size = 1u << 20});
        Tensor *b = random_f32(ctx, {K, 3}, 2);
        const std::vector<float> got = run_graph(ctx, mul_mat(ctx, w.a, b), 2);
        const DTypeTraits &t = traits(type);
        for (int64_t m = 0; m < M; ++m) {
            const std::vector<std::byte> q =
                quantize_column(type, static_cast<const float *>(b->data) + K, K);
            EXPECT_EQ(got[size_t(M + m)], t.vec_dot(K, w.row(m), q.data())) << m;
        }
    }
}

// MXFP4's scales over the E8M0 range the products stay finite in, the subnormal 2^-128 and
// 2^-127 (e = 0, 1) included, which the AVX2 tile builds from the exponent's bits.
TEST(RepackedMxfp4, EveryExponentScalesAsTheReference) {
    if (!cpu::has_repacked_layout(DType::MXFP4)) GTEST_SKIP() << "no integer kernels";
    constexpr int64_t K = 32 * 16, M = 16;  // 256 blocks: exponents 0 .. 199 and again
    std::vector<std::byte> bytes(size_t(M) * row_size(DType::MXFP4, K));
    uint32_t state = 12345;
    for (size_t i = 0; i < bytes.size(); ++i) {
        state = state * 1664525u + 1013904223u;
        bytes[i] = std::byte(state >> 24);
    }
    for (size_t b = 0; b < bytes.size() / sizeof(quant::BlockMXFP4); ++b) {
        bytes[b * sizeof(quant::BlockMXFP4)] = std::byte(b % 200);
    }
    const RepackedWeights w(DType::MXFP4, K, M, bytes);
    for (int64_t n : {1, 8}) {  // the generation tile and a wide one
        Context ctx({.mem_size = 4u << 20});
        Tensor *b = random_f32(ctx, {K, n}, uint32_t(n + 40));
        const std::vector<float> got = run_graph(ctx, mul_mat(ctx, w.a, b), 1);
        for (int64_t j = 0; j < n; ++j) {
            const float *x = static_cast<const float *>(b->data) + j * K;
            for (int64_t m = 0; m < M; ++m) {
                ASSERT_EQ(got[size_t(j * M + m)], expected_element(DType::MXFP4, w.row(m), x, K))
                    << "n=" << n << " m=" << m << " j=" << j;
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Types, RepackedMatMul, ::testing::ValuesIn(kRepackedTypes),
                         [](const auto &info) { return std::string(dtype_name(info.param)); });

}  // namespace
}  // namespace loom
