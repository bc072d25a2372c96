#include "engine/models/synthetic_encoders.h"

#include <fmt/format.h>

#include <variant>
#include <vector>

#include "engine/model/synthetic_weights.h"
#include "loom/error.h"
#include "loom/gguf.h"

namespace loom::engine {
namespace {

// The vocabulary's keys, copied as they are; returns its token count.
int64_t copy_vocab(gguf::Writer &w, const std::string &vocab_path) {
    const gguf::File vocab(vocab_path);
    int64_t n_vocab = 0;
    for (const auto &entry : vocab.metadata().entries()) {
        if (!entry.key.starts_with("tokenizer.")) continue;
        w.set(entry.key, entry.value);
        if (const auto *tokens = std::get_if<gguf::Array>(&entry.value);
            tokens != nullptr && entry.key == "tokenizer.ggml.tokens") {
            n_vocab = int64_t(tokens->size());
        }
    }
    if (n_vocab == 0) fail("gguf", "'{}' has no tokenizer.ggml.tokens to copy", vocab_path);
    return n_vocab;
}

}  // namespace

void write_synthetic_encoder(const std::string &path, const EncoderShape &s, DType type,
                             const std::string &vocab_path, uint32_t seed) {
    const bool bert = s.arch == "bert", nomic = s.arch == "nomic-bert",
               jina = s.arch == "jina-bert-v2";
    if (!bert && !nomic && !jina) {
        fail("gguf", "synth writes bert, nomic-bert or jina-bert-v2 encoders, not '{}'", s.arch);
    }
    if (s.n_cls_out > 0 && !bert) fail("gguf", "a classifier head is written for bert only");
    if (s.n_head <= 0 || s.n_embd % s.n_head != 0) {
        fail("gguf", "n_embd {} is not a multiple of n_head {}", s.n_embd, s.n_head);
    }
    gguf::Writer w;
    auto key = [&](const char *k) { return fmt::format("{}.{}", s.arch, k); };
    w.set("general.architecture", s.arch);
    w.set("general.name", fmt::format("synthetic {}", s.arch));
    w.set(key("context_length"), uint32_t(s.n_ctx));
    w.set(key("embedding_length"), uint32_t(s.n_embd));
    w.set(key("block_count"), uint32_t(s.n_layer));
    w.set(key("feed_forward_length"), uint32_t(s.n_ff));
    w.set(key("attention.head_count"), uint32_t(s.n_head));
    w.set(key("attention.head_count_kv"), uint32_t(s.n_head));
    w.set(key("attention.layer_norm_epsilon"), 1e-12f);
    w.set(key("attention.causal"), false);
    w.set(key("pooling_type"), uint32_t(s.pooling));
    w.set(key("token_type_count"), uint32_t(2));
    if (nomic) w.set(key("rope.freq_base"), 1000.0f);  // nomic-embed's rotary base
    if (s.n_cls_out > 1) {
        std::vector<std::string> labels;
        for (int64_t i = 0; i < s.n_cls_out; ++i) labels.push_back(fmt::format("LABEL_{}", i));
        w.set(key("classifier.output_labels"), gguf::Array{std::move(labels)});
    }
    const int64_t n_vocab = copy_vocab(w, vocab_path);

    SyntheticWeights store(seed);
    const int64_t n = s.n_embd;
    const float sd = s.stddev;
    auto matrix = [&](const std::string &name, int64_t ne0, int64_t ne1) {
        store.add(w, name, type, ne0, ne1, 0.0f, sd);
    };
    auto vector = [&](const std::string &name, int64_t ne0, float mean) {
        store.add(w, name, DType::F32, ne0, 1, mean, sd);
    };
    auto layer_norm = [&](const std::string &name, int64_t ne0) {
        vector(name + ".weight", ne0, 1.0f);
        vector(name + ".bias", ne0, 0.0f);
    };
    matrix("token_embd.weight", n, n_vocab);
    store.add(w, "token_types.weight", DType::F32, n, 2, 0.0f, sd);
    if (bert) store.add(w, "position_embd.weight", DType::F32, n, s.n_ctx, 0.0f, sd);
    layer_norm("token_embd_norm", n);
    for (int64_t il = 0; il < s.n_layer; ++il) {
        auto name = [il](const char *t) { return fmt::format("blk.{}.{}", il, t); };
        if (nomic) {
            matrix(name("attn_qkv.weight"), n, 3 * n);
            matrix(name("attn_output.weight"), n, n);
        } else {
            for (const char *proj : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
                matrix(name(proj) + ".weight", n, n);
                vector(name(proj) + ".bias", n, 0.0f);
            }
        }
        if (jina) {
            layer_norm(name("attn_q_norm"), n);
            layer_norm(name("attn_k_norm"), n);
        }
        layer_norm(name("attn_output_norm"), n);
        if (bert) {
            matrix(name("ffn_up.weight"), n, s.n_ff);
            vector(name("ffn_up.bias"), s.n_ff, 0.0f);
        } else if (nomic) {
            matrix(name("ffn_up.weight"), n, s.n_ff);
            matrix(name("ffn_gate.weight"), n, s.n_ff);
        } else {
            matrix(name("ffn_up.weight"), n, 2 * s.n_ff);  // the gate's rows, then the up ones
        }
        matrix(name("ffn_down.weight"), s.n_ff, n);
        if (!nomic) vector(name("ffn_down.bias"), n, 0.0f);
        layer_norm(name("layer_output_norm"), n);
    }
    if (s.n_cls_out > 0) {
        matrix("cls.weight", n, n);
        vector("cls.bias", n, 0.0f);
        matrix("cls.output.weight", n, s.n_cls_out);
        vector("cls.output.bias", s.n_cls_out, 0.0f);
    }
    w.write(path);
}

void write_synthetic_model(const std::string &path, const std::string &arch,
                           const LlamaShape &llama, EncoderShape encoder, DType type,
                           const std::string &vocab_path, uint32_t seed) {
    if (arch == "llama") return write_synthetic_llama(path, llama, type, seed);
    if (vocab_path.empty())
        fail("gguf", "an encoder takes its vocabulary from a GGUF file (--vocab)");
    encoder.arch = arch;
    write_synthetic_encoder(path, encoder, type, vocab_path, seed);
}

}  // namespace loom::engine
