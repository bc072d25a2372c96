#pragma once
// Llama-shaped GGUF files with random weights (fixed seed), written with Loom's own GGUF writer:
// models of the shapes and block formats the shared fixtures lack, for benchmarks, and the
// model `make run` falls back to when no real one is at hand (`loom gguf synth`).
#include <cstdint>
#include <string>

#include "loom/tensor.h"

namespace loom::engine {

struct LlamaShape {
    int64_t n_vocab = 32000;
    int64_t n_embd = 2048;
    int64_t n_layer = 16;
    int64_t n_head = 32;
    int64_t n_head_kv = 8;
    int64_t n_ff = 5632;
    int64_t n_ctx = 4096;
};

// Writes a llama model of `shape` to `path`: 2-D weights in `type` (token embeddings and output
// too), norms F32, a synthetic SentencePiece vocabulary ("<unk>", "<s>", "</s>", 256 byte tokens,
// then "▁t<i>" pieces). Values are N(0, 0.02) from `seed`.
void write_synthetic_llama(const std::string &path, const LlamaShape &shape, DType type,
                           uint32_t seed = 1);

}  // namespace loom::engine
