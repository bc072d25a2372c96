#!/usr/bin/env bash
# Rebuilds the llama.cpp reference data in this folder (README.md): compiles a small driver (its
# own code, below) against ggml's headers (LLAMA_SRC) and llama.cpp's prebuilt libraries
# (LLAMA_LIB: libggml-base and the AVX2 "haswell" CPU variant the shared fixtures were made
# with), then runs it here. Not part of the test suite; needs both present.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
LLAMA_SRC=${LLAMA_SRC:-$HOME/.cache/llama-src/llama.cpp}
LLAMA_LIB=${LLAMA_LIB:-$HOME/.cache/llamacpp-ref/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/driver.cpp" <<'EOF'
// driver OUT_DIR: for MXFP4, IQ4_NL and IQ4_XS, the bytes llama.cpp's quantizer writes for fixed
// inputs, the hashes of their dequantized rows, llama.cpp's dot products and its CPU backend's
// mul_mat / mul_mat_id over them, for the inputs of lut4_inputs.h (which the test includes too).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-cpu.h"
#include "ggml.h"
#include "lut4_inputs.h"

namespace {

using namespace lut4_inputs;  // the same inputs as the test (lut4_inputs.h)

uint64_t fnv1a(const void *p, size_t n) {
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const uint8_t *>(p)[i]) * 1099511628211ull;
    return h;
}
uint32_t bits(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
void write_file(const std::string &path, const void *p, size_t n) {
    FILE *f = fopen(path.c_str(), "wb");
    fwrite(p, 1, n, f);
    fclose(f);
}
void line(FILE *out, const char *key, const std::vector<float> &v) {
    fprintf(out, "%s", key);
    for (float f : v) fprintf(out, " %08x", bits(f));
    fprintf(out, "\n");
}

std::vector<uint8_t> quantize(ggml_type type, const std::vector<float> &x, int64_t rows) {
    std::vector<uint8_t> q(ggml_row_size(type, K) * size_t(rows));
    ggml_quantize_chunk(type, x.data(), q.data(), 0, rows, K, nullptr);
    return q;
}

// One CPU-backend product: a [K, m, n_mat] of `type` (repacked when `repack`) times b F32
// [K, b1, b2], with ids [n_used, b2] for mul_mat_id. Returns dst as floats.
std::vector<float> product(ggml_backend_t backend, ggml_backend_buffer_type_t weight_buft,
                           ggml_type type, const std::vector<uint8_t> &a_bytes, int64_t m,
                           int64_t n_mat, const float *b_data, int64_t b1, int64_t b2,
                           const std::vector<int32_t> &ids_data) {
    ggml_init_params wp = {16 * ggml_tensor_overhead(), nullptr, true};
    ggml_context *wctx = ggml_init(wp);
    ggml_tensor *a = n_mat == 1 ? ggml_new_tensor_2d(wctx, type, K, m)
                                : ggml_new_tensor_3d(wctx, type, K, m, n_mat);
    ggml_backend_buffer_t wbuf = ggml_backend_alloc_ctx_tensors_from_buft(wctx, weight_buft);
    ggml_backend_tensor_set(a, a_bytes.data(), 0, ggml_nbytes(a));

    ggml_init_params p = {64 * ggml_tensor_overhead() + ggml_graph_overhead(), nullptr, true};
    ggml_context *ctx = ggml_init(p);
    ggml_tensor *b = ggml_new_tensor_3d(ctx, GGML_TYPE_F32, K, b1, b2);
    ggml_set_input(b);
    ggml_tensor *ids = nullptr, *out;
    if (ids_data.empty()) {
        out = ggml_mul_mat(ctx, a, b);
    } else {
        ids = ggml_new_tensor_2d(ctx, GGML_TYPE_I32, int64_t(ids_data.size()) / b2, b2);
        ggml_set_input(ids);
        out = ggml_mul_mat_id(ctx, a, b, ids);
    }
    ggml_set_output(out);
    ggml_cgraph *gf = ggml_new_graph(ctx);
    ggml_build_forward_expand(gf, out);
    ggml_gallocr_t galloc = ggml_gallocr_new(ggml_backend_cpu_buffer_type());
    ggml_gallocr_alloc_graph(galloc, gf);
    ggml_backend_tensor_set(b, b_data, 0, ggml_nbytes(b));
    if (ids) ggml_backend_tensor_set(ids, ids_data.data(), 0, ggml_nbytes(ids));
    ggml_backend_graph_compute(backend, gf);
    std::vector<float> result(size_t(ggml_nelements(out)));
    ggml_backend_tensor_get(out, result.data(), 0, ggml_nbytes(out));
    ggml_gallocr_free(galloc);
    ggml_free(ctx);
    ggml_backend_buffer_free(wbuf);
    ggml_free(wctx);
    return result;
}

ggml_backend_buffer_type_t repack_buffer_type() {
    ggml_backend_reg_t reg = ggml_backend_cpu_reg();
    auto get_extra = (ggml_backend_buffer_type_t * (*)(ggml_backend_dev_t))
        ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    for (ggml_backend_buffer_type_t *t = get_extra(ggml_backend_reg_dev_get(reg, 0)); *t; ++t) {
        if (std::strcmp(ggml_backend_buft_name(*t), "CPU_REPACK") == 0) return *t;
    }
    return nullptr;
}

}  // namespace

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    const std::string dir = argv[1];
    ggml_backend_t backend = ggml_backend_cpu_init();
    ggml_backend_cpu_set_n_threads(backend, 2);
    ggml_backend_buffer_type_t repack = repack_buffer_type();
    if (repack == nullptr) return 1;

    const std::vector<float> w = weight_rows(), edge = edge_rows(), act = activation_rows();
    for (ggml_type act_type : {GGML_TYPE_Q8_0, GGML_TYPE_Q8_K}) {
        const size_t row = ggml_row_size(act_type, K);
        std::vector<uint8_t> q(row * kActRows);
        for (int64_t r = 0; r < kActRows; ++r) {
            ggml_get_type_traits_cpu(act_type)->from_float(act.data() + r * K, q.data() + r * row, K);
        }
        write_file(dir + "/activations." + ggml_type_name(act_type) + ".bin", q.data(), q.size());
    }

    for (ggml_type type : {GGML_TYPE_MXFP4, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS}) {
        const std::string name = ggml_type_name(type);
        const std::vector<uint8_t> qw = quantize(type, w, kWeightRows);
        const std::vector<uint8_t> qe = quantize(type, edge, kEdgeRows);
        write_file(dir + "/" + name + ".weights.bin", qw.data(), qw.size());
        write_file(dir + "/" + name + ".edge.bin", qe.data(), qe.size());
        FILE *out = fopen((dir + "/" + name + ".txt").c_str(), "w");
        const size_t row = ggml_row_size(type, K);
        std::vector<float> y(K);
        for (const auto &[key, q, rows] : {std::tuple{"dequant_weights", &qw, kWeightRows},
                                          std::tuple{"dequant_edge", &qe, kEdgeRows}}) {
            fprintf(out, "%s", key);
            for (int64_t r = 0; r < rows; ++r) {
                ggml_get_type_traits(type)->to_float(q->data() + r * row, y.data(), K);
                fprintf(out, " %016llx", (unsigned long long)fnv1a(y.data(), K * sizeof(float)));
            }
            fprintf(out, "\n");
        }

        // Dot products of weight rows 0-7 with activation rows 0-3, whole and a prefix (an odd
        // number of 32-blocks, or 3 super-blocks), element r * 4 + c.
        const ggml_type_traits_cpu *cpu = ggml_get_type_traits_cpu(type);
        const size_t act_row = ggml_row_size(cpu->vec_dot_type, K);
        std::vector<uint8_t> qa(act_row * kActRows);
        for (int64_t r = 0; r < kActRows; ++r) {
            ggml_get_type_traits_cpu(cpu->vec_dot_type)
                ->from_float(act.data() + r * K, qa.data() + r * act_row, K);
        }
        const int64_t prefix = ggml_blck_size(type) == 256 ? 768 : 992;
        for (int64_t n : {K, prefix}) {
            std::vector<float> dots;
            for (int64_t r = 0; r < 8; ++r) {
                for (int64_t c = 0; c < 4; ++c) {
                    float s;
                    cpu->vec_dot(int(n), &s, 0, qw.data() + r * row, 0, qa.data() + c * act_row, 0,
                                 1);
                    dots.push_back(s);
                }
            }
            line(out, n == K ? "dot_full" : "dot_prefix", dots);
        }

        // llama.cpp's CPU backend: weights repacked where it repacks them (MXFP4, IQ4_NL: the
        // AVX2 8x8 kernels), in plain memory otherwise (IQ4_XS: vec_dot).
        const bool repacked = type != GGML_TYPE_IQ4_XS;
        fprintf(out, "repacked %d\n", int(repacked));
        ggml_backend_buffer_type_t buft = repacked ? repack : ggml_backend_cpu_buffer_type();
        for (int64_t n : {1, 5, 8}) {
            const std::string key = "mul_mat_n" + std::to_string(n);
            line(out, key.c_str(), product(backend, buft, type, qw, kWeightRows, 1, act.data(), n, 1, {}));
        }
        // Experts [K, 8, 4]; token t uses experts (3t + 1) % 4 and (3t + 3) % 4.
        std::vector<int32_t> ids;
        for (int t = 0; t < 4; ++t) {
            for (int s = 0; s < 2; ++s) ids.push_back((3 * t + 2 * s + 1) % 4);
        }
        line(out, "mul_mat_id", product(backend, buft, type, qw, 8, 4, act.data(), 2, 4, ids));
        line(out, "mul_mat_id_shared", product(backend, buft, type, qw, 8, 4, act.data(), 1, 4, ids));
        fclose(out);
    }
    ggml_backend_free(backend);
    return 0;
}
EOF
g++ -std=c++17 -O1 -I"$LLAMA_SRC/ggml/include" -I"$HERE" "$WORK/driver.cpp" -o "$WORK/driver" \
    -L"$LLAMA_LIB" -l:libggml-base.so -l:libggml-cpu-haswell.so -Wl,-rpath,"$LLAMA_LIB"
"$WORK/driver" "$HERE"
