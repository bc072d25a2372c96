#pragma once
// Encoder GGUF files (BERT and its relatives) with random weights (fixed seed) and a real
// vocabulary copied from another GGUF file (every tokenizer.* key, e.g. llama.cpp's
// ggml-vocab-bert-bge.gguf): the shapes, heads and architectures the shared bert fixture lacks,
// for parity tests against llama.cpp and for benchmarks (`loom gguf synth --arch bert ...`).
// Here rather than in engine/model/ beside synthetic_llama.h: it states each encoder's tensors as
// llama.cpp's converters write them, facts of those architectures.
#include <cstdint>
#include <string>

#include "engine/model/hparams.h"
#include "engine/model/synthetic_llama.h"
#include "loom/tensor.h"

namespace loom::engine {

struct EncoderShape {
    // bert (learned positions, GELU), nomic-bert (fused QKV, rotary, SwiGLU) or jina-bert-v2
    // (ALiBi, Q/K LayerNorms, GEGLU in one merged ffn_up).
    std::string arch = "bert";
    int64_t n_embd = 384;
    int64_t n_layer = 12;
    int64_t n_head = 12;
    int64_t n_ff = 1536;
    int64_t n_ctx = 512;
    Pooling pooling = Pooling::mean;
    // A reranker's classifier head (cls, cls.output) with this many outputs; 0: none. A bert file
    // only; more than one output also writes the labels key.
    int64_t n_cls_out = 0;
    float stddev = 0.02f;  // of the weights; norms are N(1, stddev), biases N(0, stddev)
};

// Writes the model to `path`, 2-D weights in `type`, norms, biases and position tables F32.
// loom::Error for an architecture it does not write or a vocabulary file without tokens.
void write_synthetic_encoder(const std::string &path, const EncoderShape &shape, DType type,
                             const std::string &vocab_path, uint32_t seed = 1);

// The writer `arch` names: write_synthetic_llama (`llama`: its shape, no vocabulary file) or
// write_synthetic_encoder (`encoder`'s shape, its arch set to `arch`). loom::Error for another.
void write_synthetic_model(const std::string &path, const std::string &arch,
                           const LlamaShape &llama, EncoderShape encoder, DType type,
                           const std::string &vocab_path, uint32_t seed);

}  // namespace loom::engine
