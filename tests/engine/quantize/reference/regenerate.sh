#!/usr/bin/env bash
# Rebuilds the llama-quantize manifests in this folder (README.md). llama-quantize is not among
# llama.cpp's prebuilt libraries, so it is built from the source tree (LLAMA_SRC) into a cache
# folder outside the repository (LLAMA_BUILD) the first time; a small driver (its own code, below,
# against ggml's gguf API in the prebuilt LLAMA_LIB) then lists each output file's tensors: name,
# type, shape, offset and a hash of the data. Not part of the test suite.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
FIXTURES=$HERE/../../../../../shared/fixtures
LLAMA_SRC=${LLAMA_SRC:-$HOME/.cache/llama-src/llama.cpp}
LLAMA_LIB=${LLAMA_LIB:-$HOME/.cache/llamacpp-ref/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}
LLAMA_BUILD=${LLAMA_BUILD:-$HOME/.cache/llama-build}
if [ ! -x "$LLAMA_BUILD/bin/llama-quantize" ]; then
    cmake -S "$LLAMA_SRC" -B "$LLAMA_BUILD" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
        -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF
    cmake --build "$LLAMA_BUILD" --target llama-quantize -j2
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/manifest.cpp" <<'EOF'
// manifest FILE: general.file_type, the data section's offset, then one line per tensor in file
// order: name, type, ne[0..3], offset in the data section, FNV-1a 64 of its bytes.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "ggml.h"
#include "gguf.h"

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    ggml_context *meta = nullptr;
    gguf_init_params params = {true, &meta};
    gguf_context *ctx = gguf_init_from_file(argv[1], params);
    if (ctx == nullptr) return 1;
    printf("file_type %u\n", gguf_get_val_u32(ctx, gguf_find_key(ctx, "general.file_type")));
    const size_t data = gguf_get_data_offset(ctx);
    printf("data_offset %zu\n", data);
    FILE *f = fopen(argv[1], "rb");
    for (int64_t i = 0; i < gguf_get_n_tensors(ctx); ++i) {
        const char *name = gguf_get_tensor_name(ctx, i);
        const ggml_tensor *t = ggml_get_tensor(meta, name);
        const size_t offset = gguf_get_tensor_offset(ctx, i), size = gguf_get_tensor_size(ctx, i);
        std::vector<uint8_t> bytes(size);
        fseek(f, long(data + offset), SEEK_SET);
        if (fread(bytes.data(), 1, size, f) != size) return 1;
        uint64_t h = 1469598103934665603ull;
        for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
        printf("tensor %s %s %lld %lld %lld %lld %zu %016llx\n", name,
               ggml_type_name(gguf_get_tensor_type(ctx, i)), (long long)t->ne[0],
               (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3], offset,
               (unsigned long long)h);
    }
    fclose(f);
    gguf_free(ctx);
    ggml_free(meta);
}
EOF
g++ -std=c++17 -O1 -I"$LLAMA_SRC/ggml/include" "$WORK/manifest.cpp" -o "$WORK/manifest" \
    -L"$LLAMA_LIB" -l:libggml-base.so -Wl,-rpath,"$LLAMA_LIB"
# fixture file type [--pure]: llama-quantize's output listed as fixture.type[.pure].manifest
while read -r fixture type pure; do
    "$LLAMA_BUILD/bin/llama-quantize" $pure "$FIXTURES/$fixture/model.gguf" "$WORK/out.gguf" \
        "$type" 2 >"$WORK/log" 2>&1 || { cat "$WORK/log"; exit 1; }
    "$WORK/manifest" "$WORK/out.gguf" >"$HERE/$fixture.$type${pure:+.pure}.manifest"
done <<'CASES'
llama-q-f32-source IQ4_NL
llama-q-f32-source IQ4_XS
llama-q-f32-source IQ4_XS --pure
llama-q-f32-source MXFP4_MOE --pure
llama-moe MXFP4_MOE
llama-moe IQ4_XS
qwen2moe MXFP4_MOE
CASES
