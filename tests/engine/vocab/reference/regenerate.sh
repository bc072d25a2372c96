#!/usr/bin/env bash
# Rebuilds the reference ids in this folder with llama.cpp itself (README.md): compiles a small
# driver against llama.cpp's headers (LLAMA_SRC) and its prebuilt library (LLAMA_LIB), then runs
# it on every vocabulary. Not part of the test suite; needs both present.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VOCAB=$HERE/../../../../../shared/models/vocab
LLAMA_SRC=${LLAMA_SRC:-$HOME/.cache/llama-src/llama.cpp}
LLAMA_LIB=${LLAMA_LIB:-$HOME/.cache/llamacpp-ref/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cat >"$WORK/driver.cpp" <<'EOF'
// driver VOCAB TEXTS ADD_SPECIAL PARSE_SPECIAL [detokenize]: one line of ids per text of TEXTS
// (split at "\n__ggml_vocab_test__\n"), tokenized by llama.cpp with the vocabulary alone; with
// "detokenize", those ids detokenized again (special tokens kept and rendered), in hex.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) return 2;
    const bool detokenize = argc == 6;
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    llama_model_params params = llama_model_default_params();
    params.vocab_only = true;
    llama_model *model = llama_model_load_from_file(argv[1], params);
    if (model == nullptr) return 1;
    const llama_vocab *vocab = llama_model_get_vocab(model);
    std::stringstream in;
    in << std::ifstream(argv[2], std::ios::binary).rdbuf();
    const std::string all = in.str(), separator = "\n__ggml_vocab_test__\n";
    for (size_t start = 0; start < all.size();) {
        const size_t end = all.find(separator, start);
        const std::string text = all.substr(start, end == std::string::npos ? end : end - start);
        std::vector<llama_token> ids(text.size() * 4 + 16);
        const int n = llama_tokenize(vocab, text.data(), int(text.size()), ids.data(),
                                     int(ids.size()), atoi(argv[3]) != 0, atoi(argv[4]) != 0);
        if (detokenize) {
            std::vector<char> bytes(text.size() * 8 + 64);
            const int m = llama_detokenize(vocab, ids.data(), n, bytes.data(), int(bytes.size()),
                                           false, true);
            for (int i = 0; i < m; ++i) printf("%02x", (unsigned char)bytes[i]);
        } else {
            for (int i = 0; i < n; ++i) printf(i ? " %d" : "%d", ids[i]);
        }
        printf("\n");
        if (end == std::string::npos) break;
        start = end + separator.size();
    }
    llama_model_free(model);
}
EOF
g++ -std=c++17 -O1 -I"$LLAMA_SRC/include" -I"$LLAMA_SRC/ggml/include" "$WORK/driver.cpp" \
    -o "$WORK/driver" -L"$LLAMA_LIB" -l:libllama.v0.5.0.so -Wl,-rpath,"$LLAMA_LIB"
for name in aquila baichuan gpt-neox nomic-bert-moe; do
    "$WORK/driver" "$VOCAB/ggml-vocab-$name.gguf" "$VOCAB/ggml-vocab-qwen35.gguf.inp" 0 0 >"$HERE/$name.out"
done
for gguf in "$VOCAB"/ggml-vocab-*.gguf; do
    name=$(basename "$gguf" .gguf)
    name=${name#ggml-vocab-}
    "$WORK/driver" "$gguf" "$VOCAB/ggml-vocab-qwen35.gguf.inp" 0 0 detokenize >"$HERE/$name.detokenized"
    for mode in 01 11 10; do
        "$WORK/driver" "$gguf" "$HERE/special.inp" "${mode:0:1}" "${mode:1:1}" >"$HERE/$name.special-$mode.out"
    done
done
